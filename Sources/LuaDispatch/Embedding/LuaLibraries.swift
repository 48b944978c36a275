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
    /// Not a library: keeps of the others only what cannot reach outside the interpreter (see
    /// `Sandbox/` and docs/embedding.md). `io` and `debug` are never opened; `os` keeps
    /// `time`, `clock`, `date` and `difftime`; base loses `dofile` and `loadfile`, and `load`
    /// takes text only; `require` finds Lua modules (text only) on the `package.path` the
    /// interpreter was made with, never C modules; `dispatch` has no descriptors, files,
    /// processes, signals or network. Worker interpreters get the same set.
    public static let restricted = LuaLibraries(rawValue: 1 << 10)

    /// Every standard library.
    public static let all: LuaLibraries = [.base, .package, .coroutine, .table, .io, .os, .string, .math, .utf8, .debug]
    /// No file, process or debug access: base, package, coroutine, table, string, math, utf8.
    /// (`dispatch` is whole, and `require` loads C modules: for scripts you trust.)
    public static let safe: LuaLibraries = [.base, .package, .coroutine, .table, .string, .math, .utf8]
    /// For scripts you do not trust (`luadispatch --sandbox`): base, package, coroutine, table,
    /// os, string, math and utf8, restricted.
    public static let sandbox: LuaLibraries = [.base, .package, .coroutine, .table, .os, .string, .math, .utf8, .restricted]
}
