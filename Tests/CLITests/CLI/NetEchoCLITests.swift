import Foundation
import XCTest

/// The `net_echo` bench's script as a user runs it: 20 connections echoing 4 MiB each at once,
/// server and clients in one CLI process. This load also stalls two channels that share one
/// descriptor (libdispatch keeps one epoll registration per descriptor number), which
/// `NetChannelTests.testEchoLoadByteForByte` does not show: it keeps the writing side's own
/// descriptor tested.
final class NetEchoCLITests: XCTestCase {
    func testTwentyConnectionsOfFourMiBEach() throws {
        let script = CLI.packageRoot.appendingPathComponent("scripts/benchmarks/echo.lua").path
        for round in 1...2 {
            let r = try CLI.run(["run", script, "20", "4194304"], timeout: 60)
            XCTAssertEqual(r.status, 0, "round \(round): " + r.stderr)
            XCTAssertNotNil(r.stdout.range(of: #"^[0-9]+\.[0-9] [0-9]+\.[0-9]{4}\n$"#, options: .regularExpression),
                            "round \(round): \(r.stdout)")
        }
    }
}
