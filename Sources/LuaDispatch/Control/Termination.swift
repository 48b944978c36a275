import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Ending a script from outside: the machinery of the host's limits and `interrupt()`
/// (`Embedding/Limits.swift`), which end every Lua code of the interpreter. How: the lock asks
/// the code running now to end (`ld_lock_terminate`: the switch signal hooks it, and the hook
/// raises at each instruction until the code has unwound, so `pcall` cannot keep it), every
/// parked wait ends, blocks that have not started never run, sources are cancelled
/// and suspended tasks ended. Once no work is left the interpreter takes scripts again.
extension Runtime {
    /// Whether every blocking wait can be ended by a time limit or `interrupt()` (they then
    /// wait on a waiter the runtime can wake instead of blocking in Dispatch). On by default; a
    /// host that never ends its scripts from outside may turn it off (the CLI does, without
    /// `--time-limit`: its Ctrl-C ends only the main thread's wait, as `lua`'s does).
    package var endableWaits: Bool {
        get { control.parksAllWaits.load(ordering: .relaxed) }
        set { control.parksAllWaits.store(newValue, ordering: .relaxed) }
    }

    /// Whether an end's clean-up runs the finalizers the end left pending, each ended, for a
    /// second at most, so that they do not run in the next script. On by default; the CLI,
    /// which exits after an end, turns it off: its exit would wait for them.
    package var drainsFinalizersAfterEnd: Bool {
        get { control.drainsFinalizers.load(ordering: .relaxed) }
        set { control.drainsFinalizers.store(newValue, ordering: .relaxed) }
    }

    /// Why the interpreter is ending its code now, if it is.
    var terminationKind: LuaScriptError.Kind? {
        LuaScriptError.Kind(rawValue: control.termination.load(ordering: .acquiring)).flatMap { $0 == .error ? nil : $0 }
    }

    /// Ends every Lua code with `kind`'s error (see `interrupt()`); does nothing while an
    /// earlier end is still draining.
    func terminate(_ kind: LuaScriptError.Kind) {
        guard control.termination.compareExchange(expected: LuaScriptError.Kind.error.rawValue, desired: kind.rawValue,
                                          ordering: .acquiringAndReleasing).exchanged else { return }
        // Counted as work from here to the end of the clean-up below, so that the end is not
        // over, and the next script cannot start, before all of this has run. Counted only at
        // the clean-up, an end could be over as soon as the ended code had unwound: the next
        // script then started while this thread was still at `endParkedWaits` (its first wait
        // ended as "interrupted", with no kind) or before the clean-up (its sources and tasks
        // let go).
        workAdded()
        control.lastTermination.store(kind.rawValue, ordering: .releasing)
        ld_lock_terminate(lock, kind == .timeLimit ? 1 : 0)
        pokeWhileEnding()
        #if DEBUG
        Self.afterTerminateRequest?()
        #endif
        endParkedWaits()
        control.ownedWorkers.endAll(kind)
        ledger.afters.dropAll()
        // What holds work open (sources, suspended tasks, held queues) is let go under the lock,
        // which the code running gives up as it unwinds.
        Self.endings.async { [self] in
            defer { workDone() }
            acquire()
            // Closed meanwhile (a host or the CLI that stopped waiting for this): the state and
            // what it held are gone, and this block would use the freed state.
            guard !isClosed else { return release() }
            ledger.sources.cancelAll()
            closeTasks()
            ledger.queues.forEach(QueueObject.release)
            // Channels and other objects only the ended code referenced close when collected;
            // the finalizers an end left pending run here, each ended (not in the next script).
            _ = control.drainsFinalizers.load(ordering: .relaxed) ? ld_gc_collect_all(admin) : ld_gc_collect(admin)
            release()
            endTerminationIfIdle()
        }
    }

    /// Signals the lock's holder again every millisecond until the end is over (`ld_lock_poke`):
    /// a finalizer Lua runs after the first signal has its hooks off again, and each of a
    /// hundred looping finalizers waited for the next signal (at 10 ms, 1 s in all).
    private func pokeWhileEnding() {
        Self.deadlines.asyncAfter(deadline: .now() + .milliseconds(1)) { [self] in
            guard control.termination.load(ordering: .acquiring) > 0, !isClosed else { return }
            ld_lock_poke(lock)
            pokeWhileEnding()
        }
    }

    #if DEBUG
    /// Debug builds, for tests only: runs in `terminate` once the running code has been asked to
    /// end, before parked waits are ended (to hold `terminate` there). Absent from release builds.
    package nonisolated(unsafe) static var afterTerminateRequest: (() -> Void)?
    #endif

    /// Called whenever outstanding work or running Lua may have reached zero: an end that has
    /// drained (no work left, no Lua running) is over.
    func endTerminationIfIdle() {
        let kind = control.termination.load(ordering: .acquiring)
        guard kind > 0, ledger.pending.load(ordering: .acquiring) == 0, ledger.running.load(ordering: .acquiring) == 0,
              control.parkedWaiters.withLock({ $0.isEmpty }) else { return }  // a parked wait has yet to see the end
        // One thread ends it (-1 while it does): a second one, late, would disarm the deadline
        // of the run that starts once this end is over.
        guard control.termination.compareExchange(expected: kind, desired: -1, ordering: .acquiringAndReleasing).exchanged else { return }
        disarmDeadline()
        ld_lock_end_termination(lock)
        control.termination.store(0, ordering: .releasing)
    }

    /// Waits (up to `timeout` seconds) until the clean-up of an end in progress has run. The CLI
    /// waits before it exits, so that no thread of the runtime is still tearing work down while
    /// the process exits under it. (Not for the end to be over: work stuck in a C call, or a
    /// wait the end cannot reach, would hold the exit that long.)
    package func waitForCleanUp(timeout: Double) {
        guard control.termination.load(ordering: .acquiring) != 0 else { return }
        let done = DispatchSemaphore(value: 0)
        Self.endings.async { done.signal() }  // behind the clean-up `terminate` queued
        _ = done.wait(timeout: .now() + timeout)
    }

    /// Forgets the last end (before the next script).
    func clearLastTermination() { control.lastTermination.store(0, ordering: .releasing) }

    /// The message an ended wait raises.
    var terminationMessage: String { terminationKind == .timeLimit ? "time limit exceeded" : "interrupted" }

    // MARK: memory

    /// For a binding about to allocate `bytes` at once (a string from data, a copy): Lua's
    /// "not enough memory" if that would pass the memory limit. (Allocations in bindings are
    /// counted but never fail, so that no error unwinds through Swift: big ones check first;
    /// the binding then raises Lua's own memory error once it has returned, `ld_memory_settle`.)
    func checkMemory(_ bytes: Int) throws(LuaError) {
        guard let budget = control.budget, bytes > 0 else { return }
        guard ld_budget_used(budget) + Int64(bytes) <= ld_budget_limit(budget) else {
            ld_memory_refuse(budget)
            throw .message("not enough memory")
        }
    }

    // MARK: the deadline

    /// `armDeadline(_:)`'s work (Embedding/Limits.swift): arming moves the token on, so that a
    /// deadline armed before (or disarmed since) does nothing when it fires.
    func scheduleDeadline(_ seconds: Double) {
        let token = control.deadlineToken.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        let nanos = Runtime.nanoseconds(seconds)
        Self.deadlines.asyncAfter(deadline: .now() + .nanoseconds(Int(min(nanos, Int64(Int.max))))) { [self] in
            // Held strongly until it fires, disarmed or not: a weak reference's side table is
            // invisible to LeakSanitizer, which reported it as leaked at the CLI's exit.
            guard control.deadlineToken.load(ordering: .acquiring) == token else { return }
            terminate(.timeLimit)
        }
    }

    /// Where deadlines fire and ends clean up: serial queues, which libdispatch serves from its
    /// overcommitting pool. On a global queue a deadline waited for a thread of a pool that the
    /// very blocks it was to end had filled (a limits fuzz sequence ran on for ever).
    static let deadlines = DispatchQueue(label: "org.luadispatch.deadlines", qos: .userInteractive)
    static let endings = DispatchQueue(label: "org.luadispatch.endings", qos: .userInteractive)

    /// Disarms the deadline armed with `token`, if it is still the armed one.
    func disarmDeadline(token: Int) {
        _ = control.deadlineToken.compareExchange(expected: token, desired: token &+ 1, ordering: .acquiringAndReleasing)
    }

    /// Before a run or call: waits (up to 10 s) for an end still draining, arms `timeLimit`
    /// (or the runtime's), and returns whether one was armed.
    func beginLimitedRun(_ timeLimit: Double?) throws(LuaScriptError) -> Bool {
        if control.termination.load(ordering: .acquiring) != 0 {
            let deadline = DispatchTime.now() + 10
            while control.termination.load(ordering: .acquiring) != 0 && DispatchTime.now() < deadline {
                endTerminationIfIdle()
                usleep(1000)
            }
            guard control.termination.load(ordering: .acquiring) == 0 else {
                throw LuaScriptError(message: "the interpreter is still ending the previous script (work left: \(pendingWork))",
                                     kind: terminationKind ?? .interrupted)
            }
        }
        return armRunDeadline(timeLimit ?? limits.time)
    }

    /// `beginLimitedRun` for a call made with the interpreter held (a held Lua function the
    /// host calls): an end still draining fails it at once rather than waiting with the lock.
    func beginLimitedCall() throws(LuaScriptError) -> Bool {
        if let kind = terminationKind {
            throw LuaScriptError(message: "the interpreter is still ending the previous script (\(terminationMessage))", kind: kind)
        }
        return armRunDeadline(limits.time)
    }

    /// A run or call starts: the last end is forgotten, and `seconds` (if any) armed.
    private func armRunDeadline(_ seconds: Double?) -> Bool {
        clearLastTermination()
        guard let seconds else { return false }
        armDeadline(seconds)
        return true
    }

    /// After a run or call: its deadline goes once nothing it started is left.
    func endLimitedRun(_ armed: Bool) {
        guard armed else { return }
        let token = control.deadlineToken.load(ordering: .acquiring)
        if ledger.pending.load(ordering: .acquiring) == 0 { disarmDeadline(token: token) } else { control.disarmsWhenIdle.store(token, ordering: .releasing) }
    }

    // MARK: waits

    /// Ends every wait parked now with `.terminated`.
    func endParkedWaits() {
        let all = control.parkedWaiters.withLock { Array($0.values) }
        for waiter in all { waiter.finish(.terminated) }
    }
}
