import CLuaCLI
import LuaDispatch
import Scenarios
import TraceView

#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// `luadispatch`: the command line of `lua` (lua.c, run by CLuaCLI on this runtime's main Lua
/// thread), plus `run FILE` as an alias of `FILE`, the runtime's options before the script
/// (`RuntimeOptions`: `--trace FILE`, `--sandbox`), and the
/// `scenarios` and `trace` subcommands. After the script the main queue is serviced until no
/// work is left. No argument-parsing library: `lua`'s syntax (options end at the script name,
/// everything after belongs to the script) is lua.c's own loop.
enum CLI {
    static func main() -> Never {
        var args = CommandLine.arguments
        let programName = args.first.map { $0.isEmpty ? "lua" : $0 } ?? "luadispatch"
        if args.count > 1 {
            switch args[1] {
            case "scenarios":
                exit(ScenariosCommand.main(Array(args.dropFirst(2)), programName: programName))
            case "trace":
                exit(TraceCommand.main(Array(args.dropFirst(2)), programName: programName))
            case "run":
                args.remove(at: 1)
            default:
                break
            }
        }
        switch RuntimeOptions.take(args, programName: programName) {
        case .failure(let failure):
            writeError(failure.message)
            exit(1)
        case .success(let (options, luaArgs)):
            if options.help {
                print(Help.text(programName), terminator: "")
                exit(0)
            }
            exit(runLua(luaArgs, options, programName: programName))
        }
    }

    /// lua.c's argv, kept reachable until exit (LeakSanitizer reported it as lost otherwise).
    nonisolated(unsafe) private static var keptArgv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

    static func runLua(_ args: [String], _ options: RuntimeOptions, programName: String) -> Int32 {
        // C strings that live until exit (lua.c keeps pointers into argv).
        let argc = Int32(args.count)
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: args.count + 1)
        keptArgv = argv
        for (i, a) in args.enumerated() { argv[i] = strdup(a) }
        argv[args.count] = nil
        Session.argv = argv
        // Kept until exit: lua.c holds the pointers.
        ldcli_set_version_line(strdup(Version.line))
        ldcli_set_usage(strdup(Help.text(programName)))
        var first: Int32 = 0
        let mask = ldcli_collectargs(argv, &first)
        let noEnv = mask != LDCLI_HAS_ERROR && mask & LDCLI_HAS_NOENV != 0
        let limits = options.limits
        // The CLI's time limit covers the whole program, the script and the work it leaves: one
        // deadline armed here, not the runtime's per-run one, which goes once the runtime is
        // idle (and work that starts after a moment of idleness would then run unlimited).
        let runtime = Runtime(libraries: options.sandbox ? .sandbox : .all, ignoreEnvironment: noEnv,
                              limits: .init(memory: limits.memory))
        runtime.endableWaits = limits.time != nil
        runtime.drainsFinalizersAfterEnd = false  // the process exits after an end
        if let seconds = limits.time {
            runtime.armDeadline(seconds)
            TimeLimitBackstop.arm(limit: seconds, programName: programName)
            Session.timeLimit = seconds
            ldcli_set_message_filter(Session.namingTheLimit)
        }
        runtime.exitHandler = { code in
            ldcli_terminal_restore()  // `dispatch.exit` from a block while the prompt waits
            fflush(nil)
            _exit(code)
        }
        // The script, -e, LUA_INIT, standard input and the prompt too.
        if options.sandbox { ldcli_set_text_only(1) }
        runtime.uncaughtErrorHandler = { error in
            // Above the REPL's prompt, if a block's error comes while it waits.
            ldcli_output_begin()
            writeError("\(programName): \(error.label == nil ? "error: " : "")\(error)\n")
            ldcli_output_end(1)
        }
        runtime.enableInterruption {
            // SIGINT while the main queue is serviced after the script: as `lua`, which
            // would have ended with the script, stop with "interrupted!" and status 1.
            ldcli_terminal_restore()
            fflush(nil)
            writeError("\(programName): interrupted!\n")
            _exit(1)
        }
        // Also what keeps an interpreter that is not closed (below) referenced until exit.
        Session.runtime = runtime
        let script = first < argc ? args[Int(first)] : nil
        // The errors lua.c reports (the chunk's, the prompt's) are instants in the trace too.
        if runtime.isTracing { ldcli_set_error_hook { L, message in Runtime.from(L!).traceReportedError(String(cString: message!)) } }
        let ok = runtime.withMainLuaThread(traceSource: script) { L in ldcli_main(L, argc, argv, Session.waitForInput) } != 0
        guard ok else {
            fflush(nil)
            runtime.waitForCleanUp(timeout: 5)
            // Blocks the chunk started may still run, even parked for ever in a wait: close
            // only an idle interpreter (leak checkers then see a clean exit), and not one a
            // limit has ended (its lock still marks the ended main thread; see reliability.md).
            if runtime.pendingWork == 0 && runtime.lastTerminationKind == nil { runtime.close() }
            return 1
        }
        if runtime.pendingWork > 0 { runtime.armInterruption() }
        runtime.runUntilIdle()
        if let ended = runtime.lastTerminationKind {
            runtime.waitForCleanUp(timeout: 5)
            writeError("\(programName): \(ended == .timeLimit ? "time limit exceeded (\(RuntimeOptions.seconds(limits.time ?? 0)))" : "interrupted")\n")
            return 1
        }
        // After close: errors reported as the interpreter closes (a failed job's, found unretrieved
        // when its handle is collected) count too.
        runtime.close()
        return runtime.exitStatus
    }

    static func writeError(_ s: String) {
        fflush(stdout)
        fputs(s, stderr)
        fflush(stderr)
    }

    static func exit(_ status: Int32) -> Never {
        fflush(nil)
        Glibc.exit(status)
    }
}

/// What the C REPL calls back into.
enum Session {
    nonisolated(unsafe) static var runtime: Runtime?
    /// lua.c keeps pointers into argv (`progname`) until exit: referenced, not leaked.
    nonisolated(unsafe) static var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

    /// `--time-limit`'s seconds, for the report of an error the limit raised.
    nonisolated(unsafe) static var timeLimit: Double?

    /// An error lua.c reports after the time limit ended the code names the limit, as the
    /// CLI's own report does: "time limit exceeded (1 s)".
    static let namingTheLimit: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>? = { _, message in
        guard let message, let seconds = Session.timeLimit, Session.runtime?.lastTerminationKind == .timeLimit else { return nil }
        let text = String(cString: message)
        guard let found = text.firstRange(of: "time limit exceeded") else { return nil }
        return strdup(text[..<found.upperBound] + " (\(RuntimeOptions.seconds(seconds)))" + text[found.upperBound...])
    }

    /// The REPL waits for a line while the main queue keeps running.
    static let waitForInput: @convention(c) (Int32) -> Void = { fd in
        Session.runtime?.waitServicingMainQueue(fd: fd)
    }
}

/// `luadispatch trace ...`: the tracing subcommands (`trace view TRACE.json [-o FILE.html]`).
enum TraceCommand {
    static func main(_ arguments: [String], programName: String) -> Int32 {
        TraceView.main(arguments)
    }
}
