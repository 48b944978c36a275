/// An error raised by Lua code and not caught there, or the end a limit put to a script.
public struct LuaScriptError: Error, CustomStringConvertible, Sendable {
    /// The error message (the error value converted to a string).
    public let message: String
    /// Lua's stack traceback at the point of the error (empty for load errors).
    public let traceback: String
    /// The label of the queue whose block raised it, for errors in asynchronous blocks.
    public let label: String?
    /// What ended the script: an error it raised, or one of the host's limits.
    public let kind: Kind

    /// An error of the script's own, or the end a limit (or `Runtime.interrupt()`) put to it.
    public enum Kind: Int, Sendable {
        /// The script raised an error.
        case error
        /// An allocation went past `Runtime.Limits.memory` and nothing caught the error.
        case memoryLimit
        /// The run or call went past its time limit (`Runtime.Limits.time`, `timeLimit:`).
        case timeLimit
        /// The host called `Runtime.interrupt()`.
        case interrupted
    }

    public init(message: String, traceback: String = "", label: String? = nil, kind: Kind = .error) {
        self.message = message
        self.traceback = traceback
        self.label = label
        self.kind = kind
    }

    public var description: String {
        let origin = label.map { "error in block on queue '\($0)': " } ?? ""
        return traceback.isEmpty ? origin + message : "\(origin)\(message)\n\(traceback)"
    }
}
