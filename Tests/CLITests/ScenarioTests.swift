import Foundation
import XCTest

/// The bundled scenarios, run the way a user runs them, with the tutorials' delays scaled down.
final class ScenarioTests: XCTestCase {
    func testListShowsEveryScenarioWithItsTitle() throws {
        let r = try CLI.run(["scenarios", "list"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 55)
        XCTAssertTrue(lines.first?.hasPrefix("3.1 ") ?? false, "\(lines.first ?? "")")
        XCTAssertTrue(lines.last?.hasPrefix("T.1 ") ?? false, "\(lines.last ?? "")")
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 1)
            XCTAssertEqual(parts.count, 2, "no title: \(line)")
        }
    }

    /// Every scenario runs, verifies its invariants and passes; the run ends with the summary line.
    func testEveryScenarioPassesWithScaledDelays() throws {
        let r = try CLI.run(["scenarios", "run", "--all", "--check", "--scale", "0.05", "--size", "4194304"],
                            timeout: 600)
        let last = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertEqual(last, "55 passed, 0 failed", String(r.stdout.suffix(3000)) + r.stderr)
        XCTAssertEqual(r.status, 0)
        XCTAssertFalse(r.stdout.contains("FAILED:"), r.stdout)
        XCTAssertTrue(r.stdout.contains("ok: "), "--check prints verified invariants")
    }

    /// A violated invariant or a crash fails the run and is counted.
    func testAFailingScenarioIsReported() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("scenarios-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try """
            -- title: always passes
            local scenario = require("scenario")
            scenario.check(1 + 1 == 2, "arithmetic")
            """.write(to: dir.appendingPathComponent("X.1-passes.lua"), atomically: false, encoding: .utf8)
        try """
            -- title: breaks an invariant
            local dispatch, scenario = require("dispatch"), require("scenario")
            dispatch.queue("q"):async(function() scenario.check(false, "the impossible") end)
            """.write(to: dir.appendingPathComponent("X.2-fails.lua"), atomically: false, encoding: .utf8)
        try """
            -- title: raises in a block
            require("dispatch").queue("q"):async(function() error("broken") end)
            """.write(to: dir.appendingPathComponent("X.3-raises.lua"), atomically: false, encoding: .utf8)
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
}
