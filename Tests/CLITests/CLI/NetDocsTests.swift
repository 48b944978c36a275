import Foundation
import XCTest

/// The examples of docs/net.md, run as they stand with the CLI.
final class NetDocsTests: XCTestCase {
    struct Missing: Error { let heading: String }

    /// The first ```lua block after `heading` in docs/net.md.
    static func example(after heading: String) throws -> String {
        let text = try String(contentsOf: CLI.packageRoot.appendingPathComponent("docs/net.md"), encoding: .utf8)
        guard let h = text.range(of: "\n" + heading + "\n"),
              let open = text.range(of: "```lua\n", range: h.upperBound..<text.endIndex),
              let close = text.range(of: "\n```\n", range: open.upperBound..<text.endIndex)
        else { throw Missing(heading: heading) }
        return String(text[open.upperBound..<close.lowerBound]) + "\n"
    }

    static func runExample(_ heading: String) throws -> CLIResult {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("net-example-\(UUID().uuidString).lua")
        try example(after: heading).write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try CLI.run(["run", file.path], timeout: 60)
    }

    /// The request/response server that opens the page: three answers, then the CLI exits 0
    /// with no work left.
    func testRequestResponseExample() throws {
        let r = try Self.runExample("## A request/response server")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "OK\nhello\n\n")
        XCTAssertEqual(r.stderr, "")
    }

    /// The HTTP/1.0 server serves a mapped file (200) and a missing one (404) to
    /// `dispatch.http.get`, then stops; the CLI exits 0 with no work left.
    func testHTTPServerExample() throws {
        let r = try Self.runExample("## Example: an HTTP/1.0 server")
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, r.stdout)
        XCTAssertTrue(lines.first?.hasPrefix("serving /") ?? false, r.stdout)
        XCTAssertEqual(Set(lines.dropFirst()), ["hello.txt\t200\t\tHello from a GCD server in Lua.", "missing.txt\t404\t\tnot found"])
    }

    /// The pattern's echo: one client, its message back.
    func testEchoPatternExample() throws {
        let r = try Self.runExample("## The pattern: a server, its connections, its clients")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "hello, echo\n")
    }
}
