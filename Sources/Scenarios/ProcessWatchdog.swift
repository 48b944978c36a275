#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Ends the process `limit` seconds from now unless cancelled: writes what `report` returns to
/// `fd` (after what the program printed, unless a stuck thread holds standard output), then
/// `_exit(status)`. A thread of its own, since the limit must hold even when every Dispatch
/// worker is stuck, or the runtime's end waits behind code no hook reaches.
public final class ProcessWatchdog: @unchecked Sendable {
    private let limit: Double
    private let fd: Int32
    private let status: Int32
    private let report: @Sendable () -> String
    private var lock = pthread_mutex_t()
    private var wake = pthread_cond_t()
    private var cancelled = false

    public init(limit: Double, fd: Int32, status: Int32, report: @escaping @Sendable () -> String) {
        self.limit = limit
        self.fd = fd
        self.status = status
        self.report = report
        pthread_mutex_init(&lock, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(&wake, &attr)
        pthread_condattr_destroy(&attr)
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<ProcessWatchdog>.fromOpaque(context!).takeRetainedValue().watch()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        if started == 0 { pthread_detach(thread) }
    }

    public func cancel() {
        pthread_mutex_lock(&lock)
        cancelled = true
        pthread_cond_signal(&wake)
        pthread_mutex_unlock(&lock)
    }

    private func watch() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let whole = limit.rounded(.down)
        var deadline = timespec(tv_sec: now.tv_sec + Int(whole), tv_nsec: now.tv_nsec + Int((limit - whole) * 1e9))
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        pthread_mutex_lock(&lock)
        while !cancelled {
            if pthread_cond_timedwait(&wake, &lock, &deadline) == ETIMEDOUT { break }
        }
        let fire = !cancelled
        pthread_mutex_unlock(&lock)
        guard fire else { return }
        let text = report()
        if ftrylockfile(stdout) == 0 {
            fflush(stdout)
            funlockfile(stdout)
        }
        Posix.writeAll(fd, Array(text.utf8))
        _exit(status)
    }
}
