import CLua
import CLuaShim
import Dispatch
import Synchronization

/// A task: a coroutine whose every step is a block on its queue. A step resumes the coroutine
/// until it finishes or suspends in a wait (`Runtime.wait`); the wait's waiter submits the next
/// step when the wait is over. State changes under the interpreter lock, except after the
/// interpreter closed (then only `abandon` runs, once).
final class TaskObject: @unchecked Sendable {
    enum State { case queued, running, suspended, finished }

    private static let nextID = Atomic<Int>(1)

    let runtime: Runtime
    let queue: QueueObject
    /// A number for messages and tracing: one task across all its steps.
    let id: Int
    /// The coroutine, anchored in the registry by `anchor` until the task finishes (then it is
    /// garbage, whoever still holds the task).
    let co: OpaquePointer
    private var anchor: LuaRef?
    /// Left once the task has finished (or was abandoned): what blocked threads wait on.
    let done = DispatchGroup()

    private(set) var state = State.queued
    /// The wait the task is suspended in: resumed through its waiter, finished by the
    /// continuation (`resumeWait`).
    private var pending: PendingWait?
    /// Set by `t:cancel()`; read by `t:is_cancelled()` from any thread.
    let cancelled = Atomic<Bool>(false)
    /// A cancellation not yet delivered: the next wait raises it.
    private var cancelPending = false
    /// The task this one waits on in `t:wait`, for cycle detection.
    var waitingOn: TaskObject?
    /// `file:line` of the task's function, for the trace (read before its first step).
    var traceSource: String?

    /// After finishing: the results (a table `{n = count, ...}`, anchored), or the error.
    private(set) var failure: TaskFailure?
    private var results: LuaRef?
    /// `t:wait` calls in progress: an error delivered to one of them is observed.
    var waiters = 0
    /// Unobserved-error bookkeeping (see `TaskOwner`): who started the task, and whether its
    /// handle was collected (then nobody can wait on it any more).
    private let owner: TaskOwner?
    var handleCollected = false
    /// The owner of the tasks this task starts, made when it starts its first.
    var childOwner: TaskOwner?
    /// Its native cost against the memory limit (its coroutine is Lua memory, charged as such).
    private let charge: MemoryCharge

    /// Starts `fn` (at `index` on `L`) as a task on `queue`. Lock held.
    init(_ rt: Runtime, _ L: OpaquePointer, fn index: Int32, queue: QueueObject) {
        runtime = rt
        self.queue = queue
        charge = rt.charge(NativeCost.task)
        id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        co = lua_newthread(L)!
        anchor = LuaRef(rt, luaL_ref(L, ld_registryindex()))
        lua_pushvalue(L, index)
        lua_xmove(L, co, 1)
        done.enter()
        owner = rt.taskOwner(for: L)
        rt.workAdded()
        rt.ledger.tasks.add(self)
        submitStep()
    }

    /// The task whose coroutine `L` is, if the calling thread is running one of its steps.
    @inline(__always) static func current(_ L: OpaquePointer) -> TaskObject? {
        guard let p = ld_task_current() else { return nil }
        let task = Unmanaged<TaskObject>.fromOpaque(p).takeUnretainedValue()
        return task.co == L ? task : nil
    }

    var isFinished: Bool { state == .finished }

    // MARK: steps

    fileprivate func submitStep() {
        queue.queued.wrappingAdd(1, ordering: .relaxed)
        queue.queue.async { [self] in step(queued: true) }
    }

    /// One step: a block on the task's queue that resumes the coroutine (`queued`: a block of
    /// its own, counted in `queue.queued`).
    fileprivate func step(queued: Bool) {
        if queued { queue.queued.wrappingSubtract(1, ordering: .relaxed) }
        let rt = runtime
        let requested = rt.traceClock()
        guard rt.enterLua() else { return abandon() }
        if state == .finished {  // cancelled before it started: it never runs
            rt.leaveLua()
            return
        }
        _ = ld_frame_push(Unmanaged.passUnretained(queue).toOpaque(), 0)
        let outer = ld_task_current()
        ld_task_set_current(Unmanaged.passUnretained(self).toOpaque())
        state = .running
        var results: Int32 = 0
        if requested != 0, traceSource == nil { traceSource = rt.traceSourceName(co) }
        let traced = rt.traceBegin(nil, requested, queue.label, .task, source: traceSource)
        let status = ld_resume(co, nil, 0, &results)
        rt.traceEnd(traced)
        ld_task_set_current(outer)
        switch status {
        case LUA_YIELD where pending != nil:
            state = .suspended
        case LUA_YIELD:
            fail(message: "coroutine.yield in a task's own coroutine: a task is suspended only by "
                 + "dispatch's waits (yield inside a coroutine the task creates instead)")
        case LUA_OK:
            keepResults(results)
            finish()
        default:
            fail(message: nil)
        }
        ld_frame_pop()
        rt.leaveLua()
    }

    /// Suspends the task in wait `w`: arms it and returns `LD_SUSPEND`, so that the trampoline
    /// yields; `resumeWait` finishes the call when a step resumes the coroutine. Lock held.
    func suspend<W: Waitable>(_ a: Args, _ w: W, timeout: Deadline) throws(LuaError) -> Int32 {
        if cancelPending {
            cancelPending = false
            throw .message(TaskFailure.cancelMessage(a.name))
        }
        guard lua_isyieldable(a.L) != 0 else {
            throw .message("'\(a.name)' cannot suspend the task here: a C function between the task and this "
                           + "call cannot yield (a metamethod called from C, table.sort, string.gsub, require); "
                           + "wait outside it")
        }
        var w = w
        try w.begin()
        if w.poll() {
            w.end(.done)
            return try w.results(a, .done)
        }
        let waiter = TaskWaiter(self)
        pending = PendingWait(name: a.name, waitable: w, waiter: waiter)
        w.arm(waiter)
        waiter.expire(at: timeout)
        ld_continue_with(TaskBinding.resumeWait, 0)
        return Int32(LD_SUSPEND)
    }

    /// The continuation of every wait a task suspended in: runs in the step that resumed it.
    static func resumeWait(_ a: Args) throws(LuaError) -> Int32 {
        guard let task = current(a.L), let p = task.pending else {
            throw .message("internal error: a wait resumed outside its task")
        }
        task.pending = nil
        let outcome = p.waiter.outcome
        p.waitable.end(outcome)
        if outcome == .cancelled {
            task.cancelPending = false
            throw .message(TaskFailure.cancelMessage(p.name))
        }
        return try p.waitable.results(Args(L: a.L, runtime: a.runtime, name: p.name), outcome)
    }

    // MARK: cancellation

    /// `t:cancel()`. Lock held.
    func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing), state != .finished else { return }
        switch state {
        case .queued:
            failure = TaskFailure(cancelledBeforeStart: runtime)
            finish()
        case .suspended:
            cancelPending = true
            pending?.waiter.finish(.cancelled)
        case .running:
            cancelPending = true
        case .finished:
            break
        }
    }

    // MARK: finishing

    /// Records the error on top of the coroutine (or `message`) and finishes. Lock held.
    private func fail(message: String?) {
        failure = TaskFailure(runtime, co, message: message, cancelled: cancelled.load(ordering: .relaxed))
        finish()
        if waiters == 0 { unobserved(inline: true) }
    }

    /// Nobody waits for the error the task ended with: it is held by the task's owner while that
    /// can still wait on it, else reported. Lock held.
    func unobserved(inline: Bool) {
        guard let failure, !failure.isCancellation, !failure.observed else { return }
        if let owner, !owner.ended, !handleCollected {
            owner.hold(self)
        } else {
            runtime.reportUnobserved(self, inline: inline)
        }
    }

    /// Moves the `count` results on top of the finished coroutine into a table. Lock held.
    private func keepResults(_ count: Int32) {
        Lua.pack(co, from: lua_gettop(co) - count + 1, count: count)
        results = LuaRef(runtime, luaL_ref(co, ld_registryindex()))
        lua_settop(co, 0)
    }

    private func finish() {
        anchor = nil
        state = .finished
        pending = nil
        waitingOn = nil
        done.leave()
        runtime.ledger.tasks.remove(self)
        childOwner?.end(runtime)
        runtime.workDone()
    }

    /// After the interpreter closed: the task will never run again. Runs once, without the lock.
    private func abandon() {
        guard state != .finished else { return }
        state = .finished
        pending = nil
        waitingOn = nil
        childOwner?.drop()
        done.leave()
        runtime.ledger.tasks.remove(self)
        runtime.workDone()
    }

    /// Ends the wait of a suspended task as `.closed` (its next step abandons it). For `close()`.
    func closeWait() { pending?.waiter.finish(.closed) }

    /// Pushes `true` and the results, or the error; marks an error observed. Lock held.
    func pushOutcome(_ L: OpaquePointer) throws(LuaError) -> Int32 {
        if let failure {
            failure.observed = true
            failure.push(L)
            throw .raise
        }
        lua_pushboolean(L, 1)
        guard let results else { return 1 }
        guard let n = Lua.unpack(L, ref: results.ref) else { throw .message("wait: too many results") }
        return n + 1
    }

    var description: String {
        let what: String
        switch state {
        case .queued: what = "queued"
        case .running: what = "running"
        case .suspended: what = "suspended in '\(pending?.name ?? "?")' (\(pending?.waitable.kind ?? "?") wait)"
        case .finished: what = failure == nil ? "finished" : failure!.isCancellation ? "cancelled" : "failed"
        }
        return "dispatch.task #\(id) (\(what), queue '\(queue.label)')"
    }
}

/// A wait a task is suspended in.
struct PendingWait {
    let name: String
    let waitable: any Waitable
    let waiter: TaskWaiter
}

/// Ending a task's wait submits the task's next step, or runs it when the end is delivered in a
/// block of the task's queue. The waiter lets go of the task then, so that a timer still pending
/// for a wait long over does not keep the task alive.
final class TaskWaiter: Waiter, @unchecked Sendable {
    private var task: TaskObject?

    init(_ task: TaskObject) {
        self.task = task
        super.init(home: task.queue)
    }

    override func wake(_ outcome: WaitOutcome) {
        let t = task
        task = nil
        t?.submitStep()
    }

    override func wakeOnHome(_ outcome: WaitOutcome) {
        let t = task
        task = nil
        t?.step(queued: false)
    }
}
