import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.io.read` on a pipe, socket or terminal, as libdispatch's `dispatch_read` does it:
/// wait for data, read what has arrived until the descriptor would block (or `max` bytes, or end
/// of file), and complete. libdispatch completes a convenience read "with available data on
/// EAGAIN" (io.c); a channel read, which the other one-shot operations go through, waits for the
/// whole length instead, so a read of 100 bytes on a pipe that got 3 would wait for 97 more or
/// for the writer to close. Each such read takes its turn in the descriptor's read lane as a
/// carrier of its own: it starts once the reads submitted before it have completed, so two reads
/// never share what arrives and consecutive reads continue where the previous one ended.
enum IOStreamRead {
    private final class Carrier: Sendable {}

    static func start(_ shared: IODescriptors.Shared, max: Int,
                      _ finish: @escaping @Sendable (DispatchData, Int32) -> Void) {
        let carrier = Carrier()
        shared.submit(carrier: ObjectIdentifier(carrier), write: false) {
            whenReadable(shared.fd) {
                withExtendedLifetime(carrier) {}
                let (data, error) = drain(shared.fd, max)
                shared.completed(write: false)
                IODescriptors.release(shared)
                finish(data, error)
            }
        }
    }

    /// Runs `body` once `fd` is readable (data, end of file or an error), on the runtime's
    /// descriptor watcher; where epoll cannot watch it, on a global queue at once (the first
    /// read then waits for data).
    private static func whenReadable(_ fd: Int32, _ body: @escaping @Sendable () -> Void) {
        let token = Mutex<UInt64?>(nil)
        let once = Atomic<Bool>(false)
        let ready: @Sendable () -> Void = {
            guard !once.exchange(true, ordering: .acquiringAndReleasing) else { return }
            if let t = token.withLock({ $0 }) { DescriptorWatcher.shared?.remove(fd, t) }
            body()
        }
        guard let watcher = DescriptorWatcher.shared else { return DispatchQueue.global().async(execute: ready) }
        token.withLock { t in t = watcher.add(fd, write: false, ready) }
        if token.withLock({ $0 }) == nil { DispatchQueue.global().async(execute: ready) }
    }

    /// Reads until `max` bytes, end of file, or nothing more is queued: the data and an errno.
    private static func drain(_ fd: Int32, _ max: Int) -> (DispatchData, Int32) {
        var data = DispatchData.empty
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        while data.count < max {
            let n = read(fd, buffer, Swift.min(capacity, max - data.count))
            if n > 0 {
                data.append(UnsafeRawBufferPointer(start: buffer, count: n))
                if ld_fd_queued(fd) <= 0 { break }  // the next read would block
            } else if n == 0 {
                break  // end of file
            } else if errno == EINTR {
                continue
            } else {
                let e = errno
                return (data, e == EAGAIN || e == EWOULDBLOCK ? 0 : e)
            }
        }
        return (data, 0)
    }
}
