import CLua
import CLuaShim

typealias BindingBody = (Args) throws(LuaError) -> Int32

/// A Lua-callable Swift function: its name (for messages) and its body.
struct Binding {
    let name: String
    let body: BindingBody
}

/// Every binding of every runtime, by id. Filled once, before any interpreter exists.
enum Bindings {
    /// A fixed buffer rather than an array: every Lua call reads it, and a static array would
    /// pay for an exclusivity check on each read.
    private static let capacity = 1024
    nonisolated(unsafe) private static let table = UnsafeMutablePointer<Binding>.allocate(capacity: capacity)
    nonisolated(unsafe) private static var count = 0
    private static let installEntry: Void = { ld_set_entry(entry) }()

    /// Registers `body` under `name` and returns its id. Only `Module.spec`'s initialiser
    /// registers, once per process, before any binding can be called.
    static func register(_ name: String, _ body: @escaping BindingBody) -> Int32 {
        _ = installEntry
        precondition(count < capacity, "too many bindings")
        (table + count).initialize(to: Binding(name: name, body: body))
        count += 1
        return Int32(count - 1)
    }

    static func name(_ id: Int32) -> String { table[Int(id)].name }

    private static let entry: ld_entry_fn = { state, id in
        let L = state!
        let binding = table + Int(id)
        let args = Args(L: L, runtime: Runtime.from(L), name: binding.pointee.name)
        do throws(LuaError) {
            return try binding.pointee.body(args)
        } catch {
            switch error {
            case .argument(let n, let message):
                lua_pushstring(L, "bad argument #\(n) to '\(binding.pointee.name)' (\(message))")
                return Int32(LD_RAISE_WHERE)
            case .message(let message):
                lua_pushstring(L, message)
                return Int32(LD_RAISE_WHERE)
            case .raise:
                return Int32(LD_RAISE)
            }
        }
    }
}

/// A binding's view of its arguments: checks that throw `LuaError` instead of longjmp-ing.
struct Args {
    let L: OpaquePointer
    /// The interpreter outlives every call into it.
    unowned(unsafe) let runtime: Runtime
    let name: String

    var count: Int32 { lua_gettop(L) }
    func type(_ i: Int32) -> Int32 { lua_type(L, i) }
    func isNoneOrNil(_ i: Int32) -> Bool { lua_type(L, i) <= 0 }

    /// The type name Lua would print: the metatable's `__name` when there is one.
    func typeName(_ i: Int32) -> String {
        let t = lua_type(L, i)
        if t == LUA_TNONE { return "no value" }
        if lua_getmetatable(L, i) != 0 {
            defer { ld_pop(L, 1) }
            lua_pushstring(L, "__name")
            if lua_rawget(L, -2) == LUA_TSTRING, let s = lua_tolstring(L, -1, nil) {
                let name = String(cString: s)
                ld_pop(L, 1)
                return name
            }
            ld_pop(L, 1)
        }
        return String(cString: lua_typename(L, t))
    }

    func typeError(_ i: Int32, _ expected: String) -> LuaError {
        .argument(i, "\(expected) expected, got \(typeName(i))")
    }

    func error(_ message: String) -> LuaError { .message(message) }

    func integer(_ i: Int32) throws(LuaError) -> Int {
        var ok: Int32 = 0
        let v = lua_tointegerx(L, i, &ok)
        if ok != 0 { return Int(v) }
        if lua_type(L, i) == LUA_TNUMBER { throw .argument(i, "number has no integer representation") }
        throw typeError(i, "number")
    }

    func optionalInteger(_ i: Int32, _ fallback: Int) throws(LuaError) -> Int {
        isNoneOrNil(i) ? fallback : try integer(i)
    }

    func number(_ i: Int32) throws(LuaError) -> Double {
        var ok: Int32 = 0
        let v = lua_tonumberx(L, i, &ok)
        if ok != 0 && lua_type(L, i) == LUA_TNUMBER { return v }
        throw typeError(i, "number")
    }

    func string(_ i: Int32) throws(LuaError) -> String {
        guard lua_type(L, i) == LUA_TSTRING || lua_type(L, i) == LUA_TNUMBER else { throw typeError(i, "string") }
        return Lua.string(L, i)!
    }

    func optionalString(_ i: Int32) throws(LuaError) -> String? {
        isNoneOrNil(i) ? nil : try string(i)
    }

    func boolean(_ i: Int32) throws(LuaError) -> Bool {
        guard lua_type(L, i) == LUA_TBOOLEAN else { throw typeError(i, "boolean") }
        return lua_toboolean(L, i) != 0
    }

    func function(_ i: Int32) throws(LuaError) {
        guard lua_type(L, i) == LUA_TFUNCTION else { throw typeError(i, "function") }
    }

    func table(_ i: Int32) throws(LuaError) {
        guard lua_type(L, i) == LUA_TTABLE else { throw typeError(i, "table") }
    }

    /// The Swift object behind a userdata of `kind`.
    func object<T: AnyObject>(_ i: Int32, _ kind: ObjectKind, as _: T.Type = T.self) throws(LuaError) -> T {
        guard let object: T = runtime.objects.check(L, i, kind) else { throw typeError(i, kind.typeName) }
        return object
    }

    /// Runs `body` with the Swift object behind a userdata of `kind`, borrowed: the userdata at
    /// `i` keeps it alive while the binding runs, so no reference count is written. For objects
    /// that other threads use on every call (a pool, a job), where each such write moves a cache
    /// line between cores.
    func withObject<T: AnyObject, R>(_ i: Int32, _ kind: ObjectKind, as _: T.Type,
                                     _ body: (T) throws(LuaError) -> R) throws(LuaError) -> R {
        guard let object = runtime.objects.unmanaged(L, i, kind, as: T.self) else { throw typeError(i, kind.typeName) }
        return try object._withUnsafeGuaranteedRef { o in Result { () throws(LuaError) -> R in try body(o) } }.get()
    }

    func optionalObject<T: AnyObject>(_ i: Int32, _ kind: ObjectKind, as _: T.Type = T.self) -> T? {
        runtime.objects.check(L, i, kind)
    }

    /// Anchors the value at `i` in the registry; the caller owns the reference.
    func ref(_ i: Int32) -> Int32 {
        lua_pushvalue(L, i)
        return luaL_ref(L, ld_registryindex())
    }
}

/// Small helpers over the raw C API, none of which can raise.
enum Lua {
    static func string(_ L: OpaquePointer, _ i: Int32) -> String? {
        var len = 0
        guard let p = lua_tolstring(L, i, &len) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
    }

    static func push(_ L: OpaquePointer, _ s: String) {
        var s = s
        s.withUTF8 { buf in
            _ = buf.withMemoryRebound(to: CChar.self) { lua_pushlstring(L, $0.baseAddress, $0.count) }
        }
    }

    static func setField(_ L: OpaquePointer, _ table: Int32, _ key: String) {
        let t = lua_absindex(L, table)
        push(L, key)
        lua_rotate(L, -2, 1)
        lua_rawset(L, t)
    }

    static func getField(_ L: OpaquePointer, _ table: Int32, _ key: String) -> Int32 {
        let t = lua_absindex(L, table)
        push(L, key)
        return lua_rawget(L, t)
    }

    /// Pushes a table `{n = count, ...}` of the `count` values from `first` on (kept results).
    static func pack(_ L: OpaquePointer, from first: Int32, count: Int32) {
        lua_createtable(L, count, 1)
        for i in 0..<max(0, count) {
            lua_pushvalue(L, first + i)
            lua_rawseti(L, -2, lua_Integer(i + 1))
        }
        lua_pushinteger(L, lua_Integer(count))
        setField(L, -2, "n")
    }

    /// Pushes the values of the `pack`ed table at registry `ref`; returns how many, or nil when
    /// the stack cannot hold them.
    static func unpack(_ L: OpaquePointer, ref: Int32) -> Int32? {
        lua_rawgeti(L, ld_registryindex(), lua_Integer(ref))
        let t = lua_gettop(L)
        _ = getField(L, t, "n")
        let n = Int32(lua_tointegerx(L, -1, nil))
        lua_settop(L, t)
        guard lua_checkstack(L, n + 1) != 0 else {
            lua_settop(L, t - 1)
            return nil
        }
        for i in 0..<n { lua_rawgeti(L, t, lua_Integer(i + 1)) }
        lua_rotate(L, t, -1)
        lua_settop(L, -2)
        return n
    }
}
