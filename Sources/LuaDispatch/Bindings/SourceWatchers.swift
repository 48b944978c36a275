import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A descriptor a source watches that belongs to the runtime: an inotify instance, a pidfd, or
/// the runtime's own duplicate of a script's descriptor (`F_DUPFD_CLOEXEC`). Closed exactly
/// once, in the source's cancel handler, after Dispatch stopped watching it: so a script that
/// closes its descriptor right after `cancel`, or a new descriptor that gets the same number,
/// never reaches a registration libdispatch still holds (its epoll entries are keyed by number).
class WatchedDescriptor: @unchecked Sendable {
    let fd: Int32
    private let open = Atomic<Bool>(true)
    /// The `HangupWatcher` entry, removed before the descriptor is closed.
    private let hangupToken = Mutex<UInt64?>(nil)

    init(fd: Int32) { self.fd = fd }

    /// The runtime's own copy of `fd`, or an errno.
    static func duplicate(_ fd: Int32) -> Result<WatchedDescriptor, Errno.Failure> {
        let own = ld_dup_cloexec(fd)
        guard own >= 0 else { return .failure(Errno.Failure(errno)) }
        return .success(WatchedDescriptor(fd: own))
    }

    /// Reports a hang-up once through `HangupWatcher` (read sources: libdispatch loses it).
    func watchHangup(_ callback: @escaping @Sendable () -> Void) {
        guard open.load(ordering: .relaxed) else { return }
        let token = HangupWatcher.shared.watch(fd, callback)
        hangupToken.withLock { $0 = token }
    }

    /// Watches for the next hang-up again once the previous one was reported.
    func rearmHangup(_ callback: @escaping @Sendable () -> Void) {
        guard open.load(ordering: .relaxed), let token = hangupToken.withLock({ $0 }) else { return }
        HangupWatcher.shared.rearm(fd, token, callback)
    }

    func close() {
        if open.exchange(false, ordering: .relaxed) {
            if let token = hangupToken.withLock({ $0 }) { HangupWatcher.shared.unwatch(fd, token) }
            _ = Glibc.close(fd)
        }
    }
}

/// `makeFileSystemObjectSource` does not exist on Linux: an inotify instance watching one path,
/// read by a read source, translated into Dispatch's event names.
final class FileWatcher: WatchedDescriptor, @unchecked Sendable {
    static let names = ["write", "delete", "rename", "attrib", "extend", "link"]

    let path: String
    let wanted: Set<String>
    // Touched only by the source's event handler, which Dispatch never runs concurrently.
    private var size: Int64 = 0
    private var links: UInt = 0

    /// Fails with an errno (ENOENT, EACCES, ...) when the path cannot be watched.
    static func make(path: String, events: Set<String>) -> Result<FileWatcher, Errno.Failure> {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return .failure(Errno.Failure(errno)) }
        let mask = UInt32(IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_CREATE | IN_DELETE
            | IN_MOVED_FROM | IN_MOVED_TO)
        guard inotify_add_watch(fd, path, mask) >= 0 else {
            let e = errno
            Glibc.close(fd)
            return .failure(Errno.Failure(e))
        }
        return .success(FileWatcher(fd: fd, path: path, wanted: events))
    }

    private init(fd: Int32, path: String, wanted: Set<String>) {
        self.path = path
        self.wanted = wanted
        super.init(fd: fd)
        (size, links) = measure()
    }

    private func measure() -> (Int64, UInt) {
        var st = stat()
        guard stat(path, &st) == 0 else { return (size, links) }
        return (Int64(st.st_size), UInt(st.st_nlink))
    }

    /// Reads every pending inotify event; returns the wanted names that fired, in a fixed order.
    /// "extend" and "link" come from comparing size and link count with the previous event.
    func drain() -> [String] {
        var fired = Set<String>()
        let capacity = 4096
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer, capacity)
            if n <= 0 { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let mask = Int32(bitPattern: event.mask)
                if mask & Int32(IN_MODIFY) != 0 { fired.insert("write") }
                if mask & Int32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) != 0 {
                    fired.insert("write")  // a directory's entries changed, as NOTE_WRITE reports
                    if mask & Int32(bitPattern: UInt32(IN_ISDIR)) != 0 { fired.insert("link") }
                }
                if mask & Int32(IN_ATTRIB) != 0 { fired.insert("attrib") }
                if mask & Int32(IN_DELETE_SELF) != 0 { fired.insert("delete") }
                if mask & Int32(IN_MOVE_SELF) != 0 { fired.insert("rename") }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
        if !fired.isEmpty && !fired.contains("delete") {
            let (newSize, newLinks) = measure()
            if newSize > size { fired.insert("extend") }
            if newLinks != links { fired.insert("link") }
            (size, links) = (newSize, newLinks)
        }
        return FileWatcher.names.filter { fired.contains($0) && wanted.contains($0) }
    }
}

/// `makeProcessSource` does not exist on Linux: a pidfd becomes readable when the process exits.
final class ProcessWatcher: WatchedDescriptor, @unchecked Sendable {
    static let names = ["exit"]

    static func make(pid: Int32) -> Result<ProcessWatcher, Errno.Failure> {
        let fd = ld_pidfd_open(pid)
        guard fd >= 0 else { return .failure(Errno.Failure(errno)) }
        return .success(ProcessWatcher(fd: fd))
    }
}

extension Errno {
    /// An errno as a Swift error, for creation paths that report `nil, message, "ENAME"`.
    struct Failure: Error {
        let code: Int32
        init(_ code: Int32) { self.code = code }
    }
}
