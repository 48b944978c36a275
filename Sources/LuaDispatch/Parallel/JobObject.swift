import CLua
import CLuaShim
import Dispatch
import Synchronization

/// How a job ended.
enum JobOutcome: @unchecked Sendable {
    /// Its results, copied out of the worker.
    case values(CopiedGraph)
    /// Its results when all are nil, booleans or numbers.
    case plain(CopiedGraph.Roots)
    /// Its error's message and the worker's traceback.
    case failed(message: String, traceback: String)
    case cancelled

    static let cancelMessage = "job cancelled before it started"
}

/// One `pool:submit(fn, ...)`: a function and its arguments, copied, waiting in the pool's queue
/// until a worker runs it; then its outcome, which `wait` and `notify` copy into the interpreter
/// that submitted it.
///
/// The job counts as outstanding work of that interpreter until it ends, and so does each
/// `notify` until its function has run. A worker never takes that interpreter's lock: ending a
/// job ends the waits on it and submits the notify blocks to their queues.
final class JobObject: @unchecked Sendable {
    enum Status { case queued, running, finished }

    private static let nextID = Atomic<Int>(1)

    let runtime: Runtime
    let pool: PoolObject
    let id: Int
    /// The flow from `submit` to the job's slice, and the function's `file:line` (tracing only).
    let flow: UInt64
    let source: String?
    /// Its native cost against the memory limit (a copied function and arguments are charged
    /// with their graph).
    private let charge: MemoryCharge
    private let state: Mutex<State>

    struct State {
        var status = Status.queued
        /// `fn` and its arguments, until a worker takes them.
        var code: Code?
        var outcome: JobOutcome?
        var waiters = WaiterQueue()
        /// The first `notify` (most jobs have one at most), then the others.
        var notify: Notify?
        var moreNotifies: [Notify] = []
        /// A `wait` re-raised the error, or a `notify` was there to receive it.
        var observed = false
        var handleCollected = false
        var reported = false
    }

    /// What a worker runs: a plain job, or a graph whose first root is the function.
    enum Code {
        case plain(PlainJob)
        case graph(CopiedGraph)
    }

    /// A `job:notify(queue, fn)`: `fn` waits in a block record of the submitting interpreter
    /// (as a pending `q:async` block's does) until it runs; its outstanding work is counted
    /// from the call. The record is touched only under that interpreter's lock.
    struct Notify: @unchecked Sendable {
        let queue: QueueObject
        let record: UnsafeMutablePointer<BlockRecord>
    }

    init(_ rt: Runtime, pool: PoolObject, code: consuming Code, flow: UInt64, source: String?) {
        runtime = rt
        self.pool = pool
        charge = rt.charge(NativeCost.job)
        id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        self.flow = flow
        self.source = source
        state = Mutex(State(code: consume code))
        rt.workAdded()
    }

    var status: Status { state.withLock { $0.status } }
    var isFinished: Bool { status == .finished }

    // MARK: running (on the worker)

    /// A worker takes the job: its code, or nil when it was cancelled.
    func start() -> Code? {
        state.withLock { s in
            guard s.status == .queued else { return nil }
            s.status = .running
            return s.code.take()
        }
    }

    /// The job ends: waits on it end, notify blocks are submitted, and the work it counted is
    /// done. Any thread, no interpreter lock.
    func finish(_ outcome: JobOutcome) {
        let (waiters, notify, more, report) = state.withLock { s in
            guard s.status != .finished else { return (WaiterQueue(), Notify?.none, [Notify](), false) }
            s.status = .finished
            s.code = nil
            s.outcome = consume outcome
            let waiters = s.waiters
            s.waiters = WaiterQueue()
            if s.notify != nil { s.observed = true }
            // A job its interpreter's limit or interrupt ended: the host is told of that end once.
            if case .failed? = s.outcome, runtime.terminationKind != nil { s.observed = true }
            defer { s.moreNotifies = [] }
            return (waiters, s.notify, s.moreNotifies, unobservedLocked(&s))
        }
        var list = waiters
        while let w = list.first {
            list.removeFirst()
            w.finish(.done)
        }
        if let notify { deliver(notify, first: true) }
        for n in more { deliver(n, first: false) }
        if report { reportUnobserved() }
        runtime.workDone()
    }

    /// `job:cancel()`: true when the job had not started (it never will).
    func cancel() -> Bool {
        let cancelled = state.withLock { s in
            guard s.status == .queued else { return false }
            s.status = .running  // no worker takes it now; `finish` ends it
            return true
        }
        if cancelled { finish(.cancelled) }
        return cancelled
    }

    // MARK: waiting

    /// Ends `waiter`'s wait when the job ends (now, if it has).
    func arm(_ waiter: Waiter) {
        let done = state.withLock { s in
            if s.status == .finished { return true }
            s.waiters.append(waiter)
            return false
        }
        if done { waiter.finish(.done) }
    }

    /// `job:notify(queue, fn)`. Lock held.
    func notify(_ n: Notify) {
        runtime.workAdded()
        let now = state.withLock { s -> Bool in
            if s.status == .finished {
                s.observed = true
                return true
            }
            if s.notify == nil {
                s.notify = n
                return false
            }
            s.moreNotifies.append(n)
            return false
        }
        if now { deliver(n, first: false) }
    }

    /// Submits `n`'s block to its queue. The first notify, kept in the job, goes as a plain C
    /// function with the job as its context (no closure to allocate).
    private func deliver(_ n: Notify, first: Bool) {
        n.queue.queued.wrappingAdd(1, ordering: .relaxed)
        if first, let raw = n.queue.rawQueue {
            ld_async_f(raw, nil, 0, Unmanaged.passRetained(self).toOpaque(), Self.runFirstNotify)
            return
        }
        n.queue.queue.async { [self] in run(n) }
    }

    private static let runFirstNotify: ld_work_fn = { context in
        let job = Unmanaged<JobObject>.fromOpaque(context!).takeRetainedValue()
        guard let n = job.state.withLock({ $0.notify }) else { return }
        job.run(n)
    }

    /// A notify block: `fn(true, results...)` or `fn(false, message, traceback)` on its queue.
    private func run(_ n: Notify) {
        let rt = runtime
        n.queue.queued.wrappingSubtract(1, ordering: .relaxed)
        rt.callHandler(on: n.queue, kind: .notify) { T in
            ld_record_take(T, n.record)  // the function, above its slab's table
            rt.ledger.blockRecords.give(n.record)
            return pushNotifyArguments(T)
        }
        rt.workDone()
    }

    // MARK: results (lock of the submitting interpreter held)

    private var outcome: JobOutcome? { state.withLock { $0.outcome } }

    /// Pushes `true` and the results of a job whose results are all nil, booleans or numbers
    /// (most jobs), and returns how many values it pushed; nil, having pushed nothing, for any
    /// other outcome. Such values are pushed without allocating once the stack has room (no
    /// collector step, so no `__gc` that could take this job's lock), so they are pushed under
    /// the job's lock, from the outcome itself rather than a copy of it.
    private func pushPlainResults(_ L: OpaquePointer) -> Int32? {
        let count = state.withLock { s -> Int in
            guard case .plain(let values)? = s.outcome else { return -1 }
            return values.count
        }
        guard count >= 0, lua_checkstack(L, Int32(clamping: count) + 8) != 0 else { return nil }
        state.withLock { s in
            guard case .plain(let values)? = s.outcome else { return }
            lua_pushboolean(L, 1)
            values.pushPlain(L)
        }
        return Int32(count) + 1
    }

    /// `job:wait`'s results for a finished job: `true, results...`, or raises its error.
    func pushWaitResults(_ L: OpaquePointer) throws(LuaError) -> Int32 {
        if let n = pushPlainResults(L) { return n }
        switch outcome {
        case .values(let graph)?:
            lua_pushboolean(L, 1)
            return try Self.push(L, graph) + 1
        case .plain(let values)?:
            guard lua_checkstack(L, Int32(clamping: values.count) + 8) != 0 else { throw .message("wait: too many results") }
            lua_pushboolean(L, 1)
            values.pushPlain(L)
            return Int32(values.count) + 1
        case .failed(let message, let traceback)?:
            state.withLock { $0.observed = true }
            Lua.push(L, traceback.isEmpty ? message : message + "\n" + traceback)
            throw .raise
        case .cancelled?, nil:
            throw .message(JobOutcome.cancelMessage)
        }
    }

    /// A notify function's arguments: `true, results...`, or `false, message, traceback`.
    private func pushNotifyArguments(_ L: OpaquePointer) -> Int32 {
        if let n = pushPlainResults(L) { return n }
        switch outcome {
        case .values(let graph)?:
            lua_pushboolean(L, 1)
            do throws(LuaError) { return try Self.push(L, graph) + 1 } catch {
                lua_settop(L, lua_gettop(L) - 1)
                lua_pushboolean(L, 0)
                Lua.push(L, "results could not be copied back")
                return 2
            }
        case .plain(let values)?:
            guard lua_checkstack(L, Int32(clamping: values.count) + 8) != 0 else {
                lua_pushboolean(L, 0)
                Lua.push(L, "too many results")
                return 2
            }
            lua_pushboolean(L, 1)
            values.pushPlain(L)
            return Int32(values.count) + 1
        case .failed(let message, let traceback)?:
            lua_pushboolean(L, 0)
            Lua.push(L, message)
            Lua.push(L, traceback)
            return 3
        case .cancelled?, nil:
            lua_pushboolean(L, 0)
            Lua.push(L, JobOutcome.cancelMessage)
            return 2
        }
    }

    /// Pushes every root of `graph` (fresh copies); returns how many.
    private static func push(_ L: OpaquePointer, _ graph: CopiedGraph) throws(LuaError) -> Int32 {
        let n = Int32(clamping: graph.roots.count)
        guard lua_checkstack(L, n + 8) != 0 else { throw .message("wait: too many results") }
        if graph.pushPlainRoots(L) { return n }
        let base = lua_gettop(L)
        for _ in 0..<n { lua_pushnil(L) }
        let built: Void? = graph.build(in: L) { push in
            for (k, v) in graph.roots.enumerated() {
                push(v)
                ld_replace(L, base + 1 + Int32(k))
            }
        }
        guard built != nil else {
            let message = Lua.string(L, -1) ?? "cannot load a function"
            lua_settop(L, base)
            throw .message("job results: \(message)")
        }
        return n
    }

    // MARK: errors nobody sees

    /// The job's handle was collected. Lock held.
    func handleCollected() {
        let report = state.withLock { s in
            s.handleCollected = true
            return unobservedLocked(&s)
        }
        if report { reportUnobserved() }
    }

    /// Whether the job failed and nothing can retrieve the error any more (reported once).
    private func unobservedLocked(_ s: inout State) -> Bool {
        guard case .failed? = s.outcome, !s.observed, s.handleCollected, !s.reported else { return false }
        s.reported = true
        return true
    }

    /// Hands an error nobody can retrieve to the submitting interpreter's error handler, in a
    /// block of its own (or straight to the host's handler once that interpreter is closing).
    private func reportUnobserved() {
        guard case .failed(let message, let traceback)? = outcome else { return }
        let rt = runtime, label = pool.label
        if ld_lock_held() == rt.lock && rt.isClosed {  // collected as the interpreter closes
            rt.uncaughtErrorHandler(LuaScriptError(message: message, traceback: traceback, label: label))
            rt.reporting.uncaughtErrors.wrappingAdd(1, ordering: .relaxed)
            return
        }
        rt.workAdded()
        DispatchQueue.global().async {
            rt.callHandler(on: nil) { T in
                rt.handleUncaught(T, message: message, traceback: traceback, label: label)
                return nil
            }
            rt.workDone()
        }
    }

    var description: String {
        let what: String
        switch state.withLock({ ($0.status, $0.outcome) }) {
        case (.queued, _): what = "queued"
        case (.running, _): what = "running"
        case (.finished, .values?), (.finished, .plain?): what = "done"
        case (.finished, .failed?): what = "failed"
        case (.finished, _): what = "cancelled"
        }
        return "dispatch.job #\(id) (\(what), \(pool.label))"
    }
}

/// `job:wait([timeout])`: `true, results...`, `false, "timeout"`, or the job's error re-raised.
struct JobWait: Waitable {
    let job: JobObject

    var kind: String { "job" }
    func poll() -> Bool { job.isFinished }
    func arm(_ waiter: Waiter) { job.arm(waiter) }

    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 {
        // A job that ended just as the timeout fired counts as ended.
        guard job.isFinished else { return Waits.push(a.L, false) }
        return try job.pushWaitResults(a.L)
    }
}
