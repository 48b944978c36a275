import CLua
import CLuaShim
import Dispatch

/// Reads an options table (`{label=, concurrent=, ...}`): every key must be one the function
/// knows, and every value of the expected type, or the error names the function and the key.
struct Options {
    let args: Args
    let index: Int32
    /// Absolute index of the current value while `parse` visits it.
    private(set) var value: Int32 = 0
    private(set) var key = ""

    /// Visits each key of the table at `index` (absent or nil: nothing to visit).
    static func parse(_ a: Args, _ index: Int32, _ visit: (inout Options) throws(LuaError) -> Bool) throws(LuaError) {
        if a.isNoneOrNil(index) { return }
        guard a.type(index) == LUA_TTABLE else { throw a.typeError(index, "table") }
        let L = a.L
        var options = Options(args: a, index: lua_absindex(L, index))
        lua_pushnil(L)
        while lua_next(L, options.index) != 0 {
            guard lua_type(L, -2) == LUA_TSTRING, let key = Lua.string(L, -2) else {
                let t = String(cString: ld_typename(L, -2))
                ld_pop(L, 2)
                throw .argument(options.index, "option names must be strings, got \(t)")
            }
            options.key = key
            options.value = lua_gettop(L)
            let known: Bool
            do { known = try visit(&options) } catch {
                lua_settop(L, options.value - 2)
                throw error
            }
            lua_settop(L, options.value - 1)
            if !known {
                ld_pop(L, 1)
                throw .argument(options.index, "unknown option '\(key)'")
            }
        }
    }

    private func wrong(_ expected: String) -> LuaError {
        .argument(index, "option '\(key)': \(expected) expected, got \(args.typeName(value))")
    }

    var isNil: Bool { lua_type(args.L, value) == LUA_TNIL }

    func bool() throws(LuaError) -> Bool {
        guard lua_type(args.L, value) == LUA_TBOOLEAN else { throw wrong("boolean") }
        return lua_toboolean(args.L, value) != 0
    }

    func string() throws(LuaError) -> String {
        guard lua_type(args.L, value) == LUA_TSTRING else { throw wrong("string") }
        return Lua.string(args.L, value)!
    }

    func number() throws(LuaError) -> Double {
        guard lua_type(args.L, value) == LUA_TNUMBER else { throw wrong("number") }
        return lua_tonumberx(args.L, value, nil)
    }

    func integer() throws(LuaError) -> Int {
        var ok: Int32 = 0
        let v = lua_tointegerx(args.L, value, &ok)
        guard lua_type(args.L, value) == LUA_TNUMBER, ok != 0 else { throw wrong("integer") }
        return Int(v)
    }

    func function() throws(LuaError) -> Int32 {
        guard lua_type(args.L, value) == LUA_TFUNCTION else { throw wrong("function") }
        return value
    }

    func object<T: AnyObject>(_ kind: ObjectKind, as _: T.Type = T.self) throws(LuaError) -> T {
        guard let o: T = args.runtime.objects.check(args.L, value, kind) else { throw wrong(kind.typeName) }
        return o
    }

    func qos() throws(LuaError) -> DispatchQoS {
        let name = try string()
        guard let qos = QoS.parse(name) else {
            throw .argument(index, "option '\(key)': unknown qos '\(name)'")
        }
        return qos
    }

    /// A deadline or timeout: seconds from now, `dispatch.time` or `dispatch.walltime`.
    func deadline() throws(LuaError) -> Deadline {
        guard let d = Deadline.from(args, value) else { throw wrong("number, dispatch.time or dispatch.walltime") }
        return d
    }
}

/// Dispatch's quality-of-service classes by their Lua names.
enum QoS {
    static let names: [(String, DispatchQoS.QoSClass)] = [
        ("user_interactive", .userInteractive), ("user_initiated", .userInitiated), ("default", .default),
        ("utility", .utility), ("background", .background), ("unspecified", .unspecified),
    ]

    static func parse(_ name: String) -> DispatchQoS? {
        switch name {
        case "user_interactive": .userInteractive
        case "user_initiated": .userInitiated
        case "default": .default
        case "utility": .utility
        case "background": .background
        case "unspecified": .unspecified
        default: nil
        }
    }

    static func parseClass(_ name: String) -> DispatchQoS.QoSClass? {
        names.first { $0.0 == name }?.1
    }

    static func name(_ qos: DispatchQoS.QoSClass) -> String {
        names.first { $0.1 == qos }?.0 ?? "unspecified"
    }
}
