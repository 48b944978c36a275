import Foundation
import XCTest

/// Runs every Lua and shell example of README.md and docs/*.md as written and compares what it
/// prints with what the page shows, so that a page that drifts from the program fails.
///
/// The marking convention. Every ```lua and ```sh block of a checked page has, on the lines
/// right above it (blank lines allowed), an HTML comment saying what it is; a block without one
/// fails the test. The comment holds words separated by `;`:
///
/// - `run`: a Lua block is a whole script. It is saved in the page's scratch directory under the
///   name its first line gives (`-- hello.lua`, or `-- lib/helpers.lua`; else `example-N.lua`)
///   and run there as `luadispatch NAME`; it must exit with status 0 (`exit=N`: with N). If the
///   next fenced block is marked `output`, standard output must be that block.
///   A shell block is a terminal session: each line starting with `$ ` is a command, run with
///   `sh -c` in the page's scratch directory (where the page's Lua blocks were saved, with
///   `scripts` linking to the repository's), the built `luadispatch` first on `PATH`; the lines
///   after it up to the next `$ ` are what it prints, standard output and error together (none:
///   not compared); each must exit with status 0 (`exit=N`: with N).
/// - `save`: a Lua block is saved under its name, for a later block to use, and not run.
/// - `output`: this plain block is the output of the `run` Lua block before it.
/// - `fragment`: part of a program. A Lua fragment is compiled (not run) as the body of a
///   function after `local dispatch = require("dispatch")`; a shell fragment is not run.
/// - modifiers of the compared output, on the `output` block or the shell session: `numbers
///   vary` (any run of digits matches any other), `any order` (lines compared as sorted).
/// - `server=URL`: the test serves `/a` (1,000 bytes) and `/b` (2,500 bytes) over HTTP on a free
///   loopback port and uses its address wherever the block (and the page's later blocks) say URL.
/// - `module=DIR`: DIR stands for a directory holding `dispatch.so` (the module built next to the
///   tests), as `scripts/build-module DIR` leaves it.
///
/// Pages listed in `excluded` are skipped (others own them for now); every other page of the
/// two places is checked, new pages included.
final class DocExamplesTests: XCTestCase {
    static let excluded: Set<String> = []

    struct Block {
        let page: String
        let line: Int
        let language: String
        let markers: [String]
        let text: String
        func has(_ word: String) -> Bool { markers.contains(word) }
        func value(_ key: String) -> String? {
            markers.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        var location: String { "\(page):\(line)" }
    }

    static var pages: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: CLI.packageRoot.appendingPathComponent("docs").path)) ?? []
        return (["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 })
            .filter { !excluded.contains($0) }
    }

    /// The fenced blocks of a page, each with the words of the comments right above it.
    static func blocks(of page: String) throws -> [Block] {
        blocks(in: try String(contentsOf: CLI.packageRoot.appendingPathComponent(page), encoding: .utf8), page: page)
    }

    static func blocks(in text: String, page: String) -> [Block] {
        let lines = text.components(separatedBy: "\n")
        var result: [Block] = []
        var i = 0
        var comments: [String] = []
        while i < lines.count {
            let line = lines[i]
            if line.hasPrefix("<!--") && line.hasSuffix("-->") {
                let inner = line.dropFirst(4).dropLast(3)
                comments += inner.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            } else if line.hasPrefix("```") {
                let language = String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces)
                var body: [String] = []
                i += 1
                while i < lines.count && !lines[i].hasPrefix("```") { body.append(lines[i]); i += 1 }
                result.append(Block(page: page, line: i - body.count, language: language, markers: comments,
                                    text: body.joined(separator: "\n") + "\n"))
                comments = []
            } else if !line.trimmingCharacters(in: .whitespaces).isEmpty {
                comments = []
            }
            i += 1
        }
        return result
    }

    static func normalized(_ text: String, _ block: Block) -> String {
        var lines = text.components(separatedBy: "\n").map { $0.replacingOccurrences(of: "\r", with: "") }
        while lines.last?.isEmpty == true { lines.removeLast() }
        if block.has("numbers vary") {
            lines = lines.map { $0.replacingOccurrences(of: "[0-9]+", with: "N", options: .regularExpression) }
        }
        if block.has("any order") { lines.sort() }
        return lines.joined(separator: "\n")
    }

    /// Every Lua and shell block is marked, and every page's examples give what the page shows.
    func testExamplesRunAsWritten() throws {
        var checked = 0
        for page in Self.pages {
            let blocks = try Self.blocks(of: page)
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("doc-examples-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: scratch) }
            try FileManager.default.createSymbolicLink(at: scratch.appendingPathComponent("scripts"),
                                                       withDestinationURL: CLI.packageRoot.appendingPathComponent("scripts"))
            var servers: [String: HTTPFixture] = [:]
            defer { servers.values.forEach { $0.stop() } }
            var substitutions: [(String, String)] = []
            for (index, block) in blocks.enumerated() where block.language == "lua" || block.language == "sh" {
                if let url = block.value("server"), servers[url] == nil {
                    let server = try HTTPFixture()
                    servers[url] = server
                    substitutions.append((url, server.baseURL))
                }
                if let dir = block.value("module") {
                    substitutions.append((dir, StockLua.moduleDirectory.path))
                }
                func substituted(_ s: String) -> String { substitutions.reduce(s) { $0.replacingOccurrences(of: $1.0, with: $1.1) } }
                let next = blocks.indices.contains(index + 1) ? blocks[index + 1] : nil
                switch (block.language, block.markers) {
                case (_, let m) where m.contains("fragment"):
                    if block.language == "lua" { try compile(block) }
                case ("lua", let m) where m.contains("run") || m.contains("save"):
                    let name = block.text.range(of: #"^-- ([A-Za-z0-9_./-]+\.lua)"#, options: .regularExpression)
                        .map { String(block.text[$0].dropFirst(3)) } ?? "example-\(index).lua"
                    let file = scratch.appendingPathComponent(name)
                    try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try substituted(block.text).write(to: file, atomically: false, encoding: .utf8)
                    guard m.contains("run") else { continue }
                    let r = try CLI.run([name], directory: scratch)
                    let status = block.value("exit").flatMap { Int32($0) } ?? 0
                    XCTAssertEqual(r.status, status, "\(block.location): \(r.stdout)\(r.stderr)")
                    if let next, next.has("output") {
                        XCTAssertEqual(Self.normalized(r.stdout, next), Self.normalized(next.text, next),
                                       "\(block.location): the output differs from what the page shows; stderr: \(r.stderr)")
                    }
                case ("sh", let m) where m.contains("run"):
                    try runSession(block, in: scratch, substituted)
                default:
                    XCTFail("\(block.location): a ```\(block.language) block needs a marker (<!-- run -->, <!-- fragment -->, ...)")
                }
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 20)
    }

    func compile(_ block: Block) throws {
        let wrapped = "local dispatch = require(\"dispatch\")\nreturn function(...)\n" + block.text + "\nend\n"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fragment-\(UUID().uuidString).lua")
        try wrapped.write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        // Running the wrapper compiles the fragment and returns the function, which is not called.
        let r = try CLI.run([file.path])
        XCTAssertEqual(r.status, 0, "\(block.location): the fragment does not compile: \(r.stderr)")
    }

    func runSession(_ block: Block, in scratch: URL, _ substituted: (String) -> String) throws {
        var commands: [(String, [String])] = []
        for line in block.text.components(separatedBy: "\n") {
            if line.hasPrefix("$ ") { commands.append((String(line.dropFirst(2)), [])) }
            else if !commands.isEmpty { commands[commands.count - 1].1.append(line) }
        }
        XCTAssertFalse(commands.isEmpty, "\(block.location): a run shell block has no `$ ` command")
        let path = CLI.productsDirectory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        for (command, expected) in commands {
            var line = substituted(command)
            // In a sanitizer build the module needs the sanitizer's runtime, which lua5.4 lacks:
            // preloaded into lua5.4 alone, as StockLua does.
            if let runtime = StockLua.sanitizerRuntime {
                line = line.replacingOccurrences(of: #"(^|\s)lua5\.4 "#, with: "$1LD_PRELOAD=\(runtime) lua5.4 ",
                                                 options: .regularExpression)
            }
            let r = try CLI.run(["-c", line + " 2>&1"], environment: ["PATH": path], timeout: 120,
                                directory: scratch, executable: URL(fileURLWithPath: "/bin/sh"))
            let shown = expected.joined(separator: "\n")
            if !shown.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                XCTAssertEqual(Self.normalized(r.stdout, block), Self.normalized(shown, block),
                               "\(block.location): `\(command)` prints other than the page shows")
            }
            let status = block.value("exit").flatMap { Int32($0) } ?? 0
            XCTAssertEqual(r.status, status, "\(block.location): `\(command)`: \(r.stdout)")
        }
    }

    /// docs/api.md, types/dispatch.lua and the module the CLI loads name the same functions and
    /// methods (Tests/lua/check-types.lua); a name dropped from api.md, or one the module has and
    /// the definitions lack, fails the check and is named.
    func testReferenceNamesEveryExport() throws {
        let root = CLI.packageRoot
        let check = root.appendingPathComponent("Tests/lua/check-types.lua").path
        let ok = try CLI.run(["run", check, root.path])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.contains("agree in api.md, types/dispatch.lua and the loaded module"), ok.stdout)

        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("reference-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: copy) }
        for dir in ["docs", "types"] {
            try FileManager.default.createDirectory(at: copy.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        try FileManager.default.copyItem(at: root.appendingPathComponent("types/dispatch.lua"), to: copy.appendingPathComponent("types/dispatch.lua"))
        let api = try String(contentsOf: root.appendingPathComponent("docs/api.md"), encoding: .utf8)
        let row = "| `dispatch.http.get(url, queue, fn(body, status, err))` |"
        XCTAssertTrue(api.contains(row))
        try api.replacingOccurrences(of: row, with: "| an HTTP GET |")
            .write(to: copy.appendingPathComponent("docs/api.md"), atomically: false, encoding: .utf8)
        let dropped = try CLI.run(["run", check, copy.path])
        XCTAssertEqual(dropped.status, 1)
        XCTAssertTrue(dropped.stderr.contains("defined but not documented: dispatch.http.get"), dropped.stderr)

        let extra = try CLI.run(["-e", "require('dispatch').source.secret = function() end", check, root.path])
        XCTAssertEqual(extra.status, 1)
        XCTAssertTrue(extra.stderr.contains("in the module but not defined: dispatch.source.secret"), extra.stderr)
    }

    /// The parser reads the markers; the comparison tells different output apart, and lets
    /// numbers and order vary only where marked.
    func testConventionCatchesDrift() throws {
        let page = "<!-- run -->\n```lua\nprint(1 + 1)\n```\n<!-- output -->\n```\n3\n```\n\n```lua\nprint(2)\n```\n"
        let blocks = Self.blocks(in: page, page: "self-test")
        XCTAssertEqual(blocks.map(\.markers), [["run"], ["output"], []])
        let r = try CLI.run(["-e", blocks[0].text])
        XCTAssertNotEqual(Self.normalized(r.stdout, blocks[1]), Self.normalized(blocks[1].text, blocks[1]))
        let vary = Block(page: "", line: 0, language: "", markers: ["numbers vary", "any order"], text: "")
        XCTAssertEqual(Self.normalized("b 12\na 3\n", vary), Self.normalized("a 7\nb 100", vary))
    }
}

/// A loopback HTTP server (python3's http.server) serving `/a` and `/b`.
final class HTTPFixture {
    // Its own Process, not CLI.run: a server that runs while the test does, stopped by it.
    let process = Process()
    let root: URL
    private(set) var baseURL = ""

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("http-fixture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try String(repeating: "a", count: 1000).write(to: root.appendingPathComponent("a"), atomically: false, encoding: .utf8)
        try String(repeating: "b", count: 2500).write(to: root.appendingPathComponent("b"), atomically: false, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
        var seen = ""
        while !seen.contains("\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        guard let range = seen.range(of: #"port [0-9]+"#, options: .regularExpression) else {
            stop()
            throw NSError(domain: "HTTPFixture", code: 1, userInfo: [NSLocalizedDescriptionKey: "python3 http.server: \(seen)"])
        }
        baseURL = "http://127.0.0.1:" + seen[range].dropFirst(5)
    }

    func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: root)
    }
}
