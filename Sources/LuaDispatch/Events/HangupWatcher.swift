import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Reports a hang-up on descriptors watched by read sources, which libdispatch on Linux loses.
///
/// libdispatch's epoll code only looks at `EPOLLIN` and `EPOLLOUT`: when a pipe's writer closes
/// after the reader drained it, epoll reports `EPOLLHUP` alone and the read source never fires
/// again, so a handler waiting for end of file waits for ever (`scripts/repro/read-source-eof.swift`).
/// One epoll instance of the runtime's own holds each read source's descriptor with no events
/// but `EPOLLONESHOT` (hang-up and error are always reported), and is itself watched by one
/// Dispatch read source. Entries are keyed by a token, never by a pointer, and removed before the
/// source closes its descriptor.
final class HangupWatcher: @unchecked Sendable {
    static let shared = HangupWatcher()

    private let epfd: Int32
    private let queue = DispatchQueue(label: "org.luadispatch.hangup")
    private let source: DispatchSourceRead
    private let entries = Mutex<(next: UInt64, callbacks: [UInt64: @Sendable () -> Void])>((1, [:]))

    private init() {
        epfd = ld_hup_create()
        source = DispatchSource.makeReadSource(fileDescriptor: epfd, queue: queue)
        source.setEventHandler { [unowned self] in drain() }
        if epfd >= 0 { source.activate() }
    }

    /// Watches `fd` (the runtime's own copy) until `unwatch`; `callback` runs once, on the
    /// watcher's queue, the first time the descriptor reports a hang-up or an error.
    func watch(_ fd: Int32, _ callback: @escaping @Sendable () -> Void) -> UInt64? {
        guard epfd >= 0 else { return nil }
        let token = entries.withLock { e in
            let t = e.next
            e.next += 1
            e.callbacks[t] = callback
            return t
        }
        if ld_hup_arm(epfd, fd, token, 0) != 0 {
            _ = entries.withLock { $0.callbacks.removeValue(forKey: token) }
            return nil
        }
        return token
    }

    /// Watches `fd` again after its callback ran (the next hang-up, e.g. of a FIFO's next
    /// writer); nothing when it is still armed.
    func rearm(_ fd: Int32, _ token: UInt64, _ callback: @escaping @Sendable () -> Void) {
        let armed = entries.withLock { e -> Bool in
            if e.callbacks[token] != nil { return true }
            e.callbacks[token] = callback
            return false
        }
        if armed { return }
        _ = ld_hup_arm(epfd, fd, token, 1)
    }

    /// Stops watching; call before closing `fd`.
    func unwatch(_ fd: Int32, _ token: UInt64) {
        _ = ld_hup_remove(epfd, fd)
        _ = entries.withLock { $0.callbacks.removeValue(forKey: token) }
    }

    private func drain() {
        var tokens = [UInt64](repeating: 0, count: 16)
        while true {
            let n = ld_hup_collect(epfd, &tokens, 16)
            if n <= 0 { return }
            for token in tokens[0..<Int(n)] {
                let callback = entries.withLock { $0.callbacks.removeValue(forKey: token) }
                callback?()
            }
            if n < 16 { return }
        }
    }
}
