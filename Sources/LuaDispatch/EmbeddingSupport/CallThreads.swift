import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Threads of the runtime's own on which `async` callers of Lua functions wait for the
/// interpreter. Not Dispatch's workers: on Linux, Swift's concurrency runs on Dispatch's thread
/// pool, so a worker blocked waiting for a busy interpreter is one fewer for Swift tasks (32
/// calls waiting for a block that computes held every task of the process back for 30 s,
/// until Dispatch had grown its pool one thread a second). Started when a call finds none idle,
/// at most `limit` of them (a busy interpreter needs no more waiters); an idle one ends after a
/// few seconds.
final class CallThreads: Sendable {
    static let shared = CallThreads(limit: 8)

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var threads = 0
        var idle = 0
    }

    private let limit: Int
    private let state = Mutex(State())
    /// Counts the jobs queued.
    private let queued = DispatchSemaphore(value: 0)

    init(limit: Int) { self.limit = limit }

    /// Runs `job` on one of the threads, soon.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let start = state.withLock { s in
            s.jobs.append(job)
            guard s.idle == 0, s.threads < limit else { return false }
            s.threads += 1
            return true
        }
        queued.signal()
        if start { startThread() }
    }

    private func startThread() {
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<CallThreads>.fromOpaque(context!).takeRetainedValue().serve()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        if started == 0 {
            pthread_detach(thread)
        } else {
            // No thread to be had: Dispatch's workers run what is queued, rather than nobody.
            state.withLock { $0.threads -= 1 }
            DispatchQueue.global().async { [self] in
                while queued.wait(timeout: .now()) == .success { take()?() }
            }
        }
    }

    private func take() -> (@Sendable () -> Void)? {
        state.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }
    }

    private func serve() {
        while true {
            state.withLock { $0.idle += 1 }
            let got = queued.wait(timeout: .now() + 3) == .success
            let stop = state.withLock { s in
                s.idle -= 1
                // A job queued while this thread was timing out is this thread's to run: its
                // submitter saw this thread idle and started none.
                guard !got, s.jobs.isEmpty else { return false }
                s.threads -= 1
                return true
            }
            if stop { return }
            if got { take()?() }
        }
    }
}
