/// Why a value could not cross between Lua and Swift, and where in the value: `path` is written
/// as in Lua (`servers[2].port`, indexes from 1), empty for the value itself.
public struct LuaConversionError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, in Lua's words: `number expected, got string`.
    public let message: String
    /// Where: `servers[2].port`; empty when it is the value itself.
    public let path: String
    /// For an element of a trailing `LuaVariadic` parameter: how many arguments after the
    /// parameter's own position it is (its `bad argument #n` counts from there).
    var argumentOffset: Int32 = 0

    public init(_ message: String, path: String = "") {
        self.message = message
        self.path = path
    }

    /// `servers[2].port: number expected, got string`, or the message alone.
    public var description: String { path.isEmpty ? message : "\(path): \(message)" }

    /// `expected` expected, got `got` (Lua's wording for a wrong type).
    public static func mismatch(expected: String, got: String) -> LuaConversionError {
        LuaConversionError("\(expected) expected, got \(got)")
    }

    /// The same error, one level down in a table, at string key `key`.
    public func at(key: String) -> LuaConversionError {
        let step = Self.isName(key) ? key : "[\"\(key)\"]"
        if path.isEmpty { return LuaConversionError(message, path: step) }
        return LuaConversionError(message, path: step + (path.hasPrefix("[") ? path : "." + path))
    }

    /// The same error, one level down in a table, at integer key `index`.
    public func at(index: Int) -> LuaConversionError {
        let step = "[\(index)]"
        if path.isEmpty { return LuaConversionError(message, path: step) }
        return LuaConversionError(message, path: step + (path.hasPrefix("[") ? path : "." + path))
    }

    /// Whether `key` can follow a dot in Lua (`t.key`).
    private static func isName(_ key: String) -> Bool {
        guard let first = key.utf8.first, !(48...57).contains(first) else { return false }
        return key.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) || $0 == 95 }
    }
}
