import CLua
import CLuaShim
import CLuaStdlib
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
    // Here: the state and the designated initialisers. The public API a host calls is in
    // `Embedding/` (its README.md is the index), apart from the public stored properties below.

    let L: OpaquePointer
    let admin: OpaquePointer
    let lock: OpaquePointer
    let objects = ObjectTable()
    /// The work submitted and not finished, and what it runs on (`Work/WorkLedger.swift`).
    let ledger = WorkLedger()
    /// The host's limits (`Embedding/Limits.swift`; enforced in `Termination.swift`).
    public let limits: Limits
    /// When running code gives the interpreter up or stops (`Control/`).
    let control: InterpreterControl
    /// Where uncaught errors go, and what `dispatch.exit` does.
    @exclusivity(unchecked) var reporting = ErrorReporting()
    /// The Lua threads blocks borrow, and the state kept in the interpreter for them
    /// (`Core/LuaStates.swift`). Changes under the interpreter lock, which is what makes it
    /// exclusive: Swift's dynamic exclusivity checks on these hot paths would only cost time.
    @exclusivity(unchecked) var states = LuaStates()
    /// The runtime's view of `DispatchQueue.main` and the global queues.
    private(set) var mainQueue: QueueObject!
    var globalQueues: [String: QueueObject] = [:]
    /// What `dispatch.exit(code)` does; by default flush stdio and end the process.
    public var exitHandler: @Sendable (Int32) -> Void {
        get { reporting.exitHandler }
        set { reporting.exitHandler = newValue }
    }
    /// Receives uncaught errors (from asynchronous blocks, work items, source and I/O handlers)
    /// when no Lua handler is set with `dispatch.set_error_handler`. Called on the thread that
    /// ran the block, while the interpreter is held: do not call back into this runtime. The
    /// default prints the queue's label, the message and the traceback to standard error.
    public var uncaughtErrorHandler: @Sendable (LuaScriptError) -> Void {
        get { reporting.uncaughtErrorHandler }
        set { reporting.uncaughtErrorHandler = newValue }
    }

    /// The standard libraries the interpreter opened (`.restricted`: a sandbox). Its worker
    /// interpreters open the same.
    public let libraries: LuaLibraries

    /// The execution timeline's recorder, when tracing is on (see `Tracing/`).
    #if LUADISPATCH_NO_TRACING
    /// A build with every tracing hook compiled out, to measure what the hooks cost while
    /// tracing is off (scripts/bench-trace-off); never shipped.
    var tracer: Tracer? { nil }
    #else
    let tracer: Tracer?
    #endif

    /// Set by `close()`, under the lock: blocks that start afterwards do nothing.
    @exclusivity(unchecked) private(set) var isClosed = false

    /// An interpreter whose states charge `budget` (which it takes over, or retains for a worker
    /// interpreter charging its owner's: see `WorkerInterpreter`).
    init(libraries: LuaLibraries, ignoreEnvironment: Bool = false, tracing: Bool?, traceLimit: Int? = nil,
         switchInterval: Double? = nil, limits: Limits, budget: OpaquePointer?) {
        self.limits = limits
        #if !LUADISPATCH_NO_TRACING
        tracer = Runtime.makeTracer(tracing, limit: traceLimit)
        #endif
        self.libraries = libraries
        L = ld_newstate_budget(budget)
        lock = ld_lock_new()
        control = InterpreterControl(lock: lock, budget: budget)
        admin = lua_newthread(L)
        // New Lua threads copy the main thread's extra space: every state can find `self`.
        ld_extraspace(L).pointee = Unmanaged.passUnretained(self).toOpaque()
        ld_extraspace(admin).pointee = Unmanaged.passUnretained(self).toOpaque()
        _ = ld_thread_number()
        acquire()
        if ignoreEnvironment {
            lua_pushboolean(L, 1)
            Lua.setField(L, ld_registryindex(), "LUA_NOENV")
        }
        lua_pushcclosure(L, ld_openlibs, 0)
        lua_pushinteger(L, lua_Integer(libraries.rawValue))
        _ = ld_pcall(L, 1, 0, 0)
        lua_settop(L, 1)
        // Keep `admin` (index 1) reachable: anchors[admin] = true.
        ld_newtable(L)
        lua_pushvalue(L, 1)
        lua_pushboolean(L, 1)
        lua_rawset(L, -3)
        states.anchorsRef = luaL_ref(L, ld_registryindex())
        lua_settop(L, 0)
        // The main Lua thread runs chunks the host starts from the main OS thread (as `lua`
        // runs its script there: `coroutine.running()` says it is the main one).
        states.pooledThreads.insert(L)
        mainQueue = QueueObject(main: DispatchQueue.main)
        Module.install(self, global: !libraries.contains(.package))
        setUpSwitching(interval: switchInterval, on: L)
        release()
        traceAtExit()
    }

    /// Set when the runtime is attached to a stock `lua5.4`'s state (see `StockLuaState.swift`).
    var stockLua: StockLuaState?

    /// Attaches a runtime to `state`, a Lua state that stock `lua5.4` owns (loading the
    /// module), with `dispatch` built on it and left on top of `state`'s stack. The calling
    /// thread, `lua5.4`'s main thread, holds the interpreter lock from now on whenever Lua runs
    /// there: it is released only inside blocking calls and `dispatch.run`. Cleans up when the
    /// state closes (see `StockLuaState`). The runtime lives as long as the state.
    init(attachingTo state: OpaquePointer) {
        limits = .none
        #if !LUADISPATCH_NO_TRACING
        tracer = Runtime.makeTracer(nil, limit: nil)
        #endif
        libraries = .all  // `lua5.4`'s own choice, unknown here
        lua_rawgeti(state, ld_registryindex(), lua_Integer(LUA_RIDX_MAINTHREAD))
        L = lua_tothread(state, -1)
        ld_pop(state, 1)
        lock = ld_lock_new()
        control = InterpreterControl(lock: lock, budget: nil)
        // Nothing ends `lua5.4`'s scripts from outside (no limits, no `interrupt()` in C): waits
        // block as under the CLI without --time-limit.
        control.parksAllWaits.store(false, ordering: .relaxed)
        admin = lua_newthread(state)
        // Threads made from now on copy the main thread's extra space (see `ld_runtime_of`).
        for T in [L, state, admin] { ld_extraspace(T).pointee = Unmanaged.passUnretained(self).toOpaque() }
        _ = ld_thread_number()
        acquire()
        // Keep `admin` reachable: anchors[admin] = true.
        ld_newtable(state)
        lua_rotate(state, -2, 1)
        lua_pushboolean(state, 1)
        lua_rawset(state, -3)
        states.anchorsRef = luaL_ref(state, ld_registryindex())
        // `lua5.4`'s main Lua thread runs its chunks (see `takeThreadForHost`).
        states.pooledThreads.insert(L)
        mainQueue = QueueObject(main: DispatchQueue.main)
        stockLua = StockLuaState(self, state)
        Module.install(self, on: state, global: false)
        setUpSwitching(interval: nil, on: state)
        // `lua5.4`'s main Lua thread runs its code on this thread from now on.
        ld_running_push(L)
        luaL_getsubtable(state, ld_registryindex(), LUA_LOADED_TABLE)
        _ = Lua.getField(state, -1, "dispatch")
        ld_remove(state, -2)
        traceAtExit()
    }

    /// For `StockLuaState`: the interpreter is being closed by `lua5.4`, on the thread that holds
    /// the lock. Like `close()`, except that `lua5.4` closes the Lua state afterwards.
    func detachClosing() {
        guard !isClosed else { return }
        if ld_running_innermost() == L { ld_running_pop() }
        tearDown(closingState: false)
    }

    /// What `close()` and `detachClosing()` share. Lock held. `closingState`: the runtime owns
    /// the Lua state and closes it; `lua5.4` closes its own (and gets its SIGINT handling back).
    private func tearDown(closingState: Bool) {
        isClosed = true
        while ledger.running.load(ordering: .acquiring) > 0 {
            release()
            usleep(1000)
            acquire()
        }
        closeTasks()
        ledger.sources.cancelAll()
        writeTraceAtEnd()
        if tracer != nil { TraceAtExit.unregister(self) }
        reporting.errorHandlerRef = LUA_NOREF
        states.pool.removeAll()
        states.pooledThreads.removeAll()
        // Stopped outside `interruption`'s lock: the watcher's handler takes that lock while it
        // holds its own, which `stop` takes.
        control.interruption.withLock { s in defer { s = nil }; return s?.watcher }?.stop()
        if closingState { closeState() } else { ld_interrupt_disarm() }
        // Queued blocks still hold their queues: let Dispatch run them (as no-ops) and free them.
        // The main queue too: the host keeps using it after this interpreter is gone.
        ledger.queues.forEach(QueueObject.release)
        QueueObject.release(mainQueue)
    }

    /// Closes the Lua state. Closing frees every block: one left is a bug in Lua or in how the
    /// runtime used it (checked in debug builds, which the tests run).
    private func closeState() {
        let left = ld_closestate(L)
        assert(left == 0, "closing the Lua state left \(left) small blocks allocated")
    }

    deinit {
        close()
        ld_interrupt_forget(lock)
        ld_lock_free(lock)
        if let budget = control.budget { ld_budget_release(budget) }
    }

    /// `close()`'s work (Embedding/RuntimeRunning.swift).
    func closeInterpreter() {
        guard ld_lock_held() != lock else { return }
        defer { control.ownedWorkers.closeSpares() }  // after the lock is given up: each takes its own
        acquire()
        defer { release() }
        guard !isClosed else { return }
        // `lua5.4`'s state is closed by `lua5.4` (which detaches the runtime, see StockLuaState).
        guard stockLua == nil else { return }
        tearDown(closingState: true)
    }


    /// `waitUntilIdle(timeout:)`'s work (Embedding/RuntimeRunning.swift): `workDone` signals
    /// `idleSignal` while someone waits.
    func waitForIdle(timeout: Double?) -> Bool {
        let deadline = timeout.map { DispatchTime.now() + $0 }
        ledger.idleWaiters.wrappingAdd(1, ordering: .acquiringAndReleasing)
        defer { ledger.idleWaiters.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        while ledger.pending.load(ordering: .acquiring) > 0 {
            if let deadline, DispatchTime.now() >= deadline { return false }
            _ = ledger.idleSignal.wait(timeout: .now() + 0.05)
        }
        return true
    }

    /// Takes the interpreter for a block that Dispatch is running; false (and not held) once
    /// the interpreter is closed. Pair with `leaveLua()`.
    @inline(__always) func enterLua() -> Bool {
        acquire()
        return enterLuaHeld()
    }

    /// `enterLua` for a caller that has taken the lock already.
    @inline(__always) func enterLuaHeld() -> Bool {
        guard startLua() else {
            release()
            return false
        }
        return true
    }

    @inline(__always) func leaveLua() {
        finishLua()
        release()
    }

    /// The bookkeeping of `enterLuaHeld` without releasing the lock when closed: false once the
    /// interpreter is closed. Pair with `finishLua()`, lock held throughout.
    @inline(__always) func startLua() -> Bool {
        // Closed, or ending its code: blocks that had not started never run.
        if isClosed || control.termination.load(ordering: .relaxed) != 0 { return false }
        ledger.running.addUnderLock(1)
        if ld_thread_number() == 1 { ledger.mainThreadEntries.addUnderLock(1) }
        return true
    }

    /// The bookkeeping of `leaveLua`, lock kept.
    @inline(__always) func finishLua() {
        drainDeferred()
        ledger.running.addUnderLock(-1)
        if control.termination.load(ordering: .relaxed) != 0 { endTerminationIfIdle() }
    }

    /// `dispatch.exit`: never returns to Lua.
    func exitProcess(_ code: Int32) -> Never {
        writeTraceAtEnd()
        exitHandler(code)
        fflush(nil)
        _exit(code)
    }

    package static func from(_ L: OpaquePointer) -> Runtime {
        Unmanaged<Runtime>.fromOpaque(ld_runtime_of(L)!).takeUnretainedValue()
    }

    // MARK: the lock

    @inline(__always) func acquire() { ld_lock_acquire(lock) }
    @inline(__always) func release() { ld_lock_release(lock) }

    /// Whether the interpreter is ending its code (a time limit, an interrupt): asked after
    /// every wait, so read inline.
    @inline(__always) var terminating: Bool { control.terminating }

    /// Runs `body` (a blocking call) without holding the interpreter. References released
    /// meanwhile (e.g. by Dispatch destroying a queue's specifics) are dropped on the way back.
    @inline(__always) func unlocked<T>(_ body: () throws -> T) rethrows -> T {
        release()
        defer {
            acquire()
            drainDeferred()
            // Ended meanwhile: the code this thread goes back to raises too.
            if terminating { ld_running_hook_now() }
        }
        return try body()
    }

    // MARK: outstanding work

    @inline(__always) func workAdded() { ledger.pending.wrappingAdd(1, ordering: .relaxed) }

    @inline(__always) func workDone() {
        guard ledger.pending.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        // Plain loads first: this runs whenever the runtime goes idle (each sync round trip).
        if control.disarmsWhenIdle.load(ordering: .relaxed) != 0 {
            let token = control.disarmsWhenIdle.exchange(0, ordering: .acquiringAndReleasing)
            if token != 0 { disarmDeadline(token: token) }
        }
        if control.termination.load(ordering: .relaxed) != 0 { endTerminationIfIdle() }
        if ledger.drivingMainQueue.load(ordering: .acquiring) {
            // Wake the main thread's run loop so that it sees the runtime is idle.
            DispatchQueue.main.async {}
        }
        if ledger.idleWaiters.load(ordering: .acquiring) > 0 { ledger.idleSignal.signal() }
    }
}
