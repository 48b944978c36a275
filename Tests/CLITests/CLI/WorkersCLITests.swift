import Foundation
import XCTest

/// Worker pools through the CLI: the example of docs/parallel.md, and errors nobody retrieved.
final class WorkersCLITests: XCTestCase {
    func testThePipelineExampleRunsAsDocumented() throws {
        let doc = try String(contentsOf: CLI.packageRoot.appendingPathComponent("docs/parallel.md"), encoding: .utf8)
        let marker = try XCTUnwrap(doc.range(of: "<!-- example: pipeline -->\n```lua\n"))
        let end = try XCTUnwrap(doc.range(of: "\n```", range: marker.upperBound..<doc.endIndex))
        let code = String(doc[marker.upperBound..<end.lowerBound])
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID()).lua")
        try code.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try CLI.run(["run", file.path], timeout: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "sum of squares:\t333833500\n")
        XCTAssertEqual(r.stderr, "")
    }

    /// A job's error that nothing retrieved, found when its handle is collected as the script's
    /// interpreter closes, is reported like any uncaught error: on stderr, and exit status 1.
    func testAnErrorNobodyRetrievedFailsTheRun() throws {
        let r = try CLI.run(["-e", """
            local dispatch = require("dispatch")
            local pool = dispatch.workers{count = 1}
            pool:submit(function() error("lost job error") end)
            """], timeout: 30)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("error in block on queue 'pool #1': (command line):3: lost job error\nstack traceback:"), r.stderr)
    }
}
