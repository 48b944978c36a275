import CLua
import CLuaShim

/// The userdata types the `dispatch` module hands to Lua.
enum ObjectKind: Int, CaseIterable {
    case queue, group, semaphore, workItem, specificKey, once, time, walltime, source, io, data, task, resumer,
         pool, job, channel, code, connection, server

    var typeName: String {
        switch self {
        case .queue: "dispatch.queue"
        case .group: "dispatch.group"
        case .semaphore: "dispatch.semaphore"
        case .workItem: "dispatch.work_item"
        case .specificKey: "dispatch.specific_key"
        case .once: "dispatch.once"
        case .time: "dispatch.time"
        case .walltime: "dispatch.walltime"
        case .source: "dispatch.source"
        case .io: "dispatch.io"
        case .data: "dispatch.data"
        case .task: "dispatch.task"
        case .resumer: "dispatch.resumer"
        case .pool: "dispatch.pool"
        case .job: "dispatch.job"
        case .channel: "dispatch.channel"
        case .code: "dispatch.code"
        case .connection: "dispatch.connection"
        case .server: "dispatch.server"
        }
    }
}

/// What a userdata type looks like to Lua: its methods, read-only fields and metamethods,
/// as binding ids. Built once per process, inside `Module.spec`.
struct ObjectType {
    let kind: ObjectKind
    var methods: [(String, Int32)] = []
    /// `(self, key) -> value` for keys that are not methods (e.g. `source.handle`).
    var fields: Int32?
    /// Sets each object's read-only fields in the table on top of the stack. An object of a type
    /// with these gets, the first time it is indexed, a metatable of its own whose `__index` is
    /// a table of its fields that falls back to the methods table: from then on a method lookup
    /// (`q:async`) is two table lookups in the VM, not a call of a C function. Objects never
    /// indexed (made, passed as an argument, dropped) never pay for the tables. (Fields that can
    /// change are set again where they change: `ObjectTable.refreshFields`.)
    var objectFields: ((OpaquePointer, AnyObject) -> Void)?
    /// The binding that gives an object its own metatable (`ObjectTable.adopt`).
    var adopt: Int32?
    var metamethods: [(String, Int32)] = []

    init(_ kind: ObjectKind) { self.kind = kind }

    /// Methods with a fast path for the form `obj:name(fn)` (`ld_push_binding_submit`).
    var submitPaths: [String: ld_submit_fn] = [:]

    mutating func method(_ name: String, _ body: @escaping BindingBody) {
        methods.append((name, Bindings.register(name, body)))
    }

    /// `name`'s body, and a fast path for `obj:name(fn)` that submits a block record (see
    /// `ld_submit_fn`); any other form, or a declined submission, runs `body`.
    mutating func method(_ name: String, submit: ld_submit_fn, _ body: @escaping BindingBody) {
        method(name, body)
        submitPaths[name] = submit
    }

    mutating func fields(_ body: @escaping BindingBody) {
        fields = Bindings.register("__index", body)
    }

    mutating func objectFields(_ body: @escaping (OpaquePointer, AnyObject) -> Void) {
        objectFields = body
        let kind = kind
        adopt = Bindings.register("__index") { a throws(LuaError) in
            try a.runtime.objects.adopt(a.L, 1, kind)
            return 0
        }
    }

    /// What the type's `__gc` does with the object, instead of releasing it (which `release`
    /// must do); `ld_push_release` calls it. A `meta("__gc")` binding overrides both.
    var release: ld_object_release_fn?

    mutating func meta(_ name: String, _ body: @escaping BindingBody) {
        metamethods.append((name, Bindings.register(name, body)))
    }
}

/// Per-interpreter metatables, and the userdata <-> Swift object conversions.
///
/// A Swift-object userdata holds one retained pointer, then its type's tag (`ld_object_tag`);
/// `__gc` releases the pointer. Type checks compare the tag, which needs no call into Lua
/// beyond reading the userdata.
final class ObjectTable {
    // Written only while the module is installed, before any binding runs: every binding call
    // reads them, and Swift's dynamic exclusivity checks would cost on each read.
    @exclusivity(unchecked) private var refs: [Int32] = Array(repeating: LUA_NOREF, count: ObjectKind.allCases.count)
    /// For types with `objectFields`: the metatable that falls back to the methods table.
    @exclusivity(unchecked) private var fieldMetatables: [Int32] = Array(repeating: LUA_NOREF, count: ObjectKind.allCases.count)
    @exclusivity(unchecked) private var objectFields: [((OpaquePointer, AnyObject) -> Void)?] = Array(repeating: nil, count: ObjectKind.allCases.count)
    nonisolated(unsafe) private static let tags: [UnsafeRawPointer] = ObjectKind.allCases.map { ld_object_tag(Int32($0.rawValue))! }

    /// The `__gc` of the types with one of their own (`kind`): releases the Swift object of a
    /// userdata of that type when the collector calls it; a script's own call (through
    /// `debug.getmetatable`), or any other value, is left alone.
    static func gc(_ a: Args, _ kind: ObjectKind) -> Int32 {
        if let p = ld_object_at(a.L, 1, tags[kind.rawValue]), ld_in_finalizer(a.L) != 0 { release(p) }
        return 0
    }

    /// The `__gc` of host functions' boxes (Embedding/HostCallable.swift): releases the Swift
    /// object of a userdata with the boxes' metatable; any other value is left alone.
    static func gc(_ a: Args) throws(LuaError) -> Int32 {
        let L = a.L
        guard ld_in_finalizer(L) != 0, lua_type(L, 1) == LUA_TUSERDATA, lua_rawlen(L, 1) == MemoryLayout<UnsafeRawPointer>.size,
              let p = lua_touserdata(L, 1)?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self),
              lua_getmetatable(L, 1) != 0 else { return 0 }
        lua_rawgetp(L, ld_registryindex(), HostCalls.boxMetatable)
        let ours = lua_rawequal(L, -1, -2) != 0
        ld_pop(L, 2)
        if ours { release(p) }
        return 0
    }

    private static func release(_ p: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let object = p.pointee else { return }
        p.pointee = nil
        Unmanaged<AnyObject>.fromOpaque(object).release()
    }

    /// The `__gc` of every object type without one of its own.
    static let releaseObject: ld_object_release_fn = { object in
        Unmanaged<AnyObject>.fromOpaque(object!).release()
    }

    /// Creates the metatable for `type` on `L` (which must be the admin or main state).
    func define(_ L: OpaquePointer, _ type: ObjectType) {
        let kind = type.kind
        luaL_newmetatable(L, kind.typeName)  // also sets __name
        let mt = lua_gettop(L)
        // __index: methods first (a raw get in C), then the field getter.
        lua_createtable(L, 0, Int32(type.methods.count))
        for (name, id) in type.methods {
            if let submit = type.submitPaths[name] {
                ld_push_binding_submit(L, id, submit, Self.tags[kind.rawValue])
            } else {
                ld_push_binding(L, id)
            }
            Lua.setField(L, -2, name)
        }
        if let fields = type.objectFields, let adopt = type.adopt {
            // The methods table is each fields table's fallback; an object's own metatable is a
            // copy of this one, with its fields table as __index (see `adopt`). Until it has
            // one, indexing it adopts it.
            objectFields[kind.rawValue] = fields
            lua_createtable(L, 0, 1)
            lua_pushvalue(L, -2)
            Lua.setField(L, -2, "__index")
            fieldMetatables[kind.rawValue] = luaL_ref(L, ld_registryindex())
            ld_push_binding(L, adopt)
            lua_pushcclosure(L, ld_index_adopting, 2)
        } else if let fields = type.fields {
            ld_push_binding(L, fields)
            lua_pushcclosure(L, ld_index, 2)
        }
        // Without fields, the methods table itself: a method lookup is then a table lookup in
        // the VM, not a call of a C function.
        Lua.setField(L, mt, "__index")
        if kind != .time && kind != .walltime {
            // The type's own tag, so that `__gc` called on any other userdata (a time value,
            // another type's object, `io.stdout`) does nothing, as luaL_checkudata would refuse.
            ld_push_release(L, type.release ?? Self.releaseObject, Self.tags[kind.rawValue])
            Lua.setField(L, mt, "__gc")
        }
        for (name, id) in type.metamethods {
            ld_push_binding(L, id)
            Lua.setField(L, mt, name)
        }
        Lua.push(L, "locked")
        Lua.setField(L, mt, "__metatable")
        lua_pushvalue(L, mt)
        refs[kind.rawValue] = luaL_ref(L, ld_registryindex())
        ld_pop(L, 1)
    }

    /// Pushes a new userdata holding a retained reference to `object`.
    func push(_ L: OpaquePointer, _ object: AnyObject, _ kind: ObjectKind) {
        let p = newObject(L, kind)
        p.storeBytes(of: Unmanaged.passRetained(object).toOpaque(), as: UnsafeMutableRawPointer?.self)
        setMetatable(L, kind)
    }

    /// Gives the object at `i` (of a type with `objectFields`) a metatable of its own: a copy of
    /// its type's, whose `__index` is a table of the object's fields that falls back to the
    /// methods table.
    func adopt(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) throws(LuaError) {
        guard let fields = objectFields[kind.rawValue] else { return }
        guard let object: AnyObject = check(L, i, kind) else { throw .argument(i, "\(kind.typeName) expected") }
        let ud = lua_absindex(L, i)
        lua_createtable(L, 0, 4)
        fields(L, object)
        lua_rawgeti(L, ld_registryindex(), lua_Integer(fieldMetatables[kind.rawValue]))
        lua_setmetatable(L, -2)
        lua_rawgeti(L, ld_registryindex(), lua_Integer(refs[kind.rawValue]))
        lua_rotate(L, -2, 1)
        ld_object_metatable(L, -2)
        lua_setmetatable(L, ud)
        ld_pop(L, 1)
    }

    /// Pushes a new userdata holding a plain 64-bit value (times).
    func pushValue(_ L: OpaquePointer, _ value: Int64, _ kind: ObjectKind) {
        newObject(L, kind).storeBytes(of: value, as: Int64.self)
        setMetatable(L, kind)
    }

    /// Sets again the fields of the object at `i` (of a type with `objectFields`), after
    /// something changed them; nothing to do if it has no metatable of its own yet.
    func refreshFields(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) {
        guard let fields = objectFields[kind.rawValue], let object: AnyObject = check(L, i, kind),
              lua_getmetatable(L, i) != 0 else { return }
        lua_pushstring(L, "__index")
        if lua_rawget(L, -2) == LUA_TTABLE { fields(L, object) }
        ld_pop(L, 2)
    }

    private func newObject(_ L: OpaquePointer, _ kind: ObjectKind) -> UnsafeMutableRawPointer {
        let p = ld_newuserdata(L, 2 * MemoryLayout<UnsafeRawPointer>.size)!
        p.storeBytes(of: Self.tags[kind.rawValue], toByteOffset: MemoryLayout<UnsafeRawPointer>.size, as: UnsafeRawPointer.self)
        return p
    }

    private func setMetatable(_ L: OpaquePointer, _ kind: ObjectKind) {
        lua_rawgeti(L, ld_registryindex(), lua_Integer(refs[kind.rawValue]))
        lua_setmetatable(L, -2)
    }

    @inline(__always) private func memory(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) -> UnsafeMutableRawPointer? {
        ld_object_at(L, i, Self.tags[kind.rawValue]).map { UnsafeMutableRawPointer($0) }
    }

    func isKind(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) -> Bool { memory(L, i, kind) != nil }

    func check<T: AnyObject>(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) -> T? {
        guard let raw = memory(L, i, kind)?.load(as: UnsafeMutableRawPointer?.self) else { return nil }
        // The tag identifies the Swift class: no dynamic cast needed.
        return Unmanaged<T>.fromOpaque(raw).takeUnretainedValue()
    }

    /// `check` without a retain: the userdata at `i` keeps the object alive while it is on the stack.
    func unmanaged<T: AnyObject>(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind, as _: T.Type = T.self) -> Unmanaged<T>? {
        guard let raw = memory(L, i, kind)?.load(as: UnsafeMutableRawPointer?.self) else { return nil }
        return Unmanaged<T>.fromOpaque(raw)
    }

    func value(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) -> Int64? {
        memory(L, i, kind)?.load(as: Int64.self)
    }
}
