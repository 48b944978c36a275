import Foundation
import XCTest

/// Runs every port of libdispatch's own tests and of the Swift overlay's Dispatch tests
/// (`Tests/DispatchPorts/*.lua`) through the built `luadispatch`, one process each. A port
/// passes when it exits with status 0 after printing its summary (`T.stop()` in bsdtests.lua)
/// with no failed check and no uncaught error, and made the number of checks its header
/// declares (`-- checks: N`, or `N-M` where the count depends on timing).
final class DispatchPortsTests: XCTestCase {
    static var folder: URL { CLI.packageRoot.appendingPathComponent("Tests/DispatchPorts") }

    static func ports() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "lua" && $0.lastPathComponent != "bsdtests.lua" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    struct Verdict {
        let passed: Bool
        let reason: String
        let seconds: Double
    }

    /// Runs one port and judges it.
    static func verdict(_ file: URL) throws -> Verdict {
        let text = try String(contentsOf: file, encoding: .utf8)
        guard let declared = checksDeclared(text) else {
            return Verdict(passed: false, reason: "no '-- checks: N' line in the header", seconds: 0)
        }
        let started = Date()
        let result = try CLI.run(["run", file.path], timeout: timeout, directory: folder)
        let seconds = Date().timeIntervalSince(started)
        func fail(_ why: String) -> Verdict {
            let tail = (result.stdout + result.stderr).split(separator: "\n", omittingEmptySubsequences: false).suffix(25)
            return Verdict(passed: false, reason: "\(why)\n" + tail.joined(separator: "\n"), seconds: seconds)
        }
        if let failure = result.stdout.split(separator: "\n").first(where: { $0.hasPrefix("[FAIL]") }) {
            return fail("a check failed: \(failure)")
        }
        guard let summary = summary(result.stdout) else { return fail("no summary: the port never reached T.stop()") }
        guard summary.failed == 0, summary.errors == 0 else {
            return fail("\(summary.failed) failed checks, \(summary.errors) uncaught errors")
        }
        guard declared.contains(summary.checks) else {
            return fail("\(summary.checks) checks made, the header declares \(declared)")
        }
        guard result.status == 0 else { return fail("exit status \(result.status)") }
        return Verdict(passed: true, reason: "\(summary.checks) checks", seconds: seconds)
    }

    /// A hang detector, not a speed check. With a switch interval under 1 ms (CI's 20 us run)
    /// every switch is a signal and a hand-over of the interpreter, and the ports that hand it
    /// between 80 serial queues hundreds of thousands of times take most of a minute on two
    /// quiet cores (dispatch_cascade 56 s, dispatch_readsync 47 s: docs/reliability.md).
    static var timeout: Double {
        guard let interval = ProcessInfo.processInfo.environment["LUADISPATCH_SWITCH_INTERVAL"].flatMap(Double.init),
              interval > 0, interval < 0.001 else { return 90 }
        return 240
    }

    static func checksDeclared(_ text: String) -> ClosedRange<Int>? {
        for line in text.split(separator: "\n").prefix(12) where line.hasPrefix("-- checks: ") {
            let spec = line.dropFirst("-- checks: ".count).split(separator: "-").compactMap { Int($0) }
            if spec.count == 1 { return spec[0]...spec[0] }
            if spec.count == 2, spec[0] <= spec[1] { return spec[0]...spec[1] }
        }
        return nil
    }

    static func summary(_ stdout: String) -> (checks: Int, failed: Int, errors: Int)? {
        for line in stdout.split(separator: "\n") where line.hasPrefix("[SUMMARY] ") {
            let numbers = line.split(separator: ":").last!.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            if numbers.count == 4 { return (numbers[0], numbers[2], numbers[3]) }
        }
        return nil
    }

    func testEveryPortPasses() throws {
        let ports = try Self.ports()
        XCTAssertGreaterThanOrEqual(ports.count, 35)
        var total = 0.0
        // Three at a time: each port is a process of its own, and most of their time is waiting.
        let verdicts = try CLI.each(ports, width: 3) { try Self.verdict($0) }
        for (file, v) in zip(ports, verdicts) {
            total += v.seconds
            print(String(format: "port %@: %@ (%.2f s)", file.lastPathComponent, v.passed ? "passed, " + v.reason : "FAILED", v.seconds))
            XCTAssertTrue(v.passed, "\(file.lastPathComponent): \(v.reason)")
        }
        print(String(format: "ports: %d files, %.1f s", ports.count, total))
        // The failures again, last, each with why on its last line: a log cut to its end still
        // shows why each failed.
        for (file, v) in zip(ports, verdicts) where !v.passed {
            let lines = v.reason.split(separator: "\n", omittingEmptySubsequences: false)
            print("port \(file.lastPathComponent): its output ends\n" + lines.dropFirst().joined(separator: "\n"))
            print("port \(file.lastPathComponent) FAILED: \(lines.first ?? "")")
        }
    }

    /// Every port says where it comes from and what it left out or scaled down.
    func testEveryPortNamesItsSource() throws {
        for file in try Self.ports() {
            let header = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").prefix(3).joined(separator: "\n")
            XCTAssertTrue(header.contains("Port of") && (header.contains("swift-corelibs-libdispatch tests/")
                || header.contains("swiftlang/swift test/stdlib/")), "\(file.lastPathComponent): \(header)")
        }
    }

    /// The verdict bites: a failed check, a missing summary, a wrong number of checks and an
    /// uncaught error in a block each fail a port.
    func testVerdictRejectsBrokenPorts() throws {
        let prelude = """
            local dispatch = require("dispatch")
            local T = dofile("\(Self.folder.path)/bsdtests.lua")
            T.start("mutant")

            """
        let cases: [(String, String)] = [
            ("-- checks: 1\n", "T.long('one', 1, 2)\nT.stop()"),
            ("-- checks: 1\n", "T.long('one', 1, 1)"),
            ("-- checks: 2\n", "T.long('one', 1, 1)\nT.stop()"),
            ("-- checks: 1\n", "T.long('one', 1, 1)\ndispatch.global():async(function() error('boom') end)\ndispatch.sleep(0.1)\nT.stop()"),
            ("", "T.long('one', 1, 1)\nT.stop()"),
        ]
        for (header, body) in cases {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("port-mutant-\(UUID().uuidString).lua")
            try ("-- Port of nothing\n" + header + prelude + body).write(to: file, atomically: false, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let v = try Self.verdict(file)
            XCTAssertFalse(v.passed, "a broken port passed: \(header)\(body)")
        }
        let good = FileManager.default.temporaryDirectory.appendingPathComponent("port-good-\(UUID().uuidString).lua")
        try ("-- Port of nothing\n-- checks: 1\n" + prelude + "T.long('one', 1, 1)\nT.stop()").write(to: good, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: good) }
        XCTAssertTrue(try Self.verdict(good).passed)
    }
}
