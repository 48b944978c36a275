import CLuaCLI
import Scenarios

/// `--time-limit` promises that the CLI exits with status 1. The limit ends Lua code through
/// hooks, the carried libraries' C loops by their step counters, and code Lua runs with hooks
/// off by turning them on (internals.c); a C module's function that never returns to Lua (or
/// the hooks turned on again failing, liblua's layout not the one expected) still outlives it,
/// and nothing inside the process can end that. So, `grace` seconds after the limit, a program
/// still running says so and exits. (Embedding hosts have no such last resort: docs/embedding.md,
/// "What a limit cannot end".)
///
/// On a `ProcessWatchdog`'s thread: a Dispatch timer's block (on a serial queue of its own) did
/// not run in 4 runs of 5 while the runtime's end waited behind the finalizer on a worker (no
/// thread was running it; not root-caused), and the program ran on.
enum TimeLimitBackstop {
    /// Longer than an end normally takes to drain, well under the limits fuzz round's 4 s.
    static let grace = 3.0

    static func arm(limit seconds: Double, programName: String) {
        let message = "\(programName): time limit exceeded (\(RuntimeOptions.seconds(seconds))); code the limit "
            + "cannot interrupt (a C function that does not return to Lua) was still running "
            + "\(RuntimeOptions.seconds(grace)) later\n"
        _ = ProcessWatchdog(limit: min(seconds + grace, 1e9), fd: 2, status: 1) {
            ldcli_terminal_restore()  // the REPL's prompt may have it
            return message
        }
    }
}
