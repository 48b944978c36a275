import LuaDispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `scenario` module that bundled scenario scripts use: delay scaling, invariant checks and
/// fixtures (data files, temporary directories, a loopback HTTP server). Only scripts the runner
/// starts (`scenarios exec`) have it: under `luadispatch FILE`, `require "scenario"` finds a
/// user's own scenario.lua, as under lua. It reads its settings from the environment (the
/// runner sets them). Nothing is built until a script first requires it.
enum ScenarioModule {
    /// The module's Lua part (scenario.lua, embedded at build time: the CLI runs from any
    /// directory, and the release build is one file).
    static let source = String(decoding: PackageResources.scenario_lua, as: UTF8.self)

    static func install(_ runtime: Runtime, scriptDirectory: String?) {
        let dataDir = Posix.environment("LUADISPATCH_SCENARIO_DATA") ?? (scriptDirectory ?? ".") + "/data"
        runtime.preload(module: "scenario", source: source, functions: [
            "checked": { [unowned runtime] args in
                ScenarioLedger.checks.wrappingAdd(1, ordering: .relaxed)
                if args.first?.boolValue != true { runtime.recordFailure() }
                return []
            },
            "memory": { _ in [ProcessMemory.current()] },
            "reset_peak_memory": { _ in [.boolean(ProcessMemory.resetPeak())] },
            "data_dir": { _ in [.string(Posix.realPath(dataDir) ?? dataDir)] },
            "tmpdir": { _ in [.string(try Posix.makeTemporaryDirectory(prefix: "luadispatch-"))] },
            "rmtree": { args in
                guard let path = args.first?.stringValue else { throw ScenarioError("rmtree: path expected") }
                Posix.removeTree(path)
                return []
            },
            "http_base": { _ in
                [.string(try FixtureServer.shared(root: dataDir + "/http").baseURL)]
            },
        ])
    }
}

/// What the scripts of this process checked, for the runner's verdict.
enum ScenarioLedger {
    static let checks = Atomic<Int>(0)
}

/// The process's resident memory, as Linux reports it in /proc/self/status.
enum ProcessMemory {
    static func current() -> LuaValue {
        let fields = ["VmHWM": "peak", "VmRSS": "rss", "RssAnon": "anon", "RssFile": "file"]
        var result: [String: LuaValue] = [:]
        let text = String(decoding: Posix.readFile("/proc/self/status") ?? [], as: UTF8.self)
        for line in text.split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count >= 2, let name = fields[String(parts[0].dropLast())], let kB = Int(parts[1]) else { continue }
            result[name] = .integer(kB * 1024)
        }
        return .dictionary(result)
    }

    /// Writing 5 to clear_refs resets the peak resident set (VmHWM) to the current one.
    static func resetPeak() -> Bool {
        let fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return write(fd, "5", 1) == 1
    }
}
