import Synchronization

/// Slices of pool workers (`dispatch.workers`): their jobs and `init`, each worker a lane of its
/// own. A worker never holds the interpreter lock that guards the rest of the trace, so these
/// are recorded under a lock of their own and written with the rest (see `TraceJSON`).
struct WorkerSlices {
    struct Slice {
        let tid: UInt16
        /// Nanoseconds since the tracer's origin.
        let ts: UInt64
        let dur: UInt64
        /// The flow from the job's `submit` (0: none).
        let flow: UInt64
        let name: String
        let kind: String
        let source: String
    }

    var slices: [Slice] = []
    var lanes: [UInt16: String] = [:]
    var dropped = 0
}

extension Tracer {
    /// The trace lane of the `n`th pool worker of the process (from 0): after every thread's.
    static func workerLane(_ n: Int) -> UInt16 { UInt16(0x8000 | (n & 0x7fff)) }

    /// A job (or `init`) that ran on a worker's lane from `started` (`Tracer.clock()`) until now.
    /// Any thread; no interpreter lock.
    func jobSlice(lane: UInt16, laneName: String, name: String, kind: String, source: String, started: UInt64, flow: UInt64) {
        let now = Tracer.clock()
        let from = started > origin ? started - origin : 0
        let slice = WorkerSlices.Slice(tid: lane, ts: from, dur: now > started ? now - started : 0, flow: flow,
                                       name: name, kind: kind, source: source)
        workerSlices.withLock { w in
            if w.lanes[lane] == nil { w.lanes[lane] = laneName }
            guard w.slices.count < limit else {
                w.dropped += 1
                return
            }
            w.slices.append(slice)
        }
    }
}
