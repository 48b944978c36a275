// Running scripts and the work they leave, from a host thread: run, call, wait for idle,
// close. Each is a thin entry into the core's machinery (`Core/`).
import CLuaShim

extension Runtime {
    /// Runs a Lua file on the calling thread, with `arg` and `...` set as the `lua` command sets
    /// them, and returns the chunk's results. Blocks it submits go on running after it returns;
    /// main-queue blocks run whenever the host services the main queue. `timeLimit` (default:
    /// `Limits.time`) bounds the chunk and the work it leaves running: past it, every Lua code
    /// of the interpreter is ended and the error's kind is `.timeLimit` (see `Limits.swift`).
    @discardableResult
    public func run(file path: String, arguments: [String] = [], timeLimit: Double? = nil) throws(LuaScriptError) -> [LuaValue] {
        try refuseInsideLua("run(file:)")
        return try runChunk(file: path, arguments: arguments, timeLimit: timeLimit)
    }

    /// Runs a string of Lua code on the calling thread; see `run(file:arguments:)`.
    /// `name` is the chunk name used in messages (`=name` prints as `name`).
    @discardableResult
    public func run(string code: String, name: String = "=(command line)", arguments: [String] = [],
                    timeLimit: Double? = nil) throws(LuaScriptError) -> [LuaValue] {
        try refuseInsideLua("run(string:)")
        return try runChunk(string: code, name: name, arguments: arguments, timeLimit: timeLimit)
    }

    /// Calls the global function `name` with `arguments` on the calling thread and returns its
    /// results. Must not be called from inside a host function (the interpreter is busy there).
    /// `timeLimit` as for `run(string:)`.
    @discardableResult
    public func call(_ name: String, _ arguments: [LuaValue] = [], timeLimit: Double? = nil) throws(LuaScriptError) -> [LuaValue] {
        try callGlobal(name, arguments, timeLimit: timeLimit)
    }

    /// Counts a failure (as an uncaught error does) so that `exitStatus` becomes 1.
    public func recordFailure() { reporting.uncaughtErrors.wrappingAdd(1, ordering: .relaxed) }

    /// The exit status the CLI reports: 1 after any uncaught error, else 0.
    public var exitStatus: Int32 { reporting.uncaughtErrors.load(ordering: .relaxed) > 0 ? 1 : 0 }

    // MARK: the work scripts leave

    /// Services the main queue on the calling (main) thread until no work is left: no block
    /// pending or running, no pending notify, no live source or channel. Returns early, with a
    /// warning on stderr, when the only work left sits on suspended or inactive queues.
    ///
    /// `dispatchMain()` is not used: it never returns and moves main-queue blocks to a worker.
    /// Neither is Foundation's run loop (loading Foundation would triple start-up time): the
    /// main thread polls the main queue's eventfd and drains it, as that run loop does.
    /// Called from inside Lua (a host function), where it would wait for itself, it returns at once.
    public func runUntilIdle() {
        guard !isInsideLua else { return }
        serviceMainQueueUntilIdle()
    }

    /// Blocks the calling thread until no work is outstanding, or until `timeout` seconds pass
    /// (returns false then). For hosts that do not run the main queue on this thread; a host
    /// that does should call `runUntilIdle()` instead, since main-queue blocks count as work.
    /// Called from inside Lua (a host function), where it would wait for itself, it returns false
    /// at once.
    @discardableResult
    public func waitUntilIdle(timeout: Double? = nil) -> Bool {
        guard !isInsideLua else { return false }
        return waitForIdle(timeout: timeout)
    }

    /// Outstanding work: blocks, notifies, sources, I/O. Zero means idle.
    public var pendingWork: Int { ledger.outstandingUnits }

    /// What keeps the runtime from being idle, in words, or nil when nothing does: blocks running
    /// Lua (or parked in a blocking call), the main and custom queues with blocks or sources
    /// waiting (and whether the queue is suspended or inactive), group enters not yet left, and
    /// the rest (blocks on global queues, group notifies, delayed blocks, I/O, HTTP requests).
    /// It reads counters only, never the interpreter, so a watchdog may call it from any thread,
    /// even while Lua code runs or is stuck. Counts taken while work moves may be off by one.
    public func outstandingWork() -> String? { describeOutstandingWork() }

    // MARK: closing

    /// Tears the interpreter down: waits for blocks that are running Lua to finish, makes
    /// blocks that have not started yet do nothing, ends suspended tasks (each counts as
    /// outstanding work until then; their to-be-closed variables are not closed), releases queues it suspended or left
    /// inactive, and closes the Lua state (running every `__gc`). Idempotent. Call it from
    /// outside Lua (not from a host function or a block).
    public func close() { closeInterpreter() }

    /// Whether the calling thread holds this interpreter: it is inside a host function, a
    /// method or a conversion called by Lua code.
    var isInsideLua: Bool { ld_lock_held() == lock }

    /// Running a chunk needs the interpreter, which the calling thread holds already when it is
    /// inside a host function: waiting for it would wait for ever.
    private func refuseInsideLua(_ what: String) throws(LuaScriptError) {
        guard !isInsideLua else {
            throw LuaScriptError(message: "\(what): the calling thread is already running Lua (inside a host function, "
                                 + "compile with load(_:) and call the function)")
        }
    }
}
