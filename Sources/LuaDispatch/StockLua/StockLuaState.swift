import CLua
import CLuaShim
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A runtime attached to a Lua state that stock `lua5.4` owns, loading `dispatch.so`.
///
/// `lua5.4`'s main thread runs Lua with the interpreter lock held, and gives it up only inside
/// blocking calls and `dispatch.run`. The runtime never closes the state: a sentinel userdata,
/// anchored in the registry and made before any `dispatch` object, is finalized by `lua_close`
/// after those objects; its `__gc` reports what the main thread's chunk left unobserved, waits
/// for the blocks still running Lua, makes every block that has not started a no-op, ends the
/// suspended tasks and releases the held queues, as `Runtime.close()` does.
final class StockLuaState {
    /// The state's main thread, where `lua5.4` runs its chunks.
    let mainThread: OpaquePointer

    private static let sentinelKey = "dispatch.host"
    private static let moduleKey = "dispatch.module"

    /// Lock held; pushes nothing.
    init(_ rt: Runtime, _ state: OpaquePointer) {
        mainThread = rt.L
        let p = ld_newuserdata(state, MemoryLayout<UnsafeMutableRawPointer?>.size)!
        // The sentinel keeps the runtime alive until the state closes.
        p.assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee = Unmanaged.passRetained(rt).toOpaque()
        lua_createtable(state, 0, 1)
        lua_pushcclosure(state, StockLuaState.closing, 0)
        Lua.setField(state, -2, "__gc")
        lua_setmetatable(state, -2)
        Lua.setField(state, ld_registryindex(), StockLuaState.sentinelKey)
    }

    /// The runtime attached to `state`, if any.
    static func attached(_ state: OpaquePointer) -> Bool {
        defer { ld_pop(state, 1) }
        return Lua.getField(state, ld_registryindex(), sentinelKey) == LUA_TUSERDATA
    }

    /// Remembers the module table on top of `state` (for a second `require` after
    /// `package.loaded.dispatch = nil`), leaving it there.
    static func keepModule(_ state: OpaquePointer) {
        lua_pushvalue(state, -1)
        Lua.setField(state, ld_registryindex(), moduleKey)
    }

    static func pushModule(_ state: OpaquePointer) {
        _ = Lua.getField(state, ld_registryindex(), moduleKey)
    }

    /// Set when a closed host runtime had uncaught errors: the process then exits with status 1
    /// (as `luadispatch` does), through an exit hook, since `lua5.4` chooses its own status.
    private static let failed = Atomic<Bool>(false)
    static let exitHook: Void = {
        atexit {
            guard StockLuaState.failed.load(ordering: .acquiring) else { return }
            fflush(nil)
            _exit(1)
        }
    }()

    /// The sentinel's `__gc`, run by `lua_close`. Raises nothing.
    private static let closing: lua_CFunction = { state in
        guard let state,
              let p = lua_touserdata(state, 1)?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self),
              let raw = p.pointee else { return 0 }
        p.pointee = nil
        let rt = Unmanaged<Runtime>.fromOpaque(raw).takeUnretainedValue()
        if ld_lock_held() != rt.lock { rt.acquire() }
        // The chunks' unobserved task errors are reported now, on this thread: no block runs
        // any more once the runtime is closed.
        rt.endTaskOwner(rt.L, inline: true)
        rt.detachClosing()
        if rt.exitStatus != 0 { failed.store(true, ordering: .releasing) }
        rt.release()
        Unmanaged<Runtime>.fromOpaque(raw).release()
        return 0
    }
}

extension Runtime {
    /// `luaopen_dispatch`: attaches a runtime to `state` (once per state) and pushes the
    /// `dispatch` module. Call it from the thread that runs the state's Lua code, which should
    /// be the process's main thread (where `dispatch.run` services the main queue).
    package static func openModule(_ state: OpaquePointer) -> Int32 {
        if StockLuaState.attached(state) {
            StockLuaState.pushModule(state)
            return 1
        }
        _ = StockLuaState.exitHook
        let rt = Runtime(attachingTo: state)
        // Ctrl-C as lua.c handles it, and also ending a blocking wait on the main thread: the
        // runtime's copy of lua.c's handler replaces lua.c's for the rest of the chunk (lua.c
        // restores the default after each chunk).
        rt.enableInterruption(whenIdle: {})
        rt.armInterruption()
        StockLuaState.keepModule(state)
        return 1
    }
}
