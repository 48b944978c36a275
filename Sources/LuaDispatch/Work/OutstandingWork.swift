extension Runtime {
    /// `outstandingWork()`'s report (Embedding/RuntimeRunning.swift), from counters only.
    func describeOutstandingWork() -> String? {
        func plural(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        var parts: [String] = []
        let runningNow = ledger.running.load(ordering: .acquiring)
        if runningNow > 0 {
            parts.append(plural(runningNow, "block") + " running or parked in a blocking call")
        }
        var queued = 0
        let visit = { (q: QueueObject) in
            let n = q.waiting
            guard n > 0 else { return }
            queued += n
            let state = q.inactive.load(ordering: .relaxed) ? "inactive"
                : q.suspensions.load(ordering: .relaxed) > 0 ? "suspended" : "not suspended"
            parts.append("queue '\(q.label)' (\(state)): \(n) \(n == 1 ? "block or source" : "blocks or sources") waiting")
        }
        visit(mainQueue)
        ledger.queues.forEach(visit)
        if ledger.exhaustion.atLimit {
            parts.append(ThreadExhaustion.describe(ledger.exhaustion.blocked.load(ordering: .relaxed))
                         + ": queued work cannot start; waits inside tasks (dispatch.task) hold no thread")
        }
        let enters = ledger.openGroupEnters.count.load(ordering: .relaxed)
        if enters > 0 { parts.append(plural(enters, "group enter") + " not yet left") }
        let other = ledger.outstandingUnits - queued - runningNow
        if other > 0 {
            parts.append(plural(other, "more unit") + " of work (blocks on global queues, group notifies, "
                         + "delayed blocks, I/O or HTTP requests)")
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}
