import Dispatch
import Foundation

extension Runtime {
    /// Services the main queue on the calling (main) thread until no work is left: no block
    /// pending or running, no pending notify, no live source or channel. Returns early, with a
    /// warning on stderr, when the only work left sits on suspended or inactive queues.
    ///
    /// `dispatchMain()` is not used: it never returns and moves main-queue blocks to a worker.
    public func runUntilIdle() {
        drivingMainQueue.store(true, ordering: .releasing)
        defer { drivingMainQueue.store(false, ordering: .releasing) }
        var lastCheck = DispatchTime.now()
        while pending.load(ordering: .acquiring) > 0 {
            _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
            let now = DispatchTime.now()
            guard now.uptimeNanoseconds - lastCheck.uptimeNanoseconds > 50_000_000 else { continue }
            lastCheck = now
            if let report = stalledWork() {
                writeStderr("luadispatch: warning: exiting with work that can never run: \(report)\n")
                return
            }
        }
    }

    /// Describes the held queues if every outstanding unit of work is a block queued on a
    /// suspended or inactive queue (directly or through its target chain); nil otherwise.
    func stalledWork() -> String? {
        acquire()
        defer { release() }
        var held = 0, free = 0
        var parts: [String] = []
        let visit = { (q: QueueObject) in
            let n = q.queued.load(ordering: .relaxed)
            guard n > 0 else { return }
            guard q.isHeld else { free += n; return }
            held += n
            let why = q.inactive.load(ordering: .relaxed) ? "inactive"
                : q.suspensions.load(ordering: .relaxed) > 0 ? "suspended"
                : "its target is held"
            parts.append("'\(q.label)' (\(why), \(n) block\(n == 1 ? "" : "s"))")
        }
        visit(mainQueue)
        globalQueues.values.forEach(visit)
        queues.forEach(visit)
        guard free == 0, held > 0, held == pending.load(ordering: .acquiring) else { return nil }
        return parts.joined(separator: ", ")
    }
}
