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

/// `makeFileSystemObjectSource` does not exist on Linux: a watch on the runtime's shared inotify
/// instance (`InotifyHub`), whose events the hub posts here; translated into Dispatch's event
/// names when the source's handler runs. It has no descriptor of its own (`fd` is -1).
final class FileWatcher: WatchedDescriptor, @unchecked Sendable {
    static let names = ["write", "delete", "rename", "attrib", "extend", "link"]

    let path: String
    let wanted: Set<String>
    private let hub: InotifyHub
    private var wd: Int32 = -1
    private struct Pending {
        var open = true
        var mask: UInt32 = 0
        var ready: (@Sendable () -> Void)?
    }
    private let pending = Mutex(Pending())
    // Touched only by the source's event handler, which Dispatch never runs concurrently.
    private var size: Int64 = 0
    private var links: UInt = 0

    /// Fails with an errno (ENOENT, EACCES, ...; ENOSPC naming the kernel's watch limit) when the
    /// path cannot be watched.
    static func make(path: String, events: Set<String>) -> Result<FileWatcher, Errno.Failure> {
        let hub: InotifyHub
        switch InotifyHub.shared() {
        case .failure(let e): return .failure(e)
        case .success(let h): hub = h
        }
        let watcher = FileWatcher(path: path, wanted: events, hub: hub)
        switch hub.add(path, watcher) {
        case .failure(let e): return .failure(e)
        case .success(let wd): watcher.wd = wd
        }
        return .success(watcher)
    }

    private init(path: String, wanted: Set<String>, hub: InotifyHub) {
        self.path = path
        self.wanted = wanted
        self.hub = hub
        super.init(fd: -1)
        (size, links) = measure()
    }

    override func attach(write: Bool, _ ready: @escaping @Sendable () -> Void) {
        let early = pending.withLock { p -> Bool in
            guard p.open else { return false }
            p.ready = ready
            return p.mask != 0
        }
        if early { ready() }
    }

    /// The hub posts every event itself: nothing to re-arm.
    override func rearm() {}

    override func close() {
        let wasOpen = pending.withLock { p -> Bool in
            defer { p.open = false; p.ready = nil }
            return p.open
        }
        if wasOpen { hub.remove(wd, self) }
    }

    /// An event's mask, from the hub: kept until the handler takes it, and the source told.
    func post(_ mask: UInt32) {
        let ready = pending.withLock { p -> (@Sendable () -> Void)? in
            guard p.open else { return nil }
            p.mask |= mask
            return p.ready
        }
        ready?()
    }

    private func measure() -> (Int64, UInt) {
        var st = stat()
        guard stat(path, &st) == 0 else { return (size, links) }
        return (Int64(st.st_size), UInt(st.st_nlink))
    }

    /// Takes the events posted since the last call; returns the wanted names that fired, in a
    /// fixed order. "extend" and "link" come from comparing size and link count with the
    /// previous event.
    func drain() -> [String] {
        let mask = pending.withLock { p -> UInt32 in
            defer { p.mask = 0 }
            return p.mask
        }
        var fired = Set<String>()
        if mask & UInt32(IN_MODIFY) != 0 { fired.insert("write") }
        if mask & UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) != 0 {
            fired.insert("write")  // a directory's entries changed, as NOTE_WRITE reports
            if mask & UInt32(IN_ISDIR) != 0 { fired.insert("link") }
        }
        if mask & UInt32(IN_ATTRIB) != 0 { fired.insert("attrib") }
        if mask & UInt32(IN_DELETE_SELF) != 0 { fired.insert("delete") }
        if mask & UInt32(IN_MOVE_SELF) != 0 { fired.insert("rename") }
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
        /// What to say instead of strerror's text (a kernel limit, named).
        var message: String?
        init(_ code: Int32, message: String? = nil) {
            self.code = code
            self.message = message
        }
    }
}
