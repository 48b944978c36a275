import CLua
import CLuaShim
import Synchronization

/// A Lua function's bytecode (from `lua_dump`, with debug info so that errors keep their lines)
/// and the number every interpreter knows it by: a worker keeps the function it loaded under
/// that number (`LoadedFunctions`), so a function submitted again is neither dumped nor loaded
/// again.
final class FunctionCode: @unchecked Sendable {
    /// Unique in the process; 0 for a dump that is not cached.
    let id: Int
    let bytes: [UInt8]

    private static let nextID = Atomic<Int>(1)

    private init(id: Int, bytes: [UInt8]) {
        self.id = id
        self.bytes = bytes
    }

    /// The code of the Lua function at `i`. With `cache`, from the interpreter's cache, which
    /// is keyed by the function object (the API does not expose the prototype, and keying by a
    /// hash of the dump would need the dump, the cost being saved) and weak, so an entry goes
    /// with its function; a dump made now is added to it. Lock held; leaves the stack as it was.
    static func of(_ L: OpaquePointer, _ i: Int32, cache: Bool) -> FunctionCode {
        let fn = lua_absindex(L, i)
        guard cache else { return FunctionCode(id: 0, bytes: dump(L, fn)) }
        let rt = Runtime.from(L)
        let function = lua_topointer(L, fn)
        if let code = rt.states.lastFunctionCode.code, rt.states.lastFunctionCode.function == function { return code }
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        lua_checkstack(L, 4)
        RegistryKeys.pushWeakTable(L, RegistryKeys.bytecode, mode: "k")
        let objects = rt.objects
        lua_pushvalue(L, fn)
        let code: FunctionCode
        if lua_rawget(L, top + 1) == LUA_TUSERDATA, let cached: FunctionCode = objects.check(L, -1, .code) {
            code = cached
        } else {
            ld_pop(L, 1)
            code = FunctionCode(id: nextID.wrappingAdd(1, ordering: .relaxed).oldValue, bytes: dump(L, fn))
            lua_pushvalue(L, fn)
            objects.push(L, code, .code)  // its __gc lets the code go with the entry
            lua_rawset(L, top + 1)
        }
        // The function is anchored while it is the last one, so that no other object can
        // take its address.
        lua_pushvalue(L, fn)
        lua_rawsetp(L, ld_registryindex(), RegistryKeys.lastFunction)
        rt.states.lastFunctionCode = LastFunctionCode(function: function, code: code)
        return code
    }

    private static func dump(_ L: OpaquePointer, _ fn: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        lua_pushvalue(L, fn)
        withUnsafeMutablePointer(to: &bytes) { out in
            _ = lua_dump(L, { _, p, size, out in
                out!.assumingMemoryBound(to: [UInt8].self).pointee
                    .append(contentsOf: UnsafeRawBufferPointer(start: p, count: size))
                return 0
            }, out, 0)
        }
        ld_pop(L, 1)
        return bytes
    }

    /// Pushes the function: the one this interpreter loaded under `id` before, else loaded now
    /// (and kept, when `keep`). False, with Lua's message pushed instead, when it fails to load.
    func push(_ L: OpaquePointer, keep: Bool) -> Bool {
        if id != 0, LoadedFunctions.push(L, id) { return true }
        let status = bytes.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { luaL_loadbufferx(L, $0.baseAddress, $0.count, "=worker", "b") }
        }
        guard status == LUA_OK else { return false }
        if keep && id != 0 { LoadedFunctions.keep(L, id) }
        return true
    }
}

/// The function an interpreter last sent to a worker and its code: a loop that submits one
/// function finds its code by comparing an address, without the weak table's lookup.
struct LastFunctionCode {
    var function: UnsafeRawPointer?
    var code: FunctionCode?
}

/// The functions an interpreter loaded from other interpreters' bytecode, by the number their
/// source gave the dump (`CopiedGraph.Node.function`'s `id`): submitting the same function to a
/// worker again neither dumps nor loads it again. Only functions whose upvalues are all globals
/// or library tables are kept (`isPlain`); at most `limit`, after which the table starts over.
enum LoadedFunctions {
    static let limit = 256

    /// Pushes the kept function `id` and returns true, or pushes nothing and returns false.
    static func push(_ L: OpaquePointer, _ id: Int) -> Bool {
        guard lua_rawgetp(L, ld_registryindex(), RegistryKeys.loaded) == LUA_TTABLE else {
            ld_pop(L, 1)
            return false
        }
        if lua_rawgeti(L, -1, lua_Integer(-id)) == LUA_TFUNCTION {
            ld_remove(L, -2)
            return true
        }
        ld_pop(L, 2)
        return false
    }

    /// Keeps the function on top of the stack (left there) as `id`.
    static func keep(_ L: OpaquePointer, _ id: Int) {
        if lua_rawgetp(L, ld_registryindex(), RegistryKeys.loaded) != LUA_TTABLE || lua_rawlen(L, -1) >= limit {
            ld_pop(L, 1)
            lua_createtable(L, 0, 0)  // counts its entries in its array part: [1..n] = true
            lua_pushvalue(L, -1)
            lua_rawsetp(L, ld_registryindex(), RegistryKeys.loaded)
        }
        lua_pushboolean(L, 1)
        lua_rawseti(L, -2, lua_Integer(lua_rawlen(L, -2) + 1))
        lua_pushvalue(L, -2)
        lua_rawseti(L, -2, lua_Integer(-id))
        ld_pop(L, 1)
    }
}

/// Registry keys of the parallel layer: the addresses of a few bytes of this process (a
/// lookup by light userdata, with no string to push).
enum RegistryKeys {
    nonisolated(unsafe) static let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    nonisolated(unsafe) static let specials = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    nonisolated(unsafe) static let bytecode = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    nonisolated(unsafe) static let loaded = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    nonisolated(unsafe) static let channels = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    nonisolated(unsafe) static let lastFunction = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    /// Pushes the registry's table under `key`, made on first use with weak keys or values
    /// (`mode` "k" or "v").
    static func pushWeakTable(_ L: OpaquePointer, _ key: UnsafeMutableRawPointer, mode: String) {
        if lua_rawgetp(L, ld_registryindex(), key) == LUA_TTABLE { return }
        ld_pop(L, 1)
        lua_createtable(L, 0, 0)
        lua_createtable(L, 0, 1)
        Lua.push(L, mode)
        Lua.setField(L, -2, "__mode")
        lua_setmetatable(L, -2)
        lua_pushvalue(L, -1)
        lua_rawsetp(L, ld_registryindex(), key)
    }
}
