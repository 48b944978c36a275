import XCTest

/// The embedding example runs a script that uses a host function, a host value and a host queue.
final class EmbedExampleTests: XCTestCase {
    func testExampleRunsItsScriptAndCallsBackIntoLua() throws {
        let p = Process()
        p.executableURL = CLI.productsDirectory.appendingPathComponent("embed-example")
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        XCTAssertEqual(p.terminationStatus, 0)
        let lines = text.split(separator: "\n").map(String.init)
        XCTAssertEqual(Set(lines.prefix(3)), ["[host] text 1 has 9 words", "[host] text 2 has 7 words", "[host] text 3 has 7 words"])
        XCTAssertEqual(lines[3], "[host] all 3 texts counted on the main thread: true")
        XCTAssertEqual(lines[4], "[host] summary from Lua: [host: \"embed-example\", texts: 3, words: 23]")
    }

    func testExampleReportsScriptErrorsFromAFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID()).lua")
        try "local host = require('host'); host.word_count(42)".write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let p = Process()
        p.executableURL = CLI.productsDirectory.appendingPathComponent("embed-example")
        p.arguments = [file.path]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 1)
        XCTAssertTrue(text.contains("word_count: string expected"), text)
    }
}
