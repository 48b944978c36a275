import Foundation

/// Rows that time whole processes.
enum ProcessRows {
    static let rows: [Row] = [startup]

    static var selfPath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The `luadispatch` binary next to this one.
    static var cli: String {
        URL(fileURLWithPath: selfPath).deletingLastPathComponent().appendingPathComponent("luadispatch").path
    }

    /// Wall time, peak resident memory and peak thread count of a child process run to completion.
    static func measure(_ argv: [String], stdout: String = "/dev/null", sample: Bool = true) throws -> (seconds: Double, peakRSS: Int, peakThreads: Int) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        var pid: pid_t = 0
        var status: Int32 = 0
        var peak = 0, threads = 0
        // The peak is read from /proc while the child runs: rusage's ru_maxrss would include this
        // process's own memory, which a spawned child inherits until it execs.
        let t = try timed {
            guard posix_spawn(&pid, argv[0], &actions, nil, cargs, environ) == 0 else { throw BenchError("cannot spawn \(argv[0])") }
            // Without `sample`, just wait: reading /proc every millisecond takes CPU time from a
            // child that needs every core (concurrent_map_primes, async_serial).
            if !sample { while waitpid(pid, &status, 0) == -1 && errno == EINTR {} }
            while sample && waitpid(pid, &status, WNOHANG) == 0 {
                peak = max(peak, procStatus(pid, "VmHWM:") * 1024)
                threads = max(threads, procStatus(pid, "Threads:"))
                usleep(1000)
            }
        }
        guard status == 0 else { throw BenchError("\(argv) exited with status \(status)") }
        return (t, peak, threads)
    }

    /// A number from /proc/PID/status (VmHWM in kB, Threads), 0 once the process is gone.
    static func procStatus(_ pid: pid_t, _ key: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) })
        else { return 0 }
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
    }

    /// Seconds to run `argv` to completion (stdout and stderr discarded).
    static func time(_ argv: [String]) throws -> Double { try times(argv).wall }

    /// Wall time and the child's CPU time (user + system) to run `argv` to completion: on a busy
    /// machine the CPU time leaves out the time the child waited for a core.
    static func times(_ argv: [String]) throws -> (wall: Double, cpu: Double) {
        // posix_spawn rather than Foundation's Process, whose own overhead would dominate.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        var pid: pid_t = 0
        var status: Int32 = 0
        var usage = rusage()
        let t = try timed {
            guard posix_spawn(&pid, argv[0], &actions, nil, cargs, environ) == 0 else { throw BenchError("cannot spawn \(argv[0])") }
            wait4(pid, &status, 0, &usage)
        }
        guard status == 0 else { throw BenchError("\(argv) exited with status \(status)") }
        let seconds = { (tv: timeval) in Double(tv.tv_sec) + Double(tv.tv_usec) / 1e6 }
        return (t, seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }

    /// `luadispatch -e ''` against `lua5.4 -e ''`, alternated, median of >= 30 each (3 in the
    /// smoke run). Peak RSS: each runs a chunk that reads its own VmHWM at its end (the same
    /// code for both), since a process this short ends before /proc can be polled reliably.
    static let startup = Row(
        name: "startup", unit: "ms", baselineName: "lua5.4", better: .lower,
        target: "<= 2.5x lua5.4; <= 8 MiB peak RSS", meets: { _, _, ratio in ratio <= 2.5 }
    ) { scale in
        let runs = max(3, Int(30 * scale))
        var lua: [Double] = [], base: [Double] = []
        for _ in 0..<runs {
            lua.append(try time([cli, "-e", ""]) * 1000)
            base.append(try time(["/usr/bin/lua5.4", "-e", ""]) * 1000)
        }
        let ours = try peakKiB(cli), theirs = try peakKiB("/usr/bin/lua5.4")
        let mib = { (k: Int) in String(format: "%.1f MiB", Double(k) / 1024) }
        return Measurement(lua: BenchMain.median(lua), baseline: BenchMain.median(base),
                           notes: "peak RSS \(mib(ours)) vs \(mib(theirs))", meets: ours <= 8 * 1024)
    }

    /// VmHWM (kB) at the end of `exe -e CODE`, which reads it from /proc/self/status.
    static func peakKiB(_ exe: String) throws -> Int {
        let out = NSTemporaryDirectory() + "/luadispatch-bench-hwm-\(getpid())"
        defer { unlink(out) }
        let code = "local f = io.open('/proc/self/status'); io.write(f:read('a'):match('VmHWM:%s*(%d+)')); f:close()"
        _ = try measure([exe, "-e", code], stdout: out)
        guard let text = try? String(contentsOfFile: out, encoding: .utf8), let k = Int(text) else {
            throw BenchError("\(exe): no VmHWM figure")
        }
        return k
    }
}
