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
        // At the limit: what the runtime still has pending, as the scenario's failure.
        let watchdog = ProcessWatchdog(limit: limit, fd: 1, status: timedOutStatus) { [runtime] in
            let pending = runtime.outstandingWork() ?? "nothing the runtime can name"
            return "FAILED: timed out after \(Posix.twoDecimals(limit)) s; still pending: \(pending)\n"
        }
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
