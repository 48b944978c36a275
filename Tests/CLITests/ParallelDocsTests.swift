import Foundation
import XCTest

/// The example of docs/parallel.md (a pipeline of workers connected by channels), run as printed.
final class ParallelDocsTests: XCTestCase {
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
}
