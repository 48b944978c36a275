import Foundation
import XCTest

/// The bundled scenarios, run the way a user runs them, with the tutorials' delays scaled down,
/// and the runner's verdicts on scenarios that fail in each way it knows.
final class ScenarioTests: XCTestCase {
    func testListShowsEveryScenarioWithItsTitle() throws {
        let r = try CLI.run(["scenarios", "list"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 57)
        XCTAssertTrue(lines.first?.hasPrefix("3.1 ") ?? false, "\(lines.first ?? "")")
        XCTAssertTrue(lines.last?.hasPrefix("T.1 ") ?? false, "\(lines.last ?? "")")
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 1)
            XCTAssertEqual(parts.count, 2, "no title: \(line)")
        }
    }

    /// Every scenario runs, verifies its invariants and passes; every check each one declares is
    /// printed; the run ends with the summary line.
    func testEveryScenarioPassesWithScaledDelays() throws {
        let r = try CLI.run(["scenarios", "run", "--all", "--check", "--scale", "0.05", "--size", "4194304"],
                            timeout: 600)
        let last = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertEqual(last, "57 passed, 0 failed", String(r.stdout.suffix(3000)) + r.stderr)
        XCTAssertEqual(r.status, 0)
        XCTAssertFalse(r.stdout.contains("FAILED"), r.stdout)
        var oks: [String: Int] = [:], id = ""
        for line in r.stdout.split(separator: "\n") {
            if line.hasPrefix("== ") { id = String(line.dropFirst(3).prefix { $0 != " " }) }
            if line.hasPrefix("ok: ") { oks[id, default: 0] += 1 }
        }
        let declared = try Self.declaredChecks()
        XCTAssertEqual(declared.count, 57)
        for (id, n) in declared { XCTAssertEqual(oks[id] ?? 0, n, "scenario \(id): ok lines") }
    }

    /// A violated invariant or a crash fails the run and is counted.
    func testAFailingScenarioIsReported() throws {
        let dir = try Self.scenarioDirectory([
            "X.1-passes": """
                -- title: always passes
                -- expect: 1 check
                local scenario = require("scenario")
                scenario.check(1 + 1 == 2, "arithmetic")
                """,
            "X.2-fails": """
                -- title: breaks an invariant
                -- expect: 1 check
                local dispatch, scenario = require("dispatch"), require("scenario")
                dispatch.queue("q"):async(function() scenario.check(false, "the impossible") end)
                """,
            "X.3-raises": """
                -- title: raises in a block
                -- expect: 0 checks
                require("dispatch").queue("q"):async(function() error("broken") end)
                """,
        ])
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(["scenarios", "run", "--all", "--dir", dir.path])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stdout.contains("FAILED: the impossible"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("1 passed, 2 failed\n"), r.stdout)
        let one = try CLI.run(["scenarios", "run", "X.1", "--dir", dir.path])
        XCTAssertEqual(one.status, 0)
        XCTAssertTrue(one.stdout.hasSuffix("1 passed, 0 failed\n"), one.stdout)
        let unknown = try CLI.run(["scenarios", "run", "Z.9", "--dir", dir.path])
        XCTAssertNotEqual(unknown.status, 0)
        XCTAssertTrue(unknown.stderr.contains("no scenario 'Z.9'"), unknown.stderr)
    }

    /// A scenario passes only if it made exactly the checks it declares: one that returns early,
    /// one that checks too often, and one that declares nothing all fail.
    func testAScenarioMustMakeTheChecksItDeclares() throws {
        let dir = try Self.scenarioDirectory([
            "X.1-returns-early": """
                -- title: returns before its second check
                -- expect: 2 checks
                local scenario = require("scenario")
                scenario.check(true, "first")
                do return end
                scenario.check(true, "second")
                """,
            "X.2-checks-twice": """
                -- title: a handler that runs twice
                -- expect: 1 check
                local scenario = require("scenario")
                for _ = 1, 2 do scenario.check(true, "ran") end
                """,
            "X.3-undeclared": """
                -- title: declares nothing
                require("scenario").check(true, "fine")
                """,
        ])
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(["scenarios", "run", "--all", "--check", "--dir", dir.path])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stdout.contains("ok: first\nFAILED: it made 1 check, and declares 2"), r.stdout)
        XCTAssertTrue(r.stdout.contains("FAILED: it made 2 checks, and declares 1"), r.stdout)
        XCTAssertTrue(r.stdout.contains("declares no checks"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("0 passed, 3 failed\n"), r.stdout)
    }

    /// Work left on a suspended queue fails the scenario at once, naming the queue.
    func testAScenarioThatLeavesWorkStuckFails() throws {
        let dir = try Self.scenarioDirectory([
            "X.1-suspended": """
                -- title: async onto a suspended serial queue
                -- expect: 1 check
                local dispatch, scenario = require("dispatch"), require("scenario")
                local serialQueue = dispatch.queue("com.example.serialQueue")
                serialQueue:suspend()
                serialQueue:async(function() scenario.check(true, "the task ran") end)
                """,
        ])
        defer { try? FileManager.default.removeItem(at: dir) }
        let started = Date()
        let r = try CLI.run(["scenarios", "run", "X.1", "--check", "--dir", dir.path])
        XCTAssertEqual(r.status, 1)
        XCTAssertLessThan(Date().timeIntervalSince(started), 4, "stuck work is seen when the main loop idles, not at the limit")
        XCTAssertTrue(r.stdout.contains("FAILED: work left that can never run: queue 'com.example.serialQueue' (suspended): 1 block"), r.stdout)
        XCTAssertTrue(r.stdout.contains("-- X.1 FAILED (exit status 1"), r.stdout)
    }

    /// A scenario that never ends is stopped at its limit (a few times what its header says it
    /// takes at the given scale, plus a few seconds) and the runner says what was still pending.
    func testAHangIsStoppedAtItsLimitWithWhatWasPending() throws {
        let dir = try Self.scenarioDirectory([
            "X.1-missing-leave": """
                -- title: one enter too many
                -- expect: 1 check, 2 s of delays
                local dispatch, scenario = require("dispatch"), require("scenario")
                local group = dispatch.group()
                group:enter(); group:enter()
                dispatch.global():async(function() group:leave() end)
                group:notify(dispatch.main, function() scenario.check(true, "notified") end)
                """,
        ])
        defer { try? FileManager.default.removeItem(at: dir) }
        let started = Date()
        let r = try CLI.run(["scenarios", "run", "X.1", "--scale", "0.05", "--dir", dir.path], timeout: 60)
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(r.status, 1)
        // 4 x (2 s x 0.05) + 5 s
        XCTAssertTrue(r.stdout.contains("FAILED: timed out after 5.40 s; still pending: 1 group enter not yet left; 1 more unit of work"), r.stdout)
        XCTAssertTrue(r.stdout.contains("-- X.1 FAILED (timed out at its limit of 5.40 s"), r.stdout)
        XCTAssertGreaterThan(elapsed, 5.3)
        XCTAssertLessThan(elapsed, 15)

        // --timeout overrides the header's limit.
        let short = try CLI.run(["scenarios", "run", "X.1", "--timeout", "0.5", "--dir", dir.path])
        XCTAssertTrue(short.stdout.contains("FAILED: timed out after 0.50 s; still pending: 1 group enter not yet left"), short.stdout)
    }

    /// Every bundled scenario declares how many checks it makes.
    func testEveryBundledScenarioDeclaresItsChecks() throws {
        let declared = try Self.declaredChecks()
        XCTAssertEqual(declared.count, 57)
        XCTAssertTrue(declared.values.allSatisfy { $0 > 0 }, "\(declared)")
    }

    /// Command-line mistakes are Lua-style messages with the usage, and exit status 1.
    func testCommandLineErrors() throws {
        for (arguments, message) in [
            (["scenarios"], "luadispatch: scenarios: 'list', 'run' or 'exec' expected"),
            (["scenarios", "run"], "luadispatch: scenarios run: name scenario ids or pass --all"),
            (["scenarios", "run", "--all", "--bogus"], "luadispatch: unrecognized option '--bogus'"),
            (["scenarios", "run", "3.1", "--scale"], "luadispatch: '--scale' needs an argument"),
            (["scenarios", "run", "3.1", "--scale", "-1"], "luadispatch: bad value '-1' for '--scale' (a positive number expected)"),
            (["scenarios", "list", "--check"], "luadispatch: scenarios list: unrecognized option '--check'"),
        ] {
            let r = try CLI.run(arguments)
            // Messages start with the program name as `lua`'s do: argv[0], here the binary's path.
            let expected = CLI.binary.path + message.dropFirst("luadispatch".count)
            XCTAssertEqual(r.status, 1, "\(arguments)")
            XCTAssertTrue(r.stderr.hasPrefix(expected + "\n"), "\(arguments): \(r.stderr)")
            XCTAssertEqual(r.stdout, "", "\(arguments)")
        }
    }

    // MARK: helpers

    /// The scenario scripts' own `-- expect: N checks` counts, by id.
    static func declaredChecks() throws -> [String: Int] {
        let dir = CLI.packageRoot.appendingPathComponent("scripts/scenarios")
        var result: [String: Int] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: dir.path) where file.hasSuffix(".lua") {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            let id = String(file.prefix { $0 != "-" })
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("-- expect: ") }),
                  let n = Int(line.dropFirst("-- expect: ".count).prefix { $0.isNumber }) else {
                result[id] = 0
                continue
            }
            result[id] = n
        }
        return result
    }

    /// A temporary scenario directory with `scripts` (name without `.lua` -> text) and the
    /// bundled fixtures.
    static func scenarioDirectory(_ scripts: [String: String]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("scenarios-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: dir.appendingPathComponent("data"),
            withDestinationURL: CLI.packageRoot.appendingPathComponent("scripts/scenarios/data"))
        for (name, text) in scripts {
            try text.write(to: dir.appendingPathComponent(name + ".lua"), atomically: false, encoding: .utf8)
        }
        return dir
    }
}
