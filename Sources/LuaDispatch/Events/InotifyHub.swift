import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The runtime's one inotify instance, shared by every file source: one descriptor, many watches,
/// events routed to their sources by watch descriptor (libuv's way). An instance per source, as
/// before, ran into the kernel's 128 instances per user (`fs.inotify.max_user_instances`): the
/// 129th file source failed with EMFILE. The limit that remains is the number of watches per user
/// (`fs.inotify.max_user_watches`), which creation names when it is reached.
///
/// The instance's descriptor is watched by `DescriptorWatcher` (never by libdispatch). At each
/// report the hub reads every queued event and posts each event's mask to the file watchers of its
/// watch descriptor (two sources on one file share the kernel's watch), which merge it into their
/// source; then it re-arms. A watch is removed from the kernel when its last watcher closes.
final class InotifyHub: @unchecked Sendable {
    static let mask = UInt32(IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_CREATE | IN_DELETE
        | IN_MOVED_FROM | IN_MOVED_TO)

    private static let instance = Mutex<InotifyHub?>(nil)

    /// The hub, made on first use; a failure (no inotify instance, or the descriptor watcher
    /// refusing it) is tried again next time.
    static func shared() -> Result<InotifyHub, Errno.Failure> {
        instance.withLock { hub in
            if let hub { return .success(hub) }
            guard let watcher = DescriptorWatcher.shared else { return .failure(Errno.Failure(errno)) }
            let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard fd >= 0 else { return .failure(failure(errno, path: nil)) }
            let made = InotifyHub(fd: fd)
            guard let token = watcher.add(fd, write: false, { made.drain() }) else {
                let e = errno
                close(fd)
                return .failure(Errno.Failure(e))
            }
            made.token = token
            hub = made
            return .success(made)
        }
    }

    let fd: Int32
    private var token: UInt64 = 0
    /// The file watchers of each watch descriptor.
    private let watches = Mutex<[Int32: [FileWatcher]]>([:])

    private init(fd: Int32) { self.fd = fd }

    /// Watches `path` for `watcher`; the watch descriptor, or an errno (with the limit named
    /// when it is the kernel's).
    func add(_ path: String, _ watcher: FileWatcher) -> Result<Int32, Errno.Failure> {
        watches.withLock { w in
            let wd = inotify_add_watch(fd, path, Self.mask)
            guard wd >= 0 else { return .failure(Self.failure(errno, path: path)) }
            w[wd, default: []].append(watcher)
            return .success(wd)
        }
    }

    /// `watcher` no longer wants events; the kernel's watch goes with the last one.
    func remove(_ wd: Int32, _ watcher: FileWatcher) {
        watches.withLock { w in
            guard var list = w[wd] else { return }
            list.removeAll { $0 === watcher }
            if list.isEmpty {
                w[wd] = nil
                _ = inotify_rm_watch(fd, wd)  // EINVAL once the kernel removed it (file deleted)
            } else {
                w[wd] = list
            }
        }
    }

    /// Reads every queued event and routes it; then asks for the next report.
    private func drain() {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, capacity)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            route(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        DescriptorWatcher.shared?.rearm(fd, token, write: false)
    }

    /// Posts each event of `events` (as read from the instance) to the watchers of its watch
    /// descriptor, outside the lock: a watcher takes its own lock, and closing takes its own
    /// before the hub's.
    func route(_ events: UnsafeRawBufferPointer) {
        var posts: [(FileWatcher, UInt32)] = []
        watches.withLock { w in
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= events.count {
                let event = events.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    // The kernel's queue overflowed and dropped events: every watcher is told
                    // something may have changed rather than lose an event.
                    for list in w.values { for f in list { posts.append((f, UInt32(IN_MODIFY | IN_ATTRIB))) } }
                    continue
                }
                if let list = w[event.wd] { for f in list { posts.append((f, event.mask)) } }
                // The kernel removed the watch (its file is gone): its number may come back
                // for another file, which must not reach these watchers.
                if event.mask & UInt32(IN_IGNORED) != 0 { w[event.wd] = nil }
            }
        }
        for (watcher, mask) in posts { watcher.post(mask) }
    }

    /// An errno from inotify as a failure; the kernel's limits are named with their values.
    static func failure(_ code: Int32, path: String?) -> Errno.Failure {
        switch code {
        case ENOSPC:
            return Errno.Failure(code, message: "the limit of inotify watches per user is reached ("
                                 + limit("max_user_watches", "max_inotify_watches") + "; raise it with sysctl)")
        case EMFILE where path == nil:
            return Errno.Failure(code, message: "no inotify instance: the limit of instances per user ("
                                 + limit("max_user_instances", "max_inotify_instances")
                                 + ") or of this process's descriptors is reached")
        default:
            return Errno.Failure(code)
        }
    }

    /// `fs.inotify.NAME = N`, and the user namespace's own limit where it is lower (a
    /// container's): the kernel applies both, and the sysctl shows only the first.
    private static func limit(_ name: String, _ namespaced: String) -> String {
        let global = sysctl("fs/inotify/" + name)
        var text = "fs.inotify.\(name) = " + (global.map { String($0) } ?? "?")
        if let own = sysctl("user/" + namespaced), own < global ?? .max {
            text += ", user.\(namespaced) = \(own) in this user namespace"
        }
        return text
    }

    private static func sysctl(_ path: String) -> Int? {
        let f = open("/proc/sys/" + path, O_RDONLY | O_CLOEXEC)
        guard f >= 0 else { return nil }
        defer { close(f) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let n = read(f, &bytes, bytes.count)
        guard n > 0 else { return nil }
        return Int(String(decoding: bytes[0..<n].filter { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self))
    }
}
