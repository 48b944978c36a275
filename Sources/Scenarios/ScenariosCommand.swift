#if canImport(Glibc)
import Glibc
#endif

/// `luadispatch scenarios list | run ...`: the bundled tutorial scenarios.
public enum ScenariosCommand {
    /// Runs the subcommand with the arguments that follow `scenarios`; returns the exit status.
    public static func main(_ arguments: [String], programName: String = "luadispatch") -> Int32 {
        let options: ScenarioOptions
        do {
            options = try ScenarioOptions.parse(arguments)
        } catch {
            Posix.writeStandardError("\(programName): \(error)\n" + (error.showUsage ? usage(programName) : ""))
            return 1
        }
        do {
            switch options.action {
            case .help:
                print(usage(programName), terminator: "")
                return 0
            case .list:
                list(try catalogue(options))
                return 0
            case .run:
                return try run(try catalogue(options), options)
            case .exec:
                return ScenarioExec.run(options.ids[0], options, programName: programName)
            }
        } catch {
            Posix.writeStandardError("\(programName): \(error)\n")
            return 1
        }
    }

    static func usage(_ programName: String) -> String {
        """
        usage: \(programName) scenarios list [--dir D]
               \(programName) scenarios run ID... | --all [options]
               \(programName) scenarios exec FILE [options]   (one script, in this process)
        Available options are:
          --all          run every scenario
          --check        also print each verified invariant (failures are always printed)
          --scale F      multiply every tutorial delay by F (e.g. 0.05 for tests)
          --size N       size in bytes of each generated input file of the file scenarios
          --timeout S    seconds before a scenario is stopped and counted as failed
                         (default: a few times what its header says it takes)
          --trace DIR    write each scenario's execution timeline to DIR/ID.json
                         (see `luadispatch trace view`)
          --dir D        directory of the scenario scripts (default: scripts/scenarios,
                         found from the current directory or from the binary)
        A scenario fails when a check fails, when it makes fewer or more checks than it
        declares, when it leaves work that can never run, or at its time limit.

        """
    }

    static func catalogue(_ options: ScenarioOptions) throws(ScenarioError) -> ScenarioCatalogue {
        guard let found = ScenarioCatalogue.locate(explicit: options.directory) else {
            throw ScenarioError("cannot find the scenario scripts; pass --dir")
        }
        return try ScenarioCatalogue(directory: found)
    }

    static func list(_ catalogue: ScenarioCatalogue) {
        let width = catalogue.scenarios.map(\.id.count).max() ?? 0
        for s in catalogue.scenarios {
            print(s.id + String(repeating: " ", count: width - s.id.count) + "  " + s.title)
        }
    }

    static func run(_ catalogue: ScenarioCatalogue, _ options: ScenarioOptions) throws(ScenarioError) -> Int32 {
        var selected = catalogue.scenarios
        if !options.all {
            selected = []
            for id in options.ids {
                guard let s = catalogue.scenario(id) else {
                    throw ScenarioError("no scenario '\(id)' (see `luadispatch scenarios list`)")
                }
                selected.append(s)
            }
        }
        if let dir = options.traceDirectory, mkdir(dir, 0o755) != 0, errno != EEXIST {
            throw ScenarioError("cannot create trace directory '\(dir)': \(String(cString: strerror(errno)))")
        }
        var failed: [String] = []
        for s in selected {
            print("== \(s.id) \(s.title)")
            fflush(nil)
            let started = Posix.now()
            let limit = options.timeout
                ?? (try? ScenarioHeader(path: s.path))?.timeLimit(scale: options.scale, size: options.size)
                ?? ScenarioHeader.limitSlack
            var arguments = ["scenarios", "exec", s.path, "--scale", "\(options.scale)", "--timeout", "\(limit)"]
            if options.check { arguments.append("--check") }
            if let size = options.size { arguments += ["--size", "\(size)"] }
            var environment = ["LUADISPATCH_SCENARIO_DATA": catalogue.directory + "/data"]
            if let dir = options.traceDirectory { environment["LUADISPATCH_TRACE"] = dir + "/" + s.id + ".json" }
            let outcome = ScenarioProcess.run(arguments: arguments,
                                              environment: environment,
                                              stdin: catalogue.directory + "/data/stdin.txt",
                                              timeout: limit + 5)
            let seconds = Posix.twoDecimals(Posix.now() - started)
            switch outcome {
            case .exited(0):
                print("-- \(s.id) passed (\(seconds) s)")
            case .exited(ScenarioExec.timedOutStatus), .timedOut:
                print("-- \(s.id) FAILED (timed out at its limit of \(Posix.twoDecimals(limit)) s, \(seconds) s)")
            case .exited(let status):
                print("-- \(s.id) FAILED (exit status \(status), \(seconds) s)")
            case .signalled(let signal):
                print("-- \(s.id) FAILED (killed by signal \(signal), \(seconds) s)")
            case .notStarted(let why):
                print("-- \(s.id) FAILED (cannot start: \(why))")
            }
            if outcome != .exited(0) { failed.append(s.id) }
            fflush(nil)
        }
        if !failed.isEmpty { print("failed: " + failed.joined(separator: " ")) }
        print("\(selected.count - failed.count) passed, \(failed.count) failed")
        fflush(nil)
        return failed.isEmpty ? 0 : 1
    }
}
