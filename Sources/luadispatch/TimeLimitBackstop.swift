import CLuaCLI
import Scenarios

/// `--time-limit` promises that the CLI exits with status 1 (API.md). The limit ends Lua code
/// through hooks, and Lua runs `__gc` metamethods with hooks off (lgc.c): a finalizer that never
/// returns outlives the limit, and nothing inside the process can end it. So, `grace` seconds
/// after the limit, a program still running says so and exits. (Embedding hosts have no such
/// last resort: docs/embedding.md, "What a limit cannot end".)
///
/// On a `ProcessWatchdog`'s thread: a Dispatch timer's block (on a serial queue of its own) did
/// not run in 4 runs of 5 while the runtime's end waited behind the finalizer on a worker (no
/// thread was running it; not root-caused), and the program ran on.
enum TimeLimitBackstop {
    /// Longer than an end normally takes to drain, well under the limits fuzz round's 4 s.
    static let grace = 3.0

    static func arm(limit seconds: Double, programName: String) {
        let message = "\(programName): time limit exceeded (\(RuntimeOptions.seconds(seconds))); code the limit "
            + "cannot interrupt (a __gc metamethod: Lua runs finalizers without hooks) was still running "
            + "\(RuntimeOptions.seconds(grace)) later\n"
        _ = ProcessWatchdog(limit: min(seconds + grace, 1e9), fd: 2, status: 1) {
            ldcli_terminal_restore()  // the REPL's prompt may have it
            return message
        }
    }
}
