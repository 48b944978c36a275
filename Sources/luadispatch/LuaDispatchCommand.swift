import ArgumentParser
import Foundation
import LuaDispatch
import TraceView

struct LuaDispatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "luadispatch",
        abstract: "Run Lua scripts on Grand Central Dispatch.",
        discussion: """
            The script runs on the main thread; then the main queue is serviced until no work \
            is left. The exit status is 1 after an uncaught error, else 0.
            """,
        subcommands: [RunCommand.self, ScenariosSubcommand.self, TraceSubcommand.self]
    )

    @Option(name: .customShort("e"), help: ArgumentHelp("Run a string of Lua code.", valueName: "code"))
    var code: String?

    func run() throws {
        guard let code else { throw CleanExit.helpRequest(self) }
        ScriptLauncher.exit(ScriptLauncher.run(.string(code), arguments: []))
    }
}

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run a Lua script file (arguments are in `arg` and `...`).")

    @Argument(help: "The script to run.") var file: String
    @Argument(parsing: .captureForPassthrough, help: "Arguments for the script.") var arguments: [String] = []

    func run() throws {
        ScriptLauncher.exit(ScriptLauncher.run(.file(file), arguments: arguments))
    }
}

/// `luadispatch scenarios ...`, parsed by the scenario runner itself.
struct ScenariosSubcommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenarios", abstract: "List and run the bundled tutorial scenarios.")

    @Argument(parsing: .allUnrecognized) var arguments: [String] = []

    func run() throws {
        ScriptLauncher.exit(ScenariosCommand.main(arguments))
    }
}

/// `luadispatch trace view TRACE.json [-o FILE.html] [--svg]`, parsed by TraceView itself.
struct TraceSubcommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace", abstract: "Draw a recorded execution timeline (trace view TRACE.json [-o FILE.html] [--svg]).")

    @Argument(parsing: .allUnrecognized) var arguments: [String] = []

    func run() throws {
        ScriptLauncher.exit(TraceView.main(arguments))
    }
}

/// Runs one script in this process the way the CLI promises: on the main thread, then
/// servicing the main queue until idle.
enum ScriptLauncher {
    enum Source {
        case file(String)
        case string(String)
    }

    static func run(_ source: Source, arguments: [String]) -> Int32 {
        let runtime = Runtime()
        var scriptDir: String?
        if case .file(let path) = source { scriptDir = URL(fileURLWithPath: path).deletingLastPathComponent().path }
        ScenarioModule.install(runtime, scriptDirectory: scriptDir)
        do {
            switch source {
            case .file(let path): try runtime.run(file: path, arguments: arguments)
            case .string(let code): try runtime.run(string: code, arguments: arguments)
            }
        } catch {
            // As `lua` does: an error in the main chunk ends the process at once.
            FileHandle.standardError.write(Data("luadispatch: \(error)\n".utf8))
            // Close the interpreter when nothing runs in it (always after a syntax error). Blocks
            // the chunk started may still be running, even parked for ever in a wait, and close()
            // would wait for them: then keep the interpreter referenced until the process ends.
            if runtime.pendingWork == 0 { runtime.close() } else { abandoned = runtime }
            return 1
        }
        runtime.runUntilIdle()
        // Close the state so that every object is released (leak checkers see a clean exit).
        let status = runtime.exitStatus
        runtime.close()
        return status
    }

    /// An interpreter left running when the main chunk failed (referenced, not leaked).
    nonisolated(unsafe) static var abandoned: Runtime?

    static func exit(_ status: Int32) -> Never {
        fflush(nil)
        Foundation.exit(status)
    }
}
