/// LuaDispatch's version, written here only (`luadispatch -v` prints it with the Swift compiler
/// that built the binary).
enum Version {
    static let luaDispatch = "0.1.0"

    /// The compiler's version, known when this file is compiled (`#if compiler` tests only
    /// lower bounds: the highest one that holds).
    static let swift: String = {
        #if compiler(>=7.0)
        return "7.0 or later"
        #elseif compiler(>=6.5)
        return "6.5"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }()

    /// The line `-v` prints before Lua's banner.
    static var line: String { "LuaDispatch \(luaDispatch)  built with Swift \(swift)" }
}
