import ArgumentParser
import Foundation

struct ScenariosCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenarios",
        abstract: "List and run the bundled tutorial scenarios.",
        subcommands: [List.self, Run.self]
    )

    struct Location: ParsableArguments {
        @Option(help: "Directory of the scenario scripts (default: scripts/scenarios, found from here or from the binary).")
        var dir: String?

        func catalogue() throws -> ScenarioCatalogue {
            guard let found = ScenarioCatalogue.locate(explicit: dir) else {
                throw ValidationError("cannot find the scenario scripts; pass --dir")
            }
            return try ScenarioCatalogue(directory: found)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print each scenario's id and title.")
        @OptionGroup var location: Location

        func run() throws {
            let catalogue = try location.catalogue()
            let width = catalogue.scenarios.map(\.id.count).max() ?? 0
            for s in catalogue.scenarios {
                print(s.id.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + s.title)
            }
        }
    }

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run scenarios, each in its own process, and report `N passed, N failed`.")
        @OptionGroup var location: Location
        @Flag(help: "Run every scenario.") var all = false
        @Flag(help: "Also print each verified invariant (failures are always reported).") var check = false
        @Option(help: "Multiply every tutorial delay by this factor (e.g. 0.05 for tests).") var scale: Double = 1
        @Option(help: "Size in bytes of each generated input file for the file scenarios.") var size: Int?
        @Option(help: "Seconds before a scenario is stopped and counted as failed.") var timeout: Double = 600
        @Argument(help: "Scenario ids, e.g. 3.1 B.7.") var ids: [String] = []

        func validate() throws {
            if !all && ids.isEmpty { throw ValidationError("name scenario ids or pass --all") }
            if !(scale > 0 && scale.isFinite) { throw ValidationError("--scale must be a positive number") }
            if let size, size <= 0 { throw ValidationError("--size must be positive") }
        }

        func run() throws {
            let catalogue = try location.catalogue()
            var selected = catalogue.scenarios
            if !all {
                selected = []
                for id in ids {
                    guard let s = catalogue.scenarios.first(where: { $0.id == id }) else {
                        throw ValidationError("no scenario '\(id)' (see `luadispatch scenarios list`)")
                    }
                    selected.append(s)
                }
            }
            var environment = ProcessInfo.processInfo.environment
            environment["LUADISPATCH_DELAY_SCALE"] = String(scale)
            environment["LUADISPATCH_SCENARIO_CHECK"] = check ? "1" : "0"
            environment["LUADISPATCH_SCENARIO_DATA"] = catalogue.directory + "/data"
            if let size { environment["LUADISPATCH_SCENARIO_SIZE"] = String(size) }
            var failed: [String] = []
            for s in selected {
                print("== \(s.id) \(s.title)")
                fflush(nil)
                let started = Date()
                let status = ScenarioProcess.run(script: s.path, environment: environment,
                                                 stdin: catalogue.directory + "/data/stdin.txt", timeout: timeout)
                let seconds = String(format: "%.2f", Date().timeIntervalSince(started))
                if status == 0 {
                    print("-- \(s.id) passed (\(seconds) s)")
                } else {
                    print("-- \(s.id) FAILED (\(status == ScenarioProcess.timedOut ? "timed out" : "exit status \(status)"), \(seconds) s)")
                    failed.append(s.id)
                }
                fflush(nil)
            }
            if !failed.isEmpty { print("failed: " + failed.joined(separator: " ")) }
            print("\(selected.count - failed.count) passed, \(failed.count) failed")
            if !failed.isEmpty { throw ExitCode.failure }
        }
    }
}

/// The scenario scripts: `<id>-<slug>.lua`, each opening with `-- title:` and `-- seed:` lines.
struct ScenarioCatalogue {
    struct Scenario {
        let id: String
        let title: String
        let path: String
    }

    let directory: String
    let scenarios: [Scenario]

    init(directory: String) throws {
        self.directory = directory
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".lua") }
        scenarios = files.compactMap { file -> Scenario? in
            guard let dash = file.firstIndex(of: "-") else { return nil }
            let id = String(file[..<dash])
            let path = directory + "/" + file
            let head = (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").prefix(5) ?? []
            let title = head.first { $0.hasPrefix("-- title:") }
                .map { $0.dropFirst("-- title:".count).trimmingCharacters(in: .whitespaces) } ?? file
            return Scenario(id: id, title: title, path: path)
        }.sorted { Self.order($0.id) < Self.order($1.id) }
    }

    /// Catalogue order: numbered sections, then the appendix, the Handbook, the guide, the book.
    static func order(_ id: String) -> (Int, Int) {
        let parts = id.split(separator: ".")
        let major = parts.first.map(String.init) ?? ""
        let minor = parts.count > 1 ? String(parts[1]) : ""
        let majorKey = Int(major) ?? (["A": 100, "H": 101, "G": 102, "B": 103][major] ?? 200)
        return (majorKey, Int(minor) ?? 1000)
    }

    static func locate(explicit: String?) -> String? {
        let fm = FileManager.default
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        if let env = ProcessInfo.processInfo.environment["LUADISPATCH_SCENARIOS"] { candidates.append(env) }
        candidates.append(fm.currentDirectoryPath + "/scripts/scenarios")
        var dir = URL(fileURLWithPath: CommandLine.executablePath).deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(dir.appendingPathComponent("scripts/scenarios").path)
            dir.deleteLastPathComponent()
        }
        var isDir: ObjCBool = false
        return candidates.first { fm.fileExists(atPath: $0, isDirectory: &isDir) && isDir.boolValue }
            .map { URL(fileURLWithPath: $0).standardizedFileURL.path }
    }
}

/// One scenario in a child process running this same binary.
enum ScenarioProcess {
    static let timedOut: Int32 = -1

    static func run(script: String, environment: [String: String], stdin: String, timeout: Double) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.executablePath)
        process.arguments = ["run", script]
        process.environment = environment
        process.standardInput = FileHandle(forReadingAtPath: stdin) ?? FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        do { try process.run() } catch {
            print("cannot start scenario: \(error)")
            return 127
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            done.wait()
            return timedOut
        }
        return process.terminationStatus
    }
}

extension CommandLine {
    /// This binary's path, for re-running it as a child.
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? arguments[0]
    }
}
