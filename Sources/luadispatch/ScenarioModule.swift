import Foundation
import LuaDispatch

/// The `scenario` module that bundled scenario scripts use: delay scaling, invariant checks and
/// fixtures (data files, temporary directories, a loopback HTTP server). It reads its settings
/// from the environment, so `luadispatch run` and `luadispatch scenarios run` behave the same.
enum ScenarioModule {
    static let source = """
        local host = require("scenario.host")
        local M = {}
        M.scale = tonumber(os.getenv("LUADISPATCH_DELAY_SCALE")) or 1
        M.checking = os.getenv("LUADISPATCH_SCENARIO_CHECK") == "1"
        M.size = math.tointeger(tonumber(os.getenv("LUADISPATCH_SCENARIO_SIZE"))) or 64 * 1024 * 1024
        M.failures = 0
        -- A tutorial delay, scaled for tests.
        function M.delay(seconds) return seconds * M.scale end
        -- Asserts an invariant; a failure is reported and makes the process exit 1 at the end.
        function M.check(cond, what)
          if cond then
            if M.checking then print("ok: " .. what) end
          else
            M.failures = M.failures + 1
            print("FAILED: " .. what)
            io.stderr:write("FAILED: " .. what .. "\\n")
            host.fail(what)
          end
          return cond
        end
        function M.data(name) return host.data_dir() .. "/" .. name end
        M.tmpdir = host.tmpdir
        M.rmtree = host.rmtree
        M.http_base = host.http_base
        return M
        """

    static func install(_ runtime: Runtime, scriptDirectory: String?) {
        let env = ProcessInfo.processInfo.environment
        let dataDir = env["LUADISPATCH_SCENARIO_DATA"]
            ?? URL(fileURLWithPath: scriptDirectory ?? ".").appendingPathComponent("data").standardizedFileURL.path
        runtime.register(module: "scenario.host", functions: [
            "fail": { [runtime] _ in
                runtime.recordFailure()
                return []
            },
            "data_dir": { _ in [.string(dataDir)] },
            "tmpdir": { _ in
                let tmp = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
                var template = Array("\(tmp)luadispatch-XXXXXX".utf8CString)
                guard let made = mkdtemp(&template) else {
                    throw ScenarioError("mkdtemp failed: \(String(cString: strerror(errno)))")
                }
                return [.string(String(cString: made))]
            },
            "rmtree": { args in
                guard let path = args.first?.stringValue else { throw ScenarioError("rmtree: path expected") }
                try? FileManager.default.removeItem(atPath: path)
                return []
            },
            "http_base": { _ in
                [.string(try FixtureServer.shared(root: dataDir + "/http").baseURL)]
            },
        ])
        runtime.preload(module: "scenario", source: source)
    }
}

struct ScenarioError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
