import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

extension Runtime {
    /// `runUntilIdle()`'s loop (Embedding/RuntimeRunning.swift, which says why it polls).
    func serviceMainQueueUntilIdle() {
        ledger.drivingMainQueue.store(true, ordering: .releasing)
        defer {
            NetPoller.releaseFromMainLoop(self)
            ledger.drivingMainQueue.store(false, ordering: .releasing)
        }
        var lastCheck = DispatchTime.now()
        while ledger.pending.load(ordering: .acquiring) > 0 {
            // Ended (a time limit, an interrupt) and no Lua runs any more: what is left does
            // nothing when it comes.
            if control.termination.load(ordering: .acquiring) != 0 && ledger.running.load(ordering: .acquiring) == 0 { return }
            serviceMainQueueAndSockets(timeout: 50)
            let now = DispatchTime.now()
            guard now.uptimeNanoseconds - lastCheck.uptimeNanoseconds > 50_000_000 else { continue }
            lastCheck = now
            if ledger.exhaustion.atLimit { ledger.exhaustion.check(self) }  // work queued while the pool is full
            if let report = stalledWork() {
                writeStderr("luadispatch: warning: exiting with work that can never run: \(report)\n")
                return
            }
        }
    }

    /// Runs what is ready on the main queue, waiting up to `timeout` ms for it (-1: for ever),
    /// or until `fd` (if not -1) is readable; returns whether `fd` is readable. Main thread only.
    static func serviceMainQueue(timeout: Int32, fd: Int32 = -1) -> Bool {
        let ready = pollMainQueue(timeout: timeout, fd: fd)
        if ready.mainQueue { ld_main_queue_drain() }
        return ready.fd
    }

    /// Waits up to `timeout` ms for the main queue's handle or `fd` (if not -1) to be readable;
    /// drains nothing. Main thread only.
    static func pollMainQueue(timeout: Int32, fd: Int32) -> (mainQueue: Bool, fd: Bool) {
        var fds = (pollfd(fd: ld_main_queue_handle(), events: Int16(POLLIN), revents: 0),
                   pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
        let n = withUnsafeMutableBytes(of: &fds) { p in
            poll(p.baseAddress!.assumingMemoryBound(to: pollfd.self), fd >= 0 ? 2 : 1, timeout)
        }
        guard n > 0 else { return (false, false) }
        return (fds.0.revents != 0, fd >= 0 && fds.1.revents != 0)
    }

    /// `serviceMainQueue` also waiting on `poller`'s set, whose ready sockets it serves first:
    /// a block run meanwhile may retire the set and close its descriptor. Main thread only.
    static func serviceMainQueue(timeout: Int32, poller: NetPoller) {
        if poller.holdsMainQueueHandle {
            if poller.serveFromMainLoop(timeout: timeout) { ld_main_queue_drain() }
            return
        }
        let ready = pollMainQueue(timeout: timeout, fd: poller.set)
        if ready.fd {
            NetPoller.mainLoopDeliveries.add(1, ordering: .relaxed)
            poller.drain()
        }
        if ready.mainQueue { ld_main_queue_drain() }
    }

    /// Blocks the main thread until `fd` is readable, servicing the main queue meanwhile
    /// without the interpreter held (the REPL's wait for a line). Called with the lock held.
    package func waitServicingMainQueue(fd: Int32) {
        ledger.drivingMainQueue.store(true, ordering: .releasing)
        defer { ledger.drivingMainQueue.store(false, ordering: .releasing) }
        unlocked {
            while !Self.serviceMainQueue(timeout: -1, fd: fd) {}
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
            let n = q.waiting
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
        ledger.queues.forEach(visit)
        guard free == 0, held > 0, held == ledger.outstandingUnits else { return nil }
        return parts.joined(separator: ", ")
    }
}
