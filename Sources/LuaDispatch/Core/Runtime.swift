import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One Lua interpreter driven by Dispatch.
///
/// Lua runs only while `lock` is held. Every block that runs Lua takes the lock and borrows a
/// Lua thread from `pool`, so that a block parked in a blocking call (which releases the lock)
/// keeps its own stack. Bookkeeping that needs a stack uses `admin`, never a parked thread.
public final class Runtime: @unchecked Sendable {
    let L: OpaquePointer
    let admin: OpaquePointer
    let lock: OpaquePointer
    let objects = ObjectTable()

    /// Outstanding work: blocks submitted and not finished, pending notifies, live sources, ...
    let pending = Atomic<Int>(0)
    /// Blocks running Lua right now (including ones parked in a blocking call).
    let running = Atomic<Int>(0)
    /// Errors that reached the default handler.
    let uncaughtErrors = Atomic<Int>(0)
    /// Whether the main thread is servicing the main queue (and must be woken when idle).
    let drivingMainQueue = Atomic<Bool>(false)

    private var pool: [OpaquePointer] = []
    private var anchorsRef: Int32 = LUA_NOREF
    private let deferredRefs = Mutex<[Int32]>([])
    private let hasDeferredRefs = Atomic<Bool>(false)

    /// Lua error handler set by `dispatch.set_error_handler` (a registry ref), under the lock.
    var errorHandlerRef: Int32 = LUA_NOREF
    /// Every queue made by this runtime, for the exit report; under the lock.
    var queues: [WeakQueue] = []
    /// The runtime's view of `DispatchQueue.main` and the global queues.
    private(set) var mainQueue: QueueObject!
    var globalQueues: [String: QueueObject] = [:]
    /// Functions registered with `register(module:functions:)`, by upvalue index; under the lock.
    var hostFunctions: [(name: String, fn: HostFunction)] = []
    /// Bytes held by `dispatch.data` objects made since the last collector step, which Lua's
    /// collector cannot see (a userdata of 8 bytes may hold a megabyte); under the lock.
    var externalBytes = 0
    /// The metatable of `dispatch.thread()` tables (a registry ref).
    var threadMetatable: Int32 = LUA_NOREF
    /// What `dispatch.exit(code)` does; by default flush stdio and end the process.
    public var exitHandler: @Sendable (Int32) -> Void = { code in
        fflush(nil)
        _exit(code)
    }
    /// Where uncaught-error reports go when no Lua handler is set.
    var reportUncaught: @Sendable (_ message: String, _ traceback: String, _ label: String?) -> Void

    /// Creates an interpreter with the standard libraries and `dispatch` preloaded.
    public init(openStandardLibraries: Bool = true) {
        L = luaL_newstate()
        lock = ld_lock_new()
        admin = lua_newthread(L)
        reportUncaught = { message, traceback, label in
            let origin = label.map { "error in block on queue '\($0)'" } ?? "error"
            writeStderr("luadispatch: \(origin): \(message)\n\(traceback)\n")
        }
        // New Lua threads copy the main thread's extra space: every state can find `self`.
        ld_extraspace(L).pointee = Unmanaged.passUnretained(self).toOpaque()
        ld_extraspace(admin).pointee = Unmanaged.passUnretained(self).toOpaque()
        _ = ld_thread_number()
        acquire()
        if openStandardLibraries { luaL_openlibs(L) }
        // Keep `admin` (index 1) reachable: anchors[admin] = true.
        ld_newtable(L)
        lua_pushvalue(L, 1)
        lua_pushboolean(L, 1)
        lua_rawset(L, -3)
        anchorsRef = luaL_ref(L, ld_registryindex())
        lua_settop(L, 0)
        mainQueue = QueueObject(main: DispatchQueue.main)
        Module.install(self)
        release()
    }

    /// `dispatch.exit`: never returns to Lua.
    func exitProcess(_ code: Int32) -> Never {
        exitHandler(code)
        fflush(nil)
        _exit(code)
    }

    static func from(_ L: OpaquePointer) -> Runtime {
        Unmanaged<Runtime>.fromOpaque(ld_extraspace(L).pointee!).takeUnretainedValue()
    }

    // MARK: the lock

    @inline(__always) func acquire() { ld_lock_acquire(lock) }
    @inline(__always) func release() { ld_lock_release(lock) }

    /// Runs `body` (a blocking call) without holding the interpreter.
    @inline(__always) func unlocked<T>(_ body: () throws -> T) rethrows -> T {
        release()
        defer { acquire() }
        return try body()
    }

    // MARK: outstanding work

    @inline(__always) func workAdded() { pending.wrappingAdd(1, ordering: .relaxed) }

    @inline(__always) func workDone() {
        if pending.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0,
           drivingMainQueue.load(ordering: .acquiring) {
            // Wake the main thread's run loop so that it sees the runtime is idle.
            DispatchQueue.main.async {}
        }
    }

    // MARK: Lua threads

    /// A Lua thread for one block: index 1 of its stack is the message handler. Lock held.
    func takeThread() -> OpaquePointer {
        if let T = pool.popLast() { return T }
        let T = lua_newthread(admin)!
        lua_rawgeti(admin, ld_registryindex(), lua_Integer(anchorsRef))
        lua_pushvalue(admin, -2)
        lua_pushboolean(admin, 1)
        lua_rawset(admin, -3)
        lua_settop(admin, 0)
        lua_pushcclosure(T, ld_msgh, 0)
        return T
    }

    func giveBack(_ T: OpaquePointer) {
        lua_settop(T, 1)
        pool.append(T)
    }

    // MARK: references released from any thread

    /// Releases a registry reference later, from a thread that holds the lock. Safe anywhere,
    /// including deinits that run while the lock is held.
    func deferUnref(_ ref: Int32) {
        guard ref != LUA_NOREF && ref != LUA_REFNIL else { return }
        deferredRefs.withLock { $0.append(ref) }
        hasDeferredRefs.store(true, ordering: .releasing)
    }

    /// Lock held.
    func drainDeferred() {
        guard hasDeferredRefs.load(ordering: .acquiring) else { return }
        let refs = deferredRefs.withLock { refs in
            defer { refs.removeAll() }
            hasDeferredRefs.store(false, ordering: .relaxed)
            return refs
        }
        for ref in refs { luaL_unref(admin, ld_registryindex(), ref) }
    }

    // MARK: running blocks

    /// Runs the Lua function at registry `ref` as a block of `queue`, then reports any error.
    /// Called by Dispatch on the queue's thread, without the lock.
    func runBlock(_ ref: Int32, on queue: QueueObject, barrier: Bool = false, consume: Bool, queued: Bool) {
        _ = ld_frame_push(Unmanaged.passUnretained(queue).toOpaque(), barrier ? 1 : 0)
        acquire()
        if queued { queue.queued.wrappingSubtract(1, ordering: .relaxed) }
        running.wrappingAdd(1, ordering: .relaxed)
        let T = takeThread()
        lua_rawgeti(T, ld_registryindex(), lua_Integer(ref))
        if consume { luaL_unref(T, ld_registryindex(), ref) }
        if ld_pcall(T, 0, 0, 1) != LUA_OK { reportError(T, label: queue.label) }
        giveBack(T)
        drainDeferred()
        running.wrappingSubtract(1, ordering: .relaxed)
        release()
        ld_frame_pop()
        workDone()
    }

    /// The label of the queue whose block the calling thread runs, if any.
    func currentQueue() -> QueueObject? {
        let n = ld_frame_count()
        if n > 0, let q = ld_frame_queue(n - 1) {
            return Unmanaged<QueueObject>.fromOpaque(q).takeUnretainedValue()
        }
        return ld_thread_number() == 1 ? mainQueue : nil
    }

    /// Reports the error that `ld_msgh` left on top of `T`'s stack, and pops it. Lock held.
    func reportError(_ T: OpaquePointer, label: String?) {
        var message = "(no message)"
        var traceback = ""
        if lua_type(T, -1) == LUA_TTABLE {
            lua_rawgeti(T, -1, 1)
            message = Lua.string(T, -1) ?? message
            lua_rawgeti(T, -2, 2)
            traceback = Lua.string(T, -1) ?? ""
            ld_pop(T, 2)
        } else if let s = Lua.string(T, -1) {
            message = s
        }
        ld_pop(T, 1)
        handleUncaught(T, message: message, traceback: traceback, label: label)
    }

    /// Gives an uncaught error to the Lua handler, or to the default report. Lock held.
    func handleUncaught(_ T: OpaquePointer, message: String, traceback: String, label: String?) {
        if errorHandlerRef != LUA_NOREF {
            let top = lua_gettop(T)
            lua_rawgeti(T, ld_registryindex(), lua_Integer(errorHandlerRef))
            Lua.push(T, message)
            Lua.push(T, traceback)
            if let label { Lua.push(T, label) } else { lua_pushnil(T) }
            if ld_pcall(T, 3, 0, 0) == LUA_OK { return }
            let failure = Lua.string(T, -1) ?? "(error object is not a string)"
            lua_settop(T, top)
            reportUncaught("error handler failed: \(failure) (while handling: \(message))", traceback, label)
        } else {
            reportUncaught(message, traceback, label)
        }
        uncaughtErrors.wrappingAdd(1, ordering: .relaxed)
    }
}

/// A registry reference owned by a Swift object; released (later, under the lock) on deinit.
final class LuaRef: @unchecked Sendable {
    let runtime: Runtime
    let ref: Int32

    init(_ runtime: Runtime, _ ref: Int32) {
        self.runtime = runtime
        self.ref = ref
    }

    deinit { runtime.deferUnref(ref) }
}

struct WeakQueue {
    weak var queue: QueueObject?
}

/// A mutable value shared with Dispatch closures; callers synchronise access themselves
/// (normally with the interpreter lock).
final class Shared<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Writes to standard error without buffering (and without touching the `stderr` global).
func writeStderr(_ text: String) {
    var text = text
    text.withUTF8 { buf in
        var offset = 0
        while offset < buf.count {
            let n = write(2, buf.baseAddress! + offset, buf.count - offset)
            if n <= 0 { break }
            offset += n
        }
    }
}
