import CLua
import Synchronization

/// The Lua threads of one interpreter beyond its main one and `admin`: the pool blocks borrow a
/// thread from, the set of threads the runtime made (as opposed to coroutines), whether the main
/// Lua thread runs a chunk, and the registry references kept for them. A part of `Runtime`
/// (`runtime.states`), stored inline; changed under the interpreter lock only.
///
/// Invariants: every thread in `pool` is in `pooledThreads` (which also holds the main Lua
/// thread and the threads in use); `mainChunkRunning` follows `mainLuaThreadBusy` for readers
/// without the lock; `hasDeferredRefs` is set whenever `deferredRefs` is not empty.
struct LuaStates: ~Copyable {
    /// Idle Lua threads for the next block (`Runtime.takeThread`).
    let pool = LuaThreadPool()
    /// Every thread `takeThread` made (pooled or in use), and the main Lua thread, as opposed
    /// to coroutines.
    var pooledThreads = Set<OpaquePointer>()
    /// Whether a chunk runs on the main Lua thread `L` now.
    var mainLuaThreadBusy = false
    /// The same, readable without the lock (for Ctrl-C).
    let mainChunkRunning = Atomic<Bool>(false)
    /// The registry table that keeps `admin` reachable.
    var anchorsRef: Int32 = LUA_NOREF
    /// References released where the lock is not held, dropped when it is next taken.
    let deferredRefs = Mutex<[Int32]>([])
    let hasDeferredRefs = Atomic<Bool>(false)
    /// Bytes held by `dispatch.data` objects made since the last collector step, which Lua's
    /// collector cannot see (a userdata of 8 bytes may hold a megabyte).
    var externalBytes = 0
    /// The metatable of `dispatch.thread()` tables (a registry ref).
    var threadMetatable: Int32 = LUA_NOREF
    /// The code of the function last sent to a worker (`Parallel/FunctionCode.swift`).
    var lastFunctionCode = LastFunctionCode()

    /// Queues `ref` to be released when the lock is next taken. From any thread.
    func deferRef(_ ref: Int32) {
        deferredRefs.withLock { $0.append(ref) }
        hasDeferredRefs.store(true, ordering: .releasing)
    }

    /// The references queued so far, which are no longer queued.
    func takeDeferredRefs() -> [Int32] {
        deferredRefs.withLock { refs in
            defer { refs.removeAll() }
            hasDeferredRefs.store(false, ordering: .relaxed)
            return refs
        }
    }
}
