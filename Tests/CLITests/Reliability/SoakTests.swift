import Foundation
import XCTest

/// scripts/soak/soak.lua through the CLI, CI-sized (`scripts/soak/run` runs thousands of rounds
/// on a release build). One process creates, fires and cancels sources of every kind and pipe
/// channels, closing descriptors right after cancel; the script counts every event and cancel
/// handler and exits 1 on any loss. A crash or a hang fails here.
final class SoakTests: XCTestCase {
    func testSoakAtCISize() throws {
        let rounds = ProcessInfo.processInfo.environment["LUADISPATCH_SOAK_ROUNDS"] ?? "150"
        let script = CLI.packageRoot.appendingPathComponent("scripts/soak/soak.lua").path
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("soak-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(["run", script, rounds, dir.path], timeout: 300)
        XCTAssertEqual(r.status, 0, "exit status \(r.status)\n" + r.stdout.suffix(2000) + r.stderr.suffix(4000))
        let n = Int(rounds)!
        XCTAssertTrue(r.stdout.contains("soak: \(n) rounds, \(n * 6 + n / 10) sources created, \(n * 6 + n / 10) cancel handlers, "
            + "\(n * 6 + n / 10) events, \(n) EOFs, \(n / 10) exits, \(n) channels, 0 lost\nsoak: ok\n"), r.stdout)
        XCTAssertEqual(r.stderr, "", "nothing on stderr")
    }

    /// scripts/soak/workers.lua: 100,000 jobs and 100,000 channel messages across 4 workers, every
    /// result and message accounted for, resident memory flat after the first round (not
    /// measured under AddressSanitizer, whose quarantine keeps freed memory resident).
    func testWorkersSoak() throws {
        let script = CLI.packageRoot.appendingPathComponent("scripts/soak/workers.lua").path
        let maxGrowth = StockLua.sanitizerRuntime == nil ? "8" : "none"
        let r = try CLI.run(["run", script, "100000", "100000", "5", maxGrowth], timeout: 120)
        XCTAssertEqual(r.status, 0, "exit status \(r.status)\n" + r.stdout.suffix(2000) + r.stderr.suffix(4000))
        XCTAssertTrue(r.stdout.contains("workers soak: 100000 jobs, 100000 messages, 4 workers, 0 lost;"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("workers soak: ok\n"), r.stdout)
        XCTAssertEqual(r.stderr, "", "nothing on stderr")
    }
}
