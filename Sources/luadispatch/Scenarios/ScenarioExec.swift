import LuaDispatch

#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// `luadispatch scenarios exec FILE`: runs one scenario script in this process, as `luadispatch
/// FILE` would, and fails it (exit status 1) when a check fails, when it makes fewer or more
/// checks than its header declares, or when it leaves work that can never run; at its time limit
/// it prints what is still pending and exits with status 124. The runner starts each scenario
/// this way.
enum ScenarioExec {
    static let timedOutStatus: Int32 = 124

    /// A runtime still busy when the process ends: kept referenced, never closed (closing
    /// would wait for its parked blocks for ever).
    nonisolated(unsafe) static var abandoned: Runtime?

    static func run(_ path: String, _ options: ScenarioOptions, programName: String) -> Int32 {
        let header: ScenarioHeader
        do { header = try ScenarioHeader(path: path) } catch {
            Posix.writeStandardError("\(programName): \(error)\n")
            return 1
        }
        guard let declared = header.checks else {
            print("FAILED: \(path) declares no checks (a leading `-- expect: N checks` line)")
            return 1
        }
        setenv("LUADISPATCH_DELAY_SCALE", "\(options.scale)", 1)
        setenv("LUADISPATCH_SCENARIO_CHECK", options.check ? "1" : "0", 1)
        if let size = options.size { setenv("LUADISPATCH_SCENARIO_SIZE", "\(size)", 1) }
        let limit = options.timeout ?? header.timeLimit(scale: options.scale, size: options.size)

        let runtime = Runtime()
        ScenarioModule.install(runtime, scriptDirectory: directory(of: path))
        let watchdog = Watchdog(runtime: runtime, limit: limit)
        var problems: [String] = []
        do {
            try runtime.run(file: path, arguments: [])
            runtime.runUntilIdle()
            if runtime.pendingWork > 0 {
                problems.append("work left that can never run: \(runtime.outstandingWork() ?? "(none named)")")
            }
        } catch {
            // As `lua`: an error in the main chunk ends the script.
            Posix.writeStandardError("\(programName): \(error)\n")
            problems.append("the script stopped with an error")
        }
        watchdog.cancel()
        let made = ScenarioLedger.checks.load(ordering: .relaxed)
        if made != declared {
            problems.append("it made \(made) check\(made == 1 ? "" : "s"), and declares \(declared)")
        }
        for p in problems { print("FAILED: \(p)") }
        let status: Int32 = problems.isEmpty ? runtime.exitStatus : 1
        if runtime.pendingWork == 0 { runtime.close() } else { abandoned = runtime }
        fflush(nil)
        return status
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Ends the process at the time limit, after printing what the runtime still has pending.
/// A thread of its own, since the limit must hold even when every Dispatch worker is stuck.
final class Watchdog: @unchecked Sendable {
    private let runtime: Runtime
    private let limit: Double
    private var lock = pthread_mutex_t()
    private var wake = pthread_cond_t()
    private var cancelled = false

    init(runtime: Runtime, limit: Double) {
        self.runtime = runtime
        self.limit = limit
        pthread_mutex_init(&lock, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(&wake, &attr)
        pthread_condattr_destroy(&attr)
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<Watchdog>.fromOpaque(context!).takeRetainedValue().watch()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        if started == 0 { pthread_detach(thread) }
    }

    func cancel() {
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
        let pending = runtime.outstandingWork() ?? "nothing the runtime can name"
        // Keep what the script printed, unless a stuck thread holds standard output.
        if ftrylockfile(stdout) == 0 {
            fflush(stdout)
            funlockfile(stdout)
        }
        Posix.writeAll(1, Array("FAILED: timed out after \(Posix.twoDecimals(limit)) s; still pending: \(pending)\n".utf8))
        _exit(ScenarioExec.timedOutStatus)
    }
}
