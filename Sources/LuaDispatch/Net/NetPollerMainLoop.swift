import Dispatch
import Synchronization

/// The main queue's readiness set served by the main loop itself.
///
/// A delivery of a poller's Dispatch source goes through libdispatch's event thread, which
/// then wakes the thread that runs the queue: for a request/response server on the main queue
/// that is a hand-off between two threads for nearly every request. While the main thread sits
/// in the main loop it can wait on the set's descriptor next to the main queue's own and serve
/// the ready sockets at once. The source stays suspended meanwhile, so that a readiness is
/// collected by one of the two only (the source, resumed when the loop ends, finds at most an
/// empty set); it serves whenever the main thread is elsewhere (a chunk running, a wait, a host
/// driving the main queue its own way).
extension NetPoller {
    /// Sets the main loop found ready and served (tests ask).
    static let mainLoopDeliveries = Atomic<Int>(0)

    /// The main queue's poller, its source suspended for the main loop to serve it; nil when
    /// the main queue has none. Main thread, in the main loop.
    static func claimForMainLoop(_ runtime: Runtime) -> NetPoller? {
        guard let main = runtime.mainQueue else { return nil }
        return pollers.withLock { all in
            guard let p = all[ObjectIdentifier(main)] else { return nil }
            if !p.servedByMainLoop {
                p.servedByMainLoop = true
                p.source.suspend()
            }
            return p
        }
    }

    /// Gives the main queue's poller back to its source when the main loop ends.
    static func releaseFromMainLoop(_ runtime: Runtime) {
        guard let main = runtime.mainQueue else { return }
        pollers.withLock { all in
            guard let p = all[ObjectIdentifier(main)], p.servedByMainLoop else { return }
            p.servedByMainLoop = false
            p.source.resume()
        }
    }
}

extension Runtime {
    /// One pass of a main loop (the CLI's, `dispatch.run`'s): the main queue, and the main
    /// queue's sockets served here rather than through their source's delivery. Main thread only;
    /// the loop gives the set back (`NetPoller.releaseFromMainLoop`) when it ends.
    func serviceMainQueueAndSockets(timeout: Int32) {
        if let poller = NetPoller.claimForMainLoop(self) {
            Self.serviceMainQueue(timeout: timeout, poller: poller)
        } else {
            _ = Self.serviceMainQueue(timeout: timeout)
        }
    }
}
