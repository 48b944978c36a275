import CLua
import CLuaShim

/// The userdata types the `dispatch` module hands to Lua.
enum ObjectKind: Int, CaseIterable {
    case queue, group, semaphore, workItem, specificKey, once, time, walltime, source, io, data, task, resumer

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
        }
    }
}

/// What a userdata type looks like to Lua: its methods, read-only fields and metamethods,
/// as binding ids. Built once per process, inside `Module.spec`.
struct ObjectType {
    let kind: ObjectKind
    var methods: [(String, Int32)] = []
    /// `(self, key) -> value` for keys that are not methods (e.g. `q.label`).
    var fields: Int32?
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

    mutating func meta(_ name: String, _ body: @escaping BindingBody) {
        metamethods.append((name, Bindings.register(name, body)))
    }
}

/// Per-interpreter metatables, and the userdata <-> Swift object conversions.
///
/// A Swift-object userdata holds one retained pointer; `__gc` releases it. Type checks compare
/// the metatable's address with the one made here, which is cheaper than a registry lookup.
final class ObjectTable {
    // Written only while the module is installed, before any binding runs: every binding call
    // reads them, and Swift's dynamic exclusivity checks would cost on each read.
    @exclusivity(unchecked) private var metatables: [UnsafeRawPointer?] = Array(repeating: nil, count: ObjectKind.allCases.count)
    @exclusivity(unchecked) private var refs: [Int32] = Array(repeating: LUA_NOREF, count: ObjectKind.allCases.count)

    /// The `__gc` shared by every object type: releases the Swift object.
    static func gc(_ a: Args) throws(LuaError) -> Int32 {
        if let p = lua_touserdata(a.L, 1)?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self),
           let object = p.pointee {
            p.pointee = nil
            Unmanaged<AnyObject>.fromOpaque(object).release()
        }
        return 0
    }

    /// Creates the metatable for `type` on `L` (which must be the admin or main state).
    /// `pending` is the table where submit fast paths store functions.
    func define(_ L: OpaquePointer, _ type: ObjectType, gc: Int32, pending: PendingFunctions) {
        let kind = type.kind
        luaL_newmetatable(L, kind.typeName)  // also sets __name
        let mt = lua_gettop(L)
        // __index: methods first (a raw get in C), then the field getter.
        lua_createtable(L, 0, Int32(type.methods.count))
        for (name, id) in type.methods {
            if let submit = type.submitPaths[name] {
                lua_rawgeti(L, ld_registryindex(), lua_Integer(pending.ref))
                ld_push_binding_submit(L, id, submit, mt, -1)
                lua_rotate(L, -2, 1)
                ld_pop(L, 1)
            } else {
                ld_push_binding(L, id)
            }
            Lua.setField(L, -2, name)
        }
        if let fields = type.fields {
            ld_push_binding(L, fields)
            lua_pushcclosure(L, ld_index, 2)
        }
        // Without fields, the methods table itself: a method lookup is then a table lookup in
        // the VM, not a call of a C function.
        Lua.setField(L, mt, "__index")
        if kind != .time && kind != .walltime {
            ld_push_binding(L, gc)
            Lua.setField(L, mt, "__gc")
        }
        for (name, id) in type.metamethods {
            ld_push_binding(L, id)
            Lua.setField(L, mt, name)
        }
        Lua.push(L, "locked")
        Lua.setField(L, mt, "__metatable")
        metatables[kind.rawValue] = lua_topointer(L, mt)
        lua_pushvalue(L, mt)
        refs[kind.rawValue] = luaL_ref(L, ld_registryindex())
        ld_pop(L, 1)
    }

    /// Pushes a new userdata holding a retained reference to `object`.
    func push(_ L: OpaquePointer, _ object: AnyObject, _ kind: ObjectKind) {
        let p = ld_newuserdata(L, MemoryLayout<UnsafeMutableRawPointer?>.size)!
        p.assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee = Unmanaged.passRetained(object).toOpaque()
        setMetatable(L, kind)
    }

    /// Pushes a new userdata holding a plain 64-bit value (times).
    func pushValue(_ L: OpaquePointer, _ value: Int64, _ kind: ObjectKind) {
        let p = ld_newuserdata(L, MemoryLayout<Int64>.size)!
        p.assumingMemoryBound(to: Int64.self).pointee = value
        setMetatable(L, kind)
    }

    private func setMetatable(_ L: OpaquePointer, _ kind: ObjectKind) {
        lua_rawgeti(L, ld_registryindex(), lua_Integer(refs[kind.rawValue]))
        lua_setmetatable(L, -2)
    }

    func isKind(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) -> Bool {
        guard lua_type(L, i) == LUA_TUSERDATA, lua_getmetatable(L, i) != 0 else { return false }
        let same = lua_topointer(L, -1) == metatables[kind.rawValue]
        ld_pop(L, 1)
        return same
    }

    func check<T: AnyObject>(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) -> T? {
        guard isKind(L, i, kind),
              let raw = lua_touserdata(L, i)?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee
        else { return nil }
        // The metatable identifies the Swift class: no dynamic cast needed.
        return Unmanaged<T>.fromOpaque(raw).takeUnretainedValue()
    }

    /// `check` without a retain: the userdata at `i` keeps the object alive while it is on the stack.
    func unmanaged<T: AnyObject>(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind, as _: T.Type = T.self) -> Unmanaged<T>? {
        guard isKind(L, i, kind),
              let raw = lua_touserdata(L, i)?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee
        else { return nil }
        return Unmanaged<T>.fromOpaque(raw)
    }

    func value(_ L: OpaquePointer, _ i: Int32, _ kind: ObjectKind) -> Int64? {
        guard isKind(L, i, kind) else { return nil }
        return lua_touserdata(L, i)!.assumingMemoryBound(to: Int64.self).pointee
    }
}
