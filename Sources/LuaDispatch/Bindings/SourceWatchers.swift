import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A descriptor a source watches that belongs to the runtime: an inotify instance, a pidfd, or
/// the runtime's own duplicate of a script's descriptor (`F_DUPFD_CLOEXEC`). It is watched by
/// `DescriptorWatcher` (never by libdispatch) and closed exactly once, in the source's cancel
/// handler, after it left the watcher: so a script that closes its descriptor right after
/// `cancel`, or a new descriptor that gets the same number, never meets a stale registration.
class WatchedDescriptor: @unchecked Sendable {
    let fd: Int32
    private struct State {
        var open = true
        var token: UInt64?
        var write = false
        /// epoll refused the descriptor (a regular file): it is always ready.
        var alwaysReady = false
        var ready: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    init(fd: Int32) { self.fd = fd }

    /// The runtime's own copy of `fd`, or an errno.
    static func duplicate(_ fd: Int32) -> Result<WatchedDescriptor, Errno.Failure> {
        let own = ld_dup_cloexec(fd)
        guard own >= 0 else { return .failure(Errno.Failure(errno)) }
        return .success(WatchedDescriptor(fd: own))
    }

    /// Starts watching; `ready` runs (on the watcher's queue) once per readiness report, until
    /// `rearm` asks for the next one.
    func attach(write: Bool, _ ready: @escaping @Sendable () -> Void) {
        let always = state.withLock { s -> Bool in
            guard s.open else { return false }
            s.write = write
            s.ready = ready
            s.token = DescriptorWatcher.shared?.add(fd, write: write, ready)
            s.alwaysReady = s.token == nil
            return s.alwaysReady
        }
        if always { ready() }
    }

    /// Asks for the next readiness report (after the handler ran, as Dispatch re-arms).
    func rearm() {
        let always: (@Sendable () -> Void)? = state.withLock { s in
            guard s.open else { return nil }
            if s.alwaysReady { return s.ready }
            if let token = s.token { DescriptorWatcher.shared!.rearm(fd, token, write: s.write) }
            return nil
        }
        always?()
    }

    func close() {
        state.withLock { s in
            guard s.open else { return }
            s.open = false
            if let token = s.token { DescriptorWatcher.shared!.remove(fd, token) }
            s.ready = nil
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

    /// A pid that no longer exists (or never did) gets a descriptor that is readable at once, so
    /// that the source reports `"exit"` as libdispatch does on Darwin (rdar://problem/8090801):
    /// a process that ended before the watch began, and was reaped, is still reported. (A zombie
    /// gets a pidfd, readable at once too; which of the two happens depends on who reaps it.)
    static func make(pid: Int32) -> Result<ProcessWatcher, Errno.Failure> {
        var fd = ld_pidfd_open(pid)
        if fd < 0 && errno == ESRCH { fd = ld_ready_fd() }
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
