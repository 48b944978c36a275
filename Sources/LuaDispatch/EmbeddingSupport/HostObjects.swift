import CLua
import CLuaShim

/// Swift objects as userdata (see `LuaUserData`). A userdata is two words, like the `dispatch`
/// objects' (Objects.swift): the retained object, then its type's tag, here the address of the
/// class's metadata, so that a type check is one comparison. Each interpreter keeps, in its
/// registry, a metatable per type (keyed by the tag, built on first use) and a weak-valued table
/// from object address to userdata, which makes the same object the same userdata while Lua
/// holds it. The userdata's `__gc` releases the object.
enum HostObjects {
    /// The registry key of the identity table.
    nonisolated(unsafe) private static let identity = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    /// Makes the identity table of a new interpreter. Lock held.
    static func install(_ L: OpaquePointer) {
        lua_createtable(L, 0, 0)
        lua_createtable(L, 0, 1)
        Lua.push(L, "v")
        Lua.setField(L, -2, "__mode")
        lua_setmetatable(L, -2)
        lua_rawsetp(L, ld_registryindex(), identity)
    }

    @inline(__always) static func tag<T: LuaUserData>(_: T.Type) -> UnsafeRawPointer {
        unsafeBitCast(ObjectIdentifier(T.self), to: UnsafeRawPointer.self)
    }

    /// Pushes the userdata of `object`: the one Lua already has, or a new one. Lock held.
    static func push<T: LuaUserData>(_ L: OpaquePointer, _ object: T) {
        lua_checkstack(L, 4)
        let address = Unmanaged.passUnretained(object).toOpaque()
        lua_rawgetp(L, ld_registryindex(), identity)
        if lua_rawgetp(L, -1, address) == LUA_TUSERDATA {
            ld_remove(L, -2)
            return
        }
        ld_pop(L, 1)
        let p = ld_newuserdata(L, 2 * MemoryLayout<UnsafeRawPointer>.size)!
        p.storeBytes(of: Unmanaged.passRetained(object).toOpaque(), as: UnsafeMutableRawPointer?.self)
        p.storeBytes(of: tag(T.self), toByteOffset: MemoryLayout<UnsafeRawPointer>.size, as: UnsafeRawPointer.self)
        pushMetatable(L, T.self)
        lua_setmetatable(L, -2)
        lua_pushvalue(L, -1)
        lua_rawsetp(L, -3, address)
        ld_remove(L, -2)
    }

    /// The object of type `T` at `i`, if that is one. Lock held.
    @inline(__always) static func check<T: LuaUserData>(_ L: OpaquePointer, _ i: Int32, _: T.Type) -> T? {
        guard let raw = ld_object_at(L, i, tag(T.self))?.pointee else { return nil }
        return Unmanaged<T>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The Swift object at `i` whatever its type, if it is one. Lock held.
    static func object(_ L: OpaquePointer, _ i: Int32) -> (any LuaUserData)? {
        guard lua_type(L, i) == LUA_TUSERDATA, lua_rawlen(L, i) == 2 * MemoryLayout<UnsafeRawPointer>.size,
              let p = lua_touserdata(L, i)?.assumingMemoryBound(to: UnsafeRawPointer?.self),
              let object = p[0], let tag = p[1] else { return nil }
        // A host type's tag is the registry key of its metatable, which this userdata has.
        guard lua_getmetatable(L, i) != 0 else { return nil }
        lua_rawgetp(L, ld_registryindex(), tag)
        let ours = lua_rawequal(L, -1, -2) != 0
        ld_pop(L, 2)
        guard ours else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(object).takeUnretainedValue() as? any LuaUserData
    }

    /// Pushes `T`'s metatable in this interpreter, built the first time. Lock held.
    private static func pushMetatable<T: LuaUserData>(_ L: OpaquePointer, _: T.Type) {
        let key = tag(T.self)
        if lua_rawgetp(L, ld_registryindex(), key) == LUA_TTABLE { return }
        ld_pop(L, 1)
        let type = T.luaType
        lua_createtable(L, 0, Int32(type.metamethods.count + 5))
        let mt = lua_gettop(L)
        Lua.push(L, type.name)
        Lua.setField(L, mt, "__name")
        // Releases only a userdata with this type's tag (called with anything else, nothing).
        ld_push_release(L, ObjectTable.releaseObject, key)
        Lua.setField(L, mt, "__gc")
        Lua.push(L, "locked")
        Lua.setField(L, mt, "__metatable")
        table(L, type.methods)
        if type.getters.isEmpty {
            Lua.setField(L, mt, "__index")  // a method lookup is a table lookup in the VM
        } else {
            table(L, type.getters)
            lua_pushcclosure(L, ld_host_index, 2)
            Lua.setField(L, mt, "__index")
        }
        table(L, type.setters)
        table(L, type.getters)
        Lua.push(L, type.name)
        lua_pushcclosure(L, ld_host_newindex, 3)
        Lua.setField(L, mt, "__newindex")
        for (m, callable) in type.metamethods {
            HostCalls.push(L, callable)
            Lua.setField(L, mt, m.rawValue)
        }
        lua_pushvalue(L, mt)
        lua_rawsetp(L, ld_registryindex(), key)
    }

    /// Pushes a table of `callables` by name.
    private static func table(_ L: OpaquePointer, _ callables: [HostCallable]) {
        lua_createtable(L, 0, Int32(callables.count))
        for c in callables {
            HostCalls.push(L, c)
            Lua.setField(L, -2, c.name)
        }
    }
}
