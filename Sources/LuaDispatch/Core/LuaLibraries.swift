/// The standard libraries an interpreter opens.
public struct LuaLibraries: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let base = LuaLibraries(rawValue: 1 << 0)
    public static let package = LuaLibraries(rawValue: 1 << 1)
    public static let coroutine = LuaLibraries(rawValue: 1 << 2)
    public static let table = LuaLibraries(rawValue: 1 << 3)
    public static let io = LuaLibraries(rawValue: 1 << 4)
    public static let os = LuaLibraries(rawValue: 1 << 5)
    public static let string = LuaLibraries(rawValue: 1 << 6)
    public static let math = LuaLibraries(rawValue: 1 << 7)
    public static let utf8 = LuaLibraries(rawValue: 1 << 8)
    public static let debug = LuaLibraries(rawValue: 1 << 9)

    /// Every standard library.
    public static let all: LuaLibraries = [.base, .package, .coroutine, .table, .io, .os, .string, .math, .utf8, .debug]
    /// No file, process or debug access: base, package, coroutine, table, string, math, utf8.
    public static let safe: LuaLibraries = [.base, .package, .coroutine, .table, .string, .math, .utf8]
}
