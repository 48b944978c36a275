import Dispatch
import Synchronization

/// `dispatch.io{fd=, type="stream"}` on a stream socket: two DispatchIO channels under one
/// channel object, reads on the runtime's read duplicate and writes on its write duplicate
/// (`IODescriptors.Shared.split`).
///
/// Why: libdispatch on Linux stalls a stream channel that reads and writes one socket at once
/// (a loopback echo of 4 MiB per connection gets little or nothing back; with a descriptor per
/// direction it runs at GB/s: docs/net.md). Each direction keeps its own order, as libdispatch
/// keeps a channel's; what one channel does for both directions at once (its cleanup, a
/// barrier, `close`, limits) the pair does here.
enum SocketChannel {
    /// The reading and the writing channel; `cleanup` runs once, after both have cleaned up,
    /// with the first error either reported.
    static func make(_ shared: IODescriptors.Shared, queue: DispatchQueue,
                     cleanup: @escaping @Sendable (Int32) -> Void) -> (reader: DispatchIO, writer: DispatchIO) {
        let left = Mutex((channels: 2, error: Int32(0)))
        let each: @Sendable (Int32) -> Void = { error in
            let last: Int32? = left.withLock { s in
                if s.error == 0 { s.error = error }
                s.channels -= 1
                return s.channels == 0 ? s.error : nil
            }
            if let last { cleanup(last) }
        }
        let reader = DispatchIO(type: .stream, fileDescriptor: shared.fd, queue: queue, cleanupHandler: each)
        let writer = DispatchIO(type: .stream, fileDescriptor: shared.writeFD, queue: queue, cleanupHandler: each)
        return (reader, writer)
    }

    /// A barrier across both directions: `body` runs once the operations submitted before it,
    /// in either direction, have completed, and the operations submitted after it start once
    /// `body` has returned (libdispatch's barrier, for the pair). It takes a turn in each of the
    /// descriptor's two orders as an operation of its own: each order holds it until what is in
    /// flight there completed, and holds what comes next until it completed. No thread waits.
    static func barrier(_ shared: IODescriptors.Shared, _ body: @escaping @Sendable () -> Void) {
        let token = Token()
        let left = Mutex(2)
        for write in [false, true] {
            // `submit` runs this under the descriptor's lock: leave it before running `body`.
            shared.submit(carrier: ObjectIdentifier(token), write: write) {
                guard left.withLock({ $0 -= 1; return $0 }) == 0 else { return }
                DispatchQueue.global().async {
                    withExtendedLifetime(token) { body() }
                    shared.completed(write: false)
                    shared.completed(write: true)
                }
            }
        }
    }

    /// The identity a barrier takes its turns under (alive until it completed, so that no other
    /// object takes its identifier meanwhile).
    private final class Token: Sendable {}
}
