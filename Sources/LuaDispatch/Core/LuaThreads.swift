import CLua
import CLuaShim

/// The interpreter's Lua threads (a pool of them, one per block or host call, so that code
/// running at once never shares a stack) and the references Swift releases from any thread,
/// dropped the next time Lua runs. State in `LuaStates.swift` (`runtime.states`); all under the
/// interpreter lock except `deferUnref`.
extension Runtime {
    // MARK: Lua threads

    /// A Lua thread for one block: index 1 of its stack is the message handler. Lock held.
    func takeThread() -> OpaquePointer {
        if let T = states.pool.take() { return T }
        let T = lua_newthread(admin)!
        lua_rawgeti(admin, ld_registryindex(), lua_Integer(states.anchorsRef))
        lua_pushvalue(admin, -2)
        lua_pushboolean(admin, 1)
        lua_rawset(admin, -3)
        lua_settop(admin, 0)
        lua_pushcclosure(T, ld_msgh, 0)
        states.pooledThreads.insert(T)
        return T
    }

    /// Whether `L` is a thread of the pool (running a block, handler or chunk), not a coroutine.
    func isPooledThread(_ L: OpaquePointer) -> Bool { states.pooledThreads.contains(L) }

    func giveBack(_ T: OpaquePointer) {
        endTaskOwner(T)
        if T == L {
            lua_settop(T, 0)
            states.mainLuaThreadBusy = false
            states.mainChunkRunning.store(false, ordering: .releasing)
        } else {
            lua_settop(T, 1)
            states.pool.give(T)
        }
    }

    /// The main Lua thread when called on the main OS thread and it is free, else a pooled
    /// thread; index 1 is the message handler. Give it back with `giveBack`. Lock held.
    func takeThreadForHost() -> OpaquePointer {
        guard ld_is_main_thread() != 0, !states.mainLuaThreadBusy, !isClosed else { return takeThread() }
        states.mainLuaThreadBusy = true
        states.mainChunkRunning.store(true, ordering: .releasing)
        lua_settop(L, 0)
        lua_pushcclosure(L, ld_msgh, 0)
        return L
    }

    // MARK: references released from any thread

    /// Releases a registry reference later, from a thread that holds the lock. Safe anywhere,
    /// including deinits that run while the lock is held.
    func deferUnref(_ ref: Int32) {
        guard ref != LUA_NOREF && ref != LUA_REFNIL else { return }
        states.deferRef(ref)
    }

    /// Lock held. Inline: every block and every wait asks, and there is seldom anything.
    @inline(__always) func drainDeferred() {
        if states.hasDeferredRefs.load(ordering: .acquiring) { dropDeferredRefs() }
    }

    private func dropDeferredRefs() {
        for ref in states.takeDeferredRefs() { luaL_unref(admin, ld_registryindex(), ref) }
    }
}
