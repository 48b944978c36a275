import Foundation
import XCTest

/// `--help`, the time limit's report, the `scenario` module's reach, and the scenario runner run
/// from a copy of the binary outside the checkout.
final class CLIHelpTests: XCTestCase {
    /// Every mode and option on a line of its own, on standard output, status 0.
    func testHelpListsEveryModeAndOption() throws {
        let r = try CLI.run(["--help"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr, "")
        let lines = r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let program = CLI.binary.path
        let starts = ["-e stat", "-i ", "-l mod", "-l g=mod", "-v ", "-E ", "-W ", "-- ", "- ", "--trace FILE", "--sandbox ",
                      "--memory-limit SIZE", "--time-limit SECONDS", "--help ",
                      "\(program) run script", "\(program) scenarios list", "\(program) scenarios run",
                      "\(program) scenarios exec", "\(program) trace view"]
        for start in starts {
            XCTAssertEqual(lines.filter { $0.hasPrefix(start) }.count, 1, "one line for '\(start)':\n\(r.stdout)")
        }
        // The help is the usage a bad option prints, after the message.
        let bad = try CLI.run(["--bogus"])
        XCTAssertEqual(bad.status, 1)
        XCTAssertEqual(bad.stderr, "\(program): unrecognized option '--bogus'\n" + r.stdout)
        // An option of luadispatch's without its argument: lua's format, the same usage.
        let missing = try CLI.run(["--time-limit"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertEqual(missing.stderr, "\(program): '--time-limit' needs argument\n" + r.stdout)
        // After the script, --help is the script's.
        let script = try CLI.script("print(...)", arguments: ["--help"])
        XCTAssertEqual(script.stdout, "--help\n")
        XCTAssertEqual(script.status, 0)
    }

    /// Each way the time limit ends a run is reported with the limit, as docs/cli.md shows:
    /// the main chunk's error (lua.c's report), a wait's error, and the CLI's report after the
    /// chunk; an error of the script's own with the same words, not ended by the limit, is left
    /// as it is.
    func testTheTimeLimitsReportNamesTheLimit() throws {
        let program = CLI.binary.path
        let busy = try CLI.run(["--time-limit", "1", "-e", "while true do end"])
        XCTAssertEqual(busy.status, 1)
        XCTAssertTrue(busy.stderr.hasPrefix("\(program): time limit exceeded (1 s)\n"), busy.stderr)
        let wait = try CLI.run(["--time-limit", "0.5", "-e", "require('dispatch').sleep(10)"])
        XCTAssertEqual(wait.status, 1)
        XCTAssertTrue(wait.stderr.hasPrefix("\(program): (command line):1: time limit exceeded (0.5 s)\n"), wait.stderr)
        let block = try CLI.run(["--time-limit", "1", "-e", "require('dispatch').main:async(function() while true do end end)"])
        XCTAssertEqual(block.status, 1)
        XCTAssertEqual(block.stderr, "\(program): time limit exceeded (1 s)\n")
        let own = try CLI.run(["--time-limit", "5", "-e", "error('time limit exceeded', 0)"])
        XCTAssertEqual(own.status, 1)
        XCTAssertTrue(own.stderr.hasPrefix("\(program): time limit exceeded\n"), own.stderr)
    }

    /// A script next to its own scenario.lua gets that module from `require "scenario"`, as
    /// under lua5.4; only scripts the scenario runner starts get the bundled one.
    func testAUsersScenarioModuleLoadsAsUnderLua() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("own-scenario-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "return { mine = true }\n".write(to: dir.appendingPathComponent("scenario.lua"), atomically: false, encoding: .utf8)
        try "local s = require 'scenario'; print(s.mine, s.check)\n"
            .write(to: dir.appendingPathComponent("main.lua"), atomically: false, encoding: .utf8)
        let ours = try CLI.run(["main.lua"], directory: dir)
        XCTAssertEqual(ours.stdout, "true\tnil\n", ours.stderr)
        XCTAssertEqual(ours.status, 0)
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/lua5.4") {
            let theirs = try CLI.run(["main.lua"], directory: dir, executable: URL(fileURLWithPath: "/usr/bin/lua5.4"))
            XCTAssertEqual(ours.stdout, theirs.stdout)
        }
        let preload = try CLI.run(["-e", "print(package.preload.scenario)"], directory: dir)
        XCTAssertEqual(preload.stdout, "nil\n")
    }

    /// The release layout: one binary, run from anywhere. A copy of it outside the checkout runs
    /// a scenario (the runner and the child it starts both need the `scenario` module, which is
    /// in the binary, not beside it) and `exec` from a directory of its own.
    func testScenariosRunFromACopyOutsideTheCheckout() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("outside-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let copy = dir.appendingPathComponent("luadispatch")
        try FileManager.default.copyItem(at: CLI.binary, to: copy)
        let scenarios = CLI.packageRoot.appendingPathComponent("scripts/scenarios").path
        let r = try CLI.run(["scenarios", "run", "3.8", "--scale", "0.05", "--dir", scenarios], directory: dir, executable: copy)
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("1 passed, 0 failed"), r.stdout)
        try """
            -- expect: 1 check
            local scenario = require("scenario")
            scenario.check(scenario.delay(2) == 0.1, "scaled delay")
            """.write(to: dir.appendingPathComponent("X.1-own.lua"), atomically: false, encoding: .utf8)
        let exec = try CLI.run(["scenarios", "exec", "X.1-own.lua", "--scale", "0.05", "--check"], directory: dir, executable: copy)
        XCTAssertEqual(exec.status, 0, exec.stdout + exec.stderr)
        XCTAssertEqual(exec.stdout, "ok: scaled delay\n")
    }
}
