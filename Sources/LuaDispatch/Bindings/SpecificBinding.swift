import CLua
import CLuaShim
import Dispatch

/// A key for per-queue values (`DispatchSpecificKey`).
final class SpecificKeyObject: @unchecked Sendable {
    let key = DispatchSpecificKey<LuaRef>()
    let name: String?
    /// Its native cost and its name's copy, charged to the memory limit while it lives.
    var native = MemoryCharge.none

    init(name: String?) { self.name = name }
}

/// `dispatch.specific_key`, `dispatch.get_specific`, `q:set_specific`, `q:get_specific`.
/// Values are Lua values anchored in the registry; Dispatch owns the anchors and releases
/// them when the value is replaced or the queue goes away.
enum SpecificBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("specific_key") { a throws(LuaError) in
            let name = try a.optionalString(1)
            let charge = try a.runtime.reserve(NativeCost.specificKey + (name?.utf8.count ?? 0))
            let key = SpecificKeyObject(name: name)
            key.native = charge
            a.runtime.objects.push(a.L, key, .specificKey)
            return 1
        }
        m.function("get_specific") { a throws(LuaError) in
            let key: SpecificKeyObject = try a.object(1, .specificKey)
            return push(a, DispatchQueue.getSpecific(key: key.key))
        }
        var t = ObjectType(.specificKey)
        t.meta("__tostring") { a throws(LuaError) in
            let key: SpecificKeyObject = try a.object(1, .specificKey)
            Lua.push(a.L, "dispatch.specific_key (\(key.name ?? "unnamed"))")
            return 1
        }
        t.fields { a throws(LuaError) in
            let key: SpecificKeyObject = try a.object(1, .specificKey)
            guard Lua.string(a.L, 2) == "name", let name = key.name else { return 0 }
            Lua.push(a.L, name)
            return 1
        }
        m.types.append(t)
    }

    static func methods(_ t: inout ObjectType) {
        t.method("set_specific") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            let key: SpecificKeyObject = try a.object(2, .specificKey)
            let value = a.isNoneOrNil(3) ? nil : LuaRef(a.runtime, a.ref(3))
            q.queue.setSpecific(key: key.key, value: value)
            return 0
        }
        t.method("get_specific") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            let key: SpecificKeyObject = try a.object(2, .specificKey)
            return push(a, q.queue.getSpecific(key: key.key))
        }
    }

    private static func push(_ a: Args, _ value: LuaRef?) -> Int32 {
        guard let value, value.runtime === a.runtime else {
            lua_pushnil(a.L)
            return 1
        }
        lua_rawgeti(a.L, ld_registryindex(), lua_Integer(value.ref))
        return 1
    }
}
