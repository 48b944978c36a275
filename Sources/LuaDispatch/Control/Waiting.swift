import CLua
import CLuaShim
import Dispatch
import Synchronization

/// How a wait ended.
enum WaitOutcome: Int {
    case waiting, done, timedOut, cancelled, interrupted, closed
    /// The interpreter is ending its code (a time limit, `Runtime.interrupt()`).
    case terminated
}

/// One wait, ended at most once by whichever comes first: the thing waited for, the timeout,
/// the task's cancellation, an interruption, or the interpreter closing. Subclasses say what
/// ending does (resume a task, wake a parked thread); `wake` runs on the thread that ended the
/// wait, without the interpreter lock, and must not touch Lua.
class Waiter: @unchecked Sendable {
    private let state = Atomic<Int>(WaitOutcome.waiting.rawValue)
    /// The queue on which the end of the wait is best delivered, when Dispatch can deliver it
    /// there (a notify, a timer): a task's own queue, where the block that ends the wait runs the
    /// task's next step itself. nil: any global queue.
    let home: QueueObject?
    /// Whether a delivery onto `home` is counted in `home.queued` (the task's next step can
    /// only run there); the one who ends the wait takes the count back.
    private var counted = false

    init(home: QueueObject? = nil) { self.home = home }

    var outcome: WaitOutcome { WaitOutcome(rawValue: state.load(ordering: .acquiring))! }
    var isWaiting: Bool { state.load(ordering: .acquiring) == WaitOutcome.waiting.rawValue }

    /// Ends the wait with `outcome` unless it has already ended; true when this call ended it.
    @discardableResult
    func finish(_ outcome: WaitOutcome) -> Bool {
        guard end(outcome) else { return false }
        wake(outcome)
        return true
    }

    /// What arms hand to Dispatch: the queue to deliver on, and the block that ends the wait
    /// there (on `home`, running as one of its blocks). Lock held.
    func delivery() -> (queue: DispatchQueue, block: @Sendable () -> Void) {
        guard let home else { return (Waiter.wakeups, { [self] in finish(.done) }) }
        if !counted {
            counted = true
            home.queued.wrappingAdd(1, ordering: .relaxed)
        }
        return (home.queue, { [self] in if end(.done) { wakeOnHome(.done) } })
    }

    private func end(_ outcome: WaitOutcome) -> Bool {
        guard state.compareExchange(expected: WaitOutcome.waiting.rawValue, desired: outcome.rawValue,
                                    ordering: .acquiringAndReleasing).exchanged else { return false }
        if counted, let home { home.queued.wrappingSubtract(1, ordering: .relaxed) }
        return true
    }

    func wake(_ outcome: WaitOutcome) {}
    /// Ending the wait from a block already running on `home`.
    func wakeOnHome(_ outcome: WaitOutcome) { wake(outcome) }

    /// Ends the wait with `.timedOut` at `timeout`, through a Dispatch timer.
    func expire(at timeout: Deadline) {
        switch timeout {
        case .forever: break
        case .time(let t): Waiter.wakeups.asyncAfter(deadline: t) { [self] in finish(.timedOut) }
        case .wall(let w): Waiter.wakeups.asyncAfter(wallDeadline: w) { [self] in finish(.timedOut) }
        }
    }

    /// Where waits without a home end (a parked thread's notify, sleep and timeouts): a serial
    /// queue, which libdispatch serves from its overcommitting pool. On a global queue they
    /// waited for a thread of a pool that busy blocks can fill: with 8 CPU-bound blocks on
    /// `dispatch.global()` a main-thread `g:wait(5)` on an empty group timed out, and a
    /// `dispatch.sleep(0.001)` never ended. Its blocks only signal.
    static let wakeups = DispatchQueue(label: "org.luadispatch.wakeups", qos: .userInteractive)
}

/// A waiter for a thread that blocks outside a task: ending the wait signals the thread.
final class ParkedWaiter: Waiter, @unchecked Sendable {
    let signal = DispatchSemaphore(value: 0)
    override func wake(_ outcome: WaitOutcome) { signal.signal() }
}

/// What every blocking call of the API waits for, described once per kind of wait (a queue's
/// `sync`, a group, a semaphore, a work item, a sleep, a task, an `await`). `Runtime.wait` is the
/// one path through which all of them go: inside a task it suspends the task and resumes it on
/// its queue when the wait is over; outside, it blocks the calling thread with the interpreter
/// released. Conformers are small structs, so the blocking path allocates nothing.
protocol Waitable {
    /// What the wait is, for messages (and for anything that observes waits).
    var kind: String { get }
    /// Whether `block` blocks natively (Dispatch's own wait, `queue.sync`, a sleep); otherwise
    /// a blocked thread parks on a waiter armed with `arm`.
    static var blocksNatively: Bool { get }
    /// Whether a native block may be replaced by parking on an armed waiter (false for `sync`,
    /// whose block runs on the calling thread).
    static var canPark: Bool { get }
    /// Why blocking the calling thread would deadlock, or nil. Only asked when blocking.
    func blockingRefusal() -> String?
    /// Starts the wait, once every check has passed; `end` follows whatever happens next.
    /// Lock held.
    mutating func begin() throws(LuaError)
    /// True when the wait is over already (for a semaphore: the unit is taken). Lock held.
    func poll() -> Bool
    /// Blocks the calling thread until done, or until `timeout`; true when done. Called without
    /// the interpreter lock; only when `blocksNatively`.
    func block(_ timeout: Deadline) -> Bool
    /// Arranges for `waiter.finish(.done)` when the thing waited for happens, through
    /// Dispatch's own mechanisms (a notify, a timer, a block); never blocks. Lock held.
    func arm(_ waiter: Waiter)
    /// Runs once the wait is over, whatever the outcome, before results are pushed. Lock held.
    func end(_ outcome: WaitOutcome)
    /// Pushes the call's results for `.done` or `.timedOut`, or throws. Lock held.
    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32
}

extension Waitable {
    static var blocksNatively: Bool { false }
    static var canPark: Bool { true }
    func blockingRefusal() -> String? { nil }
    func begin() throws(LuaError) {}
    func poll() -> Bool { false }
    func block(_ timeout: Deadline) -> Bool { false }
    func end(_ outcome: WaitOutcome) {}
    /// The usual results: `true`, or `false, "timeout"`.
    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 {
        Waits.push(a.L, outcome == .done)
    }
}

extension Runtime {
    /// The one path of every blocking call. Inside a task (its own coroutine) the task is
    /// suspended: `LD_SUSPEND` goes back to the trampoline, which yields, and the results are
    /// pushed when the task is resumed on its queue. Elsewhere the calling thread blocks without
    /// the interpreter, and the results are pushed here.
    @inline(__always)
    func wait<W: Waitable>(_ a: Args, _ w: consuming W, timeout: Deadline = .forever) throws(LuaError) -> Int32 {
        if ledger.tasks.count.load(ordering: .relaxed) > 0, let task = TaskObject.current(a.L) {
            return try task.suspend(a, w, timeout: timeout)
        }
        if let refusal = w.blockingRefusal() { throw .message(refusal) }
        try w.begin()
        let outcome: WaitOutcome
        var started: UInt64 = 0
        if w.poll() {
            outcome = .done
        } else if W.blocksNatively && !(W.canPark && (control.parksAllWaits.load(ordering: .relaxed)
                                                      || control.parksMainThreadWaits.load(ordering: .relaxed) && ld_is_main_thread() != 0)) {
            started = traceClock()
            let counted = ledger.exhaustion.enter(self)
            outcome = unlocked { w.block(timeout) } ? .done : .timedOut
            ledger.exhaustion.leave(counted)
        } else {
            started = traceClock()
            let counted = ledger.exhaustion.enter(self)
            outcome = park(w, timeout)
            ledger.exhaustion.leave(counted)
        }
        traceWait(a.name, w.kind, started)
        w.end(outcome)
        if outcome == .terminated || terminating {
            // The interpreter is ending its code: this code too, from here on.
            ld_running_hook_now()
            throw .message(terminationMessage)
        }
        if outcome == .interrupted {
            // Ctrl-C: lua.c's message, and its hook (which would fire again) is spent.
            if ld_is_main_thread() != 0 && consumeInterruption() {
                Lua.push(a.L, "interrupted!")
                throw .raise
            }
            throw .message("interrupted (in '\(a.name)')")
        }
        return try w.results(a, outcome)
    }

    /// Blocks on a waiter armed by `w`. On the main thread the waiter is published, so that
    /// `interruptMainThreadWait()` can end it.
    private func park<W: Waitable>(_ w: W, _ timeout: Deadline) -> WaitOutcome {
        let waiter = ParkedWaiter()
        let onMain = ld_is_main_thread() != 0
        if onMain {
            ensureInterruptionWatcher()
            // Under a host's lua.c (stock lua5.4), its handler may have replaced the runtime's
            // since the module loaded (`lua5.4 -l dispatch script.lua`): take SIGINT back.
            if stockLua != nil { armInterruption() }
            control.mainThreadWaiter.withLock { $0 = waiter }
            // A SIGINT just before the waiter was published found no wait to end.
            if interruptPending { waiter.finish(.interrupted) }
        }
        let key = ObjectIdentifier(waiter)
        control.parkedWaiters.withLock { $0[key] = waiter }
        defer {
            control.parkedWaiters.withLock { _ = $0.removeValue(forKey: key) }
            if onMain { control.mainThreadWaiter.withLock { $0 = nil } }
        }
        // An end that began before the waiter was published found no wait to end.
        if terminating { waiter.finish(.terminated) }
        w.arm(waiter)
        return unlocked {
            if !Waits.wait(waiter.signal, timeout) { waiter.finish(.timedOut) }
            // Still registered, so an end cannot be over yet: a wait that ended otherwise (the
            // group left by a block the end stopped) while the interpreter is ending is ended too.
            if terminating { return .terminated }
            return waiter.outcome
        }
    }

    /// Ends the wait the main thread is parked in, if any: the blocking call raises
    /// "interrupted". With `parksMainThreadWaits` set, every wait on the main thread parks
    /// (except `sync`, whose block runs on the calling thread).
    @discardableResult
    func interruptMainThreadWait() -> Bool {
        control.mainThreadWaiter.withLock { $0 }?.finish(.interrupted) ?? false
    }
}

/// Waiting with the runtime's timeouts, and the `true` / `false, "timeout"` convention.
enum Waits {
    static func wait(_ s: DispatchSemaphore, _ timeout: Deadline) -> Bool {
        switch timeout {
        case .forever: s.wait(); return true
        case .time(let t): return s.wait(timeout: t) == .success
        case .wall(let w): return s.wait(wallTimeout: w) == .success
        }
    }

    static func wait(_ g: DispatchGroup, _ timeout: Deadline) -> Bool {
        switch timeout {
        case .forever: g.wait(); return true
        case .time(let t): return g.wait(timeout: t) == .success
        case .wall(let w): return g.wait(wallTimeout: w) == .success
        }
    }

    static func push(_ L: OpaquePointer, _ ok: Bool) -> Int32 {
        lua_pushboolean(L, ok ? 1 : 0)
        if ok { return 1 }
        Lua.push(L, "timeout")
        return 2
    }
}
