import Foundation
import XCTest

/// scripts/stress/stress.lua through the CLI at a CI-sized factor (the full size, 8 x 100,000
/// tasks, runs with `scripts/stress/run` on a release build). The script checks every counter
/// exactly and raises on a mismatch; a crash or a hang fails here.
final class StressTests: XCTestCase {
    func testStressAtCISize() throws {
        let factor = ProcessInfo.processInfo.environment["LUADISPATCH_STRESS_FACTOR"] ?? "0.2"
        let script = CLI.packageRoot.appendingPathComponent("scripts/stress/stress.lua").path
        let r = try CLI.run(["run", script, factor], environment: ["STRESS_TIMEOUT": "240"], timeout: 300)
        XCTAssertEqual(r.status, 0, "exit status \(r.status)\n" + r.stdout.suffix(2000) + r.stderr.suffix(4000))
        let last = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(last.hasPrefix("stress: ok: 8 queues x "), last + r.stderr.suffix(2000))
        XCTAssertEqual(r.stderr, "", "nothing on stderr")
        print(last)
    }
}
