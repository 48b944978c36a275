import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// One scenario in a child process running this same binary, with standard input read from a
/// fixture file and a time limit (a backstop: the child enforces its own limit and reports).
enum ScenarioProcess {
    enum Outcome: Equatable {
        case exited(Int32)
        case signalled(Int32)
        case timedOut
        case notStarted(String)
    }

    /// Runs this binary with `arguments`; past `timeout` seconds it is killed.
    static func run(arguments: [String], environment: [String: String], stdin: String, timeout: Double) -> Outcome {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        let input = Posix.readFile(stdin, limit: 0) != nil ? stdin : "/dev/null"
        posix_spawn_file_actions_addopen(&fileActions, 0, input, O_RDONLY, 0)

        let executable = Posix.executablePath()
        var env = Posix.environ().filter { entry in
            !environment.keys.contains { entry.hasPrefix($0 + "=") }
        }
        env += environment.map { "\($0.key)=\($0.value)" }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }

        var child = pid_t()
        let spawned = posix_spawn(&child, executable, &fileActions, nil, argv, envp)
        guard spawned == 0 else { return .notStarted(Posix.errorText(spawned)) }
        let pid = child

        // waitpid blocks, so it runs on a worker while this thread keeps the time limit.
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var status: Int32 = 0
        DispatchQueue.global().async {
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            done.signal()
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            kill(pid, SIGKILL)
            done.wait()
            return .timedOut
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift cannot import as macros.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}
