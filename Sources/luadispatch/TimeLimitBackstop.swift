#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// `--time-limit` promises that the CLI exits with status 1 (API.md). The limit ends Lua code
/// through hooks, and Lua runs `__gc` metamethods with hooks off (lgc.c): a finalizer that never
/// returns outlives the limit, and nothing inside the process can end it. So, `grace` seconds
/// after the limit, a program still running says so and exits. (Embedding hosts have no such
/// last resort: docs/embedding.md, "What a limit cannot end".)
///
/// A thread of its own sleeps until then: a Dispatch timer's block (on a serial queue of its own)
/// did not run in 4 runs of 5 while the runtime's end waited behind the finalizer on a worker
/// (no thread was running it; not root-caused), and the program ran on.
enum TimeLimitBackstop {
    /// Longer than an end normally takes to drain, well under the limits fuzz round's 4 s.
    static let grace = 3.0

    private struct Armed {
        let deadline: timespec
        let message: String
    }

    static func arm(limit seconds: Double, programName: String) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = min(seconds + grace, 1e9)
        let nanos = Int(now.tv_nsec) + Int((total - total.rounded(.down)) * 1e9)
        let deadline = timespec(tv_sec: now.tv_sec + Int(total.rounded(.down)) + nanos / 1_000_000_000,
                                tv_nsec: nanos % 1_000_000_000)
        let message = "\(programName): time limit exceeded (\(RuntimeOptions.seconds(seconds))); code the limit "
            + "cannot interrupt (a __gc metamethod: Lua runs finalizers without hooks) was still running "
            + "\(RuntimeOptions.seconds(grace)) later\n"
        let context = Unmanaged.passRetained(Box(Armed(deadline: deadline, message: message))).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, 64 * 1024)
        var thread = pthread_t()
        if pthread_create(&thread, &attributes, { context in
            let armed = Unmanaged<Box<Armed>>.fromOpaque(context!).takeRetainedValue().value
            var deadline = armed.deadline
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
            // Output the program wrote stays; a thread stuck inside a write holds stdout's lock,
            // and this must not wait for it.
            if ftrylockfile(stdout) == 0 {
                fflush_unlocked(stdout)
                funlockfile(stdout)
            }
            _ = armed.message.withCString { write(2, $0, strlen($0)) }
            _exit(1)
        }, context) != 0 {
            Unmanaged<Box<Armed>>.fromOpaque(context).release()
        }
        pthread_attr_destroy(&attributes)
    }

    private final class Box<T>: @unchecked Sendable {
        let value: T
        init(_ value: T) { self.value = value }
    }
}
