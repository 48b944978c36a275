import Foundation
import XCTest

/// Runs the benchmark scripts through the built `luadispatch` executable.
final class IOScriptTests: XCTestCase {
    private var root: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }

    private func luadispatch() throws -> URL {
        // The binary built with these tests (also in the sanitizer builds' scratch paths).
        if FileManager.default.isExecutableFile(atPath: CLI.binary.path) { return CLI.binary }
        for config in ["debug", "release"] {
            let url = root.appendingPathComponent(".build/\(config)/luadispatch")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw XCTSkip("luadispatch executable not built")
    }

    private func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let r = try CLI.run(arguments, timeout: nil, executable: try luadispatch())
        return (r.status, r.stdout)
    }

    func testCombineBenchmarkScript() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("luadispatch-combine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let b = Data((0..<1_500_001).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
        try a.write(to: dir.appendingPathComponent("a"))
        try b.write(to: dir.appendingPathComponent("b"))
        let out = dir.appendingPathComponent("out")
        let result = try run(["run", root.appendingPathComponent("scripts/benchmarks/combine.lua").path,
                              dir.appendingPathComponent("a").path, dir.appendingPathComponent("b").path, out.path])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.hasPrefix("combined "), result.output)
        XCTAssertEqual(try Data(contentsOf: out), a + b)
    }

    func testTimerBenchmarkScript() throws {
        let result = try run(["run", root.appendingPathComponent("scripts/benchmarks/timer.lua").path, "0.01", "0.3"])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertNotNil(result.output.range(of: #"^timer 10 ms x [0-9]+: mean lateness [0-9.]+ us, max [0-9.]+ us\n$"#,
                                            options: .regularExpression), result.output)
        // The fires it counted: at least the 30 it waits for, more when its last run was late and
        // the timer coalesced fires (seen: 31 on a loaded machine).
        let fires = result.output.split(separator: " ").dropFirst(4).first.flatMap { Int($0.dropLast()) }
        XCTAssertGreaterThanOrEqual(fires ?? 0, 30, result.output)
    }
}
