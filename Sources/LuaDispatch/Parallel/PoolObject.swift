import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.workers{count=, init=}`: worker interpreters that run jobs truly in parallel.
///
/// Jobs wait in one queue, in submission order. Each worker is a serial `DispatchQueue` with an
/// interpreter of its own (made on its first job, `init` run in it then); a free worker is woken
/// with one block that runs jobs until the queue is empty, so a busy pool costs a lock per job
/// and no Dispatch submission. A worker keeps its interpreter, and so its globals and loaded
/// modules, from one job to the next, until the pool is closed.
///
/// Waking a worker costs the submitting thread a futex wake, which is more than a small job
/// costs to run. So a worker is woken only for a job that the workers already looking for one
/// will not take, and a worker that finds the queue empty looks again for a while
/// (`spinTime`, yielding its core meanwhile) before it sleeps: a script that submits small
/// jobs in a loop finds that worker awake. One worker at a time looks so; the others sleep.
final class PoolObject: @unchecked Sendable {
    private static let nextID = Atomic<Int>(1)

    let id: Int
    let label: String
    let workers: [PoolWorker]
    /// `init`, copied once; each worker builds it before its first job.
    let initCode: CopiedGraph?
    private let state: Mutex<State>

    struct State {
        var jobs = FIFO<JobObject>()
        var idle: [PoolWorker]
        var closed = false
        /// Workers woken for a job that have not taken one yet, and the one looking for one.
        var searching = 0
        var spinning = false
    }

    /// How long a worker that found no job looks again before it sleeps.
    static let spinTime: UInt64 = 50_000
    /// Jobs queued, read without the lock by the worker that looks again.
    private let queuedJobs = Atomic<Int>(0)

    init(count: Int, initCode: CopiedGraph?) {
        let id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        self.id = id
        label = "pool #\(id)"
        self.initCode = initCode
        workers = (1...count).map { PoolWorker(pool: id, index: $0) }
        state = Mutex(State(idle: workers.reversed()))
    }

    deinit {
        // Nothing runs now (a running worker keeps its pool): let the workers' interpreters go.
        if !state.withLock({ $0.closed }) { for w in workers { w.retire() } }
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var queued: Int { state.withLock { $0.jobs.count } }

    /// Queues `job` and wakes a free worker; false when the pool is closed.
    func submit(_ job: JobObject) -> Bool {
        let (accepted, worker) = state.withLock { s -> (Bool, PoolWorker?) in
            guard !s.closed else { return (false, nil) }
            s.jobs.append(job)
            queuedJobs.add(1, ordering: .relaxed)
            guard s.jobs.count > s.searching, let worker = s.idle.popLast() else { return (true, nil) }
            s.searching += 1
            return (true, worker)
        }
        worker?.wake(self)
        return accepted
    }

    /// The next job for `worker`, or nil: then the worker is idle, or retires if the pool is
    /// closed. `searching`: whether the worker counts among those looking for a job (it was
    /// woken for one); false once it has one. On the worker's queue.
    fileprivate func next(for worker: PoolWorker, searching: inout Bool) -> JobObject? {
        enum Next { case job(JobObject), spin, idle }
        let next = state.withLock { s -> Next in
            if let job = take(&s, searching: &searching) { return .job(job) }
            if !s.closed && !s.spinning {
                s.spinning = true
                if !searching { s.searching += 1 }
                searching = true
                return .spin
            }
            stopSearching(&s, worker, &searching)
            return .idle
        }
        switch next {
        case .job(let job): return job
        case .idle: return nil
        case .spin:
            spin()
            return state.withLock { s in
                s.spinning = false
                if let job = take(&s, searching: &searching) { return job }
                stopSearching(&s, worker, &searching)
                return nil
            }
        }
    }

    private func take(_ s: inout State, searching: inout Bool) -> JobObject? {
        guard let job = s.jobs.popFirst() else { return nil }
        queuedJobs.subtract(1, ordering: .relaxed)
        if searching {
            s.searching -= 1
            searching = false
        }
        return job
    }

    private func stopSearching(_ s: inout State, _ worker: PoolWorker, _ searching: inout Bool) {
        if searching {
            s.searching -= 1
            searching = false
        }
        if !s.closed { s.idle.append(worker) }
    }

    /// Waits up to `spinTime` for a job to be queued, giving the core to any other thread
    /// that wants it meanwhile.
    private func spin() {
        let end = DispatchTime.now().uptimeNanoseconds + Self.spinTime
        while queuedJobs.load(ordering: .relaxed) == 0 && DispatchTime.now().uptimeNanoseconds < end {
            sched_yield()
        }
    }

    /// `pool:close()`: queued and running jobs finish, then the workers' interpreters close.
    func close() {
        let idle = state.withLock { s -> [PoolWorker] in
            guard !s.closed else { return [] }
            s.closed = true
            defer { s.idle = [] }
            return s.idle
        }
        for w in idle { w.retire() }
    }

    var description: String {
        let (queued, idle, closed) = state.withLock { ($0.jobs.count, $0.idle.count, $0.closed) }
        if closed { return "dispatch.pool #\(id) (\(workers.count) workers, closed)" }
        return "dispatch.pool #\(id) (\(workers.count) workers, \(workers.count - idle) busy, \(queued) queued)"
    }
}

/// One worker of a pool: a serial queue, and the interpreter only that queue touches.
final class PoolWorker: @unchecked Sendable {
    private static let nextLane = Atomic<Int>(0)

    let index: Int
    let queue: DispatchQueue
    /// The worker's lane in traces (`Tracer.jobSlice`) and its name there.
    let lane: UInt16
    let laneName: String
    // On `queue` only:
    private var interpreter: WorkerInterpreter?
    private var initialised = false
    private var initFailure: JobOutcome?

    init(pool: Int, index: Int) {
        self.index = index
        queue = DispatchQueue(label: "luadispatch.pool.\(pool).worker.\(index)")
        lane = Tracer.workerLane(Self.nextLane.wrappingAdd(1, ordering: .relaxed).oldValue)
        laneName = "pool #\(pool) worker \(index)"
    }

    /// Runs jobs until the pool has none.
    fileprivate func wake(_ pool: PoolObject) {
        queue.async { [self] in
            var searching = true
            while let job = pool.next(for: self, searching: &searching) { run(job, pool) }
            if pool.isClosed { interpreter = nil }  // not idle: no job will come
        }
    }

    /// Closes the interpreter once the worker's queue is free.
    fileprivate func retire() {
        queue.async { [self] in interpreter = nil }
    }

    private func run(_ job: JobObject, _ pool: PoolObject) {
        guard let code = job.start() else { return }  // cancelled
        let tracer = job.runtime.tracer
        let worker: WorkerInterpreter
        if let interpreter {
            worker = interpreter
        } else {
            worker = WorkerInterpreter(libraries: job.runtime.libraries, budget: job.runtime.control.budget)
            interpreter = worker
        }
        let owner = job.runtime
        if !initialised {
            initialised = true
            if let initCode = pool.initCode {
                let started = tracer != nil ? Tracer.clock() : 0
                let outcome = owner.control.ownedWorkers.run(worker, for: owner) { worker.call(initCode) }
                if case .failed = outcome {
                    // An init that the owner's limit ended runs again with the next job.
                    if owner.terminationKind != nil { initialised = false } else { initFailure = outcome }
                }
                tracer?.jobSlice(lane: lane, laneName: laneName, name: pool.label, kind: "init", source: "init",
                                 started: started, flow: 0)
            }
        }
        let started = tracer != nil ? Tracer.clock() : 0
        let outcome: JobOutcome
        if let initFailure {
            outcome = initFailure
        } else {
            outcome = owner.control.ownedWorkers.run(worker, for: owner) {
                switch consume code {
                case .plain(let job): worker.call(job)
                case .graph(let graph): worker.call(graph)
                }
            }
        }
        tracer?.jobSlice(lane: lane, laneName: laneName, name: pool.label, kind: "job", source: job.source ?? "?",
                         started: started, flow: job.flow)
        job.finish(outcome)
    }
}
