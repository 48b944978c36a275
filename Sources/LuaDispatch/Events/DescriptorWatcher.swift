import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Readiness of the descriptors that sources watch, outside libdispatch's epoll code.
///
/// libdispatch on Linux keeps one epoll entry per descriptor number whose data is a pointer to
/// its own bookkeeping (a "muxnote"). Two defects of that code lost events and crashed long-lived
/// processes: it ignores a hang-up reported without data (`EPOLLHUP` alone: a pipe's writer closed
/// after the reader drained it), so end of file never arrived; and it frees a muxnote while
/// merging an event into a source that is being cancelled, then reads it again
/// (`_dispatch_event_loop_drain`, a bad pointer, in a process that creates and cancels many
/// descriptor sources). So read, write, file and process sources never hand a descriptor to
/// libdispatch: one epoll instance of the runtime's own holds them, keyed by a token (never a
/// pointer), one-shot (re-armed after each handler run, as Dispatch re-arms its sources), and
/// is itself watched by one Dispatch read source that is never cancelled. A report merges into
/// the source's custom Dispatch source (`data_replace`), which runs the handler on its queue.
final class DescriptorWatcher: @unchecked Sendable {
    private static let instance = Mutex<DescriptorWatcher?>(nil)

    /// The watcher, made on first use; nil with errno when its epoll instance cannot be created
    /// (EMFILE: the process is out of descriptors), tried again next time.
    static var shared: DescriptorWatcher? {
        instance.withLock { w in
            if w == nil {
                let fd = ld_watch_create()
                if fd >= 0 { w = DescriptorWatcher(epfd: fd) }
            }
            return w
        }
    }

    private let epfd: Int32
    private let queue = DispatchQueue(label: "org.luadispatch.descriptors", qos: .userInitiated)
    private let source: DispatchSourceRead
    private let entries = Mutex<(next: UInt64, ready: [UInt64: @Sendable () -> Void])>((1, [:]))

    private init(epfd: Int32) {
        self.epfd = epfd
        source = DispatchSource.makeReadSource(fileDescriptor: epfd, queue: queue)
        source.setEventHandler { [unowned self] in drain() }
        source.activate()
    }

    /// Watches `fd`; `ready` runs on the watcher's queue at each report. Nil with errno when
    /// epoll refuses the descriptor (EPERM: a regular file, always ready).
    func add(_ fd: Int32, write: Bool, _ ready: @escaping @Sendable () -> Void) -> UInt64? {
        let token = entries.withLock { e in
            defer { e.next += 1 }
            e.ready[e.next] = ready
            return e.next
        }
        guard ld_watch_arm(epfd, fd, token, write ? 1 : 0, 0) == 0 else {
            _ = entries.withLock { $0.ready.removeValue(forKey: token) }
            return nil
        }
        return token
    }

    /// Reports the next readiness (the previous report disarmed the entry).
    func rearm(_ fd: Int32, _ token: UInt64, write: Bool) {
        _ = ld_watch_arm(epfd, fd, token, write ? 1 : 0, 1)
    }

    /// Stops watching; the caller closes `fd` only afterwards.
    func remove(_ fd: Int32, _ token: UInt64) {
        _ = ld_watch_remove(epfd, fd)
        _ = entries.withLock { $0.ready.removeValue(forKey: token) }
    }

    private func drain() {
        var tokens = [UInt64](repeating: 0, count: 16)
        while true {
            let n = ld_watch_collect(epfd, &tokens, 16)
            if n <= 0 { return }
            for token in tokens[0..<Int(n)] {
                entries.withLock { $0.ready[token] }?()
            }
            if n < 16 { return }
        }
    }
}
