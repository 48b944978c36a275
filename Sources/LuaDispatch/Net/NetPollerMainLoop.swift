import CLuaShim
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
///
/// On Linux the main queue's handle (an eventfd) joins the set meanwhile, so that the loop
/// blocks in one epoll_wait for both, as libuv's loop does, rather than a poll of the two
/// descriptors and then a collect of the set: one system call per wake-up instead of two or
/// three, which is most of the loop's own cost under small pipelined requests.
extension NetPoller {
    /// Sets the main loop found ready and served (tests ask).
    static let mainLoopDeliveries = Atomic<Int>(0)
    /// Times the main loop waited on the set alone, the main queue's handle in it (tests ask).
    static let mainLoopSetWaits = Atomic<Int>(0)

    /// The token of the main queue's handle in the set (members' tokens start at 1).
    static let mainQueueToken: UInt64 = 0

    /// The main queue's poller, its source suspended for the main loop to serve it; nil when
    /// the main queue has none. Main thread, in the main loop.
    static func claimForMainLoop(_ runtime: Runtime) -> NetPoller? {
        guard let main = runtime.mainQueue else { return nil }
        return pollers.withLock { all in
            guard let p = all[ObjectIdentifier(main)] else { return nil }
            if !p.servedByMainLoop {
                p.servedByMainLoop = true
                p.source.suspend()
                #if os(Linux)
                p.holdsMainQueueHandle = ld_netpoll_interest(p.set, ld_main_queue_handle(), mainQueueToken, 0, Int32(LD_NETPOLL_READ)) == 0
                #endif
            }
            return p
        }
    }

    /// Gives the main queue's poller back to its source when the main loop ends.
    static func releaseFromMainLoop(_ runtime: Runtime) {
        guard let main = runtime.mainQueue else { return }
        pollers.withLock { all in
            guard let p = all[ObjectIdentifier(main)], p.servedByMainLoop else { return }
            // Out before the source serves again: its handler runs on the main queue, whose
            // work would keep the set readable and the source firing.
            if p.holdsMainQueueHandle {
                p.holdsMainQueueHandle = false
                _ = ld_netpoll_interest(p.set, ld_main_queue_handle(), mainQueueToken, Int32(LD_NETPOLL_READ), 0)
            }
            p.servedByMainLoop = false
            p.source.resume()
        }
    }
}

extension NetPoller {
    /// Waits up to `timeout` ms on the set, the main queue's handle in it, and serves the ready
    /// sockets: whether the main queue has work. One collect only: the loop comes back at once.
    /// Main thread, in the main loop.
    func serveFromMainLoop(timeout: Int32) -> Bool {
        NetPoller.mainLoopSetWaits.add(1, ordering: .relaxed)
        return withUnsafeTemporaryAllocation(of: ld_netpoll_event.self, capacity: 64) { events in
            let n = ld_netpoll_wait(set, events.baseAddress, 64, timeout)
            guard n > 0 else { return false }
            var mainQueue = false
            for i in 0..<Int(n) where events[i].token == Self.mainQueueToken { mainQueue = true }
            if Int(n) > (mainQueue ? 1 : 0) {
                NetPoller.mainLoopDeliveries.add(1, ordering: .relaxed)
                serve(events, n, rounds: 1)
            }
            return mainQueue
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
