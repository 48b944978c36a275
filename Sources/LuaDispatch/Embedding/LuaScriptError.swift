/// An error raised by Lua code and not caught there.
public struct LuaScriptError: Error, CustomStringConvertible, Sendable {
    /// The error message (the error value converted to a string).
    public let message: String
    /// Lua's stack traceback at the point of the error (empty for load errors).
    public let traceback: String
    /// The label of the queue whose block raised it, for errors in asynchronous blocks.
    public let label: String?

    public init(message: String, traceback: String = "", label: String? = nil) {
        self.message = message
        self.traceback = traceback
        self.label = label
    }

    public var description: String {
        let origin = label.map { "error in block on queue '\($0)': " } ?? ""
        return traceback.isEmpty ? origin + message : "\(origin)\(message)\n\(traceback)"
    }
}
