import Foundation
import XCTest

/// docs/embedding.md's examples, as an outside package that depends on the library by path
/// (Tests/Fixtures/EmbedDocs) builds and runs them: they use the public API only, compile, and
/// print what the docs say. Its build directory is kept under .build, so only the first run
/// builds the library again.
final class EmbedDocsTests: XCTestCase {
    static let fixture = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/EmbedDocs")

    /// Every Swift block the guide marks `<!-- example: File.swift -->` is that file, verbatim.
    func testTheGuidesExamplesAreTheFixturesFiles() throws {
        let guide = try String(contentsOf: CLI.packageRoot.appendingPathComponent("docs/embedding.md"), encoding: .utf8)
        let parts = guide.components(separatedBy: "<!-- example: ").dropFirst()
        XCTAssertGreaterThanOrEqual(parts.count, 10)
        for part in parts {
            let name = String(part.prefix { $0 != " " })
            guard let start = part.range(of: "```swift\n"), let end = part.range(of: "\n```", range: start.upperBound..<part.endIndex) else {
                XCTFail("no code block after the marker for \(name)")
                continue
            }
            let block = String(part[start.upperBound..<end.lowerBound])
            let file = try String(contentsOf: Self.fixture.appendingPathComponent("Sources/EmbedDocs/" + name), encoding: .utf8)
            XCTAssertEqual(block + "\n", file, "docs/embedding.md's \(name) differs from the fixture's")
        }
    }

    func testAnOutsidePackageBuildsAndRunsTheExamples() throws {
        let scratch = CLI.packageRoot.appendingPathComponent(".build/fixtures/embed-docs")
        let build = try Self.run(["swift", "build", "--package-path", Self.fixture.path, "--scratch-path", scratch.path], timeout: 900)
        XCTAssertEqual(build.status, 0, build.output)
        let run = try Self.run([scratch.appendingPathComponent("debug/EmbedDocs").path], timeout: 120)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, """
            ["hello, lua! hello, lua! ", "bad argument #1 to 'greet' (string expected, got number)"]
            [15.0, "EUR", "buy: out of stock", "bad argument #1 to 'total' ([2]: number expected, got string)", 3]
            event: saved
            42
            printer:1: out of paper
            true
            10100
            ["Counter(visits = 42)", 42, true, "bad argument #1 to 'add' (Counter expected, got table)"]
            42
            ["127.0.0.1", "unknown", "127.0.0.1"]
            light
            ["mono"]
            [80, 443]
            servers[2].port: number expected, got string
            2
            [21.5, "bad argument #1 to 'warmer' (temperature expected, got string)"]
            [3, 2, "total: 6.5", 3, "bad argument #3 to 'sum' (number expected, got string)"]
            [3, 9, 3]
            3 9
            1
            dark
            ["main thread: true"]
            0

            """)
    }

    /// Runs a command (through `env`, so that `swift` is found on PATH); its status and output
    /// (standard output and error together).
    static func run(_ command: [String], timeout: Double) throws -> (status: Int32, output: String) {
        let r = try CLI.run(command, timeout: timeout, failOnTimeout: false, mergeOutput: true,
                            executable: URL(fileURLWithPath: "/usr/bin/env"))
        return (r.status, r.stdout)
    }
}
