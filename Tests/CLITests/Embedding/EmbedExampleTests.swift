import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The embedding example end to end: a rules script against a project directory, callbacks on
/// file changes, an async host function fetching from a loopback server, a Codable
/// configuration, and the errors a user sees.
final class EmbedExampleTests: XCTestCase {
    static let rules = """
        local dispatch = require("dispatch")
        local host = require("host")
        local project = host.project
        local notify = arg[1]

        host.on_change(function(change)
          host.log(("%s %s (%s bytes); %s, #project = %d"):format(
            change.kind, change.file, tostring(change.size), tostring(project), #project))
          if change.kind == "modified" then
            dispatch.task(function()                     -- waits without holding a thread
              local answer = host.fetch(notify .. "?file=" .. change.file)
              host.log("notified: " .. answer)
              project:write("log.txt", project:read(change.file):upper())
              host.stop()
            end)
          end
        end)

        return {name = "notes", include = {"*.md", "*.txt"}, poll_interval = 0.05}
        """

    private func project(_ files: [String: String]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("embed-example-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return dir
    }

    private func start(_ arguments: [String]) throws -> (Process, LineReader, Pipe) {
        // Its own Process, not CLI.run: the test reads lines while the tool runs and edits files between.
        let p = Process()
        p.executableURL = CLI.productsDirectory.appendingPathComponent("embed-example")
        p.arguments = arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        return (p, LineReader(out.fileHandleForReading), err)
    }

    func testCallbacksAsyncFetchAndConfiguration() throws {
        let server = try LoopbackHTTP { query in "ok " + query }
        defer { server.stop() }
        let dir = try project(["a.md": "# A\n", "b.txt": "bee\n", "c.png": "not watched"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let rules = dir.appendingPathComponent("rules.lua")
        try Self.rules.write(to: rules, atomically: true, encoding: .utf8)
        let (p, lines, err) = try start(["--for", "30", dir.path, rules.path, "http://127.0.0.1:\(server.port)/hook"])
        defer { if p.isRunning { p.terminate() } }
        XCTAssertEqual(lines.next(), "[rules] created a.md (4 bytes); Project notes (2 files), #project = 2")
        XCTAssertEqual(lines.next(), "[rules] created b.txt (4 bytes); Project notes (2 files), #project = 2")
        XCTAssertEqual(lines.next(), "[host] watching 2 files of notes")
        Thread.sleep(forTimeInterval: 0.1)
        try "buzz buzz\n".write(to: dir.appendingPathComponent("b.txt"), atomically: true, encoding: .utf8)
        XCTAssertEqual(lines.next(), "[rules] modified b.txt (10 bytes); Project notes (2 files), #project = 2")
        XCTAssertEqual(lines.next(), "[rules] notified: ok file=b.txt")
        // The task wrote log.txt, which the watcher may or may not see before the tool stops.
        var rest: [String] = []
        while let line = lines.next() { rest.append(line) }
        p.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(p.terminationStatus, 0, stderr)
        XCTAssertTrue(rest.last?.hasPrefix("[host] ") == true && rest.last?.hasSuffix(" changes delivered, 0 failed") == true, "\(rest)")
        XCTAssertEqual(try String(contentsOf: dir.appendingPathComponent("log.txt"), encoding: .utf8), "BUZZ BUZZ\n")
        XCTAssertEqual(server.requests, ["file=b.txt"])
    }

    func testABadConfigurationNamesThePath() throws {
        let dir = try project(["a.md": "x"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let rules = dir.appendingPathComponent("rules.lua")
        try "return {name = 'x', include = {'*.md', 42}, poll_interval = 'fast'}".write(to: rules, atomically: true, encoding: .utf8)
        let (p, lines, err) = try start(["--once", dir.path, rules.path])
        XCTAssertNil(lines.next())
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 2)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(stderr.contains("returned a bad configuration: include[2]: string expected, got number"), stderr)
    }

    func testErrorsInCallbacksAndScriptsAreShown() throws {
        let dir = try project(["a.md": "x", "b.md": "y"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let rules = dir.appendingPathComponent("rules.lua")
        try """
            local host = require("host")
            host.on_change(function(change)
              if change.file == "a.md" then error("cannot handle " .. change.file) end
              host.log("handled " .. change.file)
              host.project:read("../outside")
            end)
            return {name = "broken"}
            """.write(to: rules, atomically: true, encoding: .utf8)
        let (p, lines, err) = try start(["--once", dir.path, rules.path])
        var out: [String] = []
        while let line = lines.next() { out.append(line) }
        p.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(p.terminationStatus, 1)
        XCTAssertEqual(out, ["[rules] handled b.md", "[rules] handled rules.lua", "[host] watching 3 files of broken",
                             "[host] 0 changes delivered, 3 failed"])
        XCTAssertTrue(stderr.contains("rules.lua:3: cannot handle a.md\nstack traceback:"), stderr)
        XCTAssertEqual(stderr.components(separatedBy: "rules.lua:5: read: '../outside' is not in the project\nstack traceback:").count, 3,
                       stderr)

        try "return (".write(to: rules, atomically: true, encoding: .utf8)
        let (q, _, qerr) = try start(["--once", dir.path, rules.path])
        q.waitUntilExit()
        XCTAssertEqual(q.terminationStatus, 1)
        let text = String(decoding: qerr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(text.contains("rules.lua:1: unexpected symbol near <eof>"), text)
    }
}

/// Lines of a pipe, as they come; nil at end of file or after 20 s without one.
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    func next() -> String? {
        let deadline = Date(timeIntervalSinceNow: 20)
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...nl)
                return line
            }
            guard Date() < deadline else { return nil }
            var pfd = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) >= 0 else { return nil }
            if pfd.revents == 0 { continue }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}

/// A loopback HTTP/1.0 server answering every GET with `answer(query)`, on a thread of its own.
final class LoopbackHTTP: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let answer: @Sendable (String) -> String
    private let lock = NSLock()
    private var seen: [String] = []

    var requests: [String] { lock.withLock { seen } }

    init(answer: @escaping @Sendable (String) -> String) throws {
        self.answer = answer
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(listener, p, len) == 0 && listen(listener, 16) == 0 && getsockname(listener, p, &len) == 0
            }
        }
        guard ok else { throw NSError(domain: "LoopbackHTTP", code: Int(errno)) }
        port = UInt16(bigEndian: addr.sin_port)
        Thread { [self] in serve() }.start()
    }

    /// Ends the server's thread.
    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    deinit { close(listener) }

    private func serve() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            var request = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &request, request.count)
            let line = String(decoding: request.prefix(max(0, n)), as: UTF8.self).split(separator: "\r\n").first ?? ""
            let target = line.split(separator: " ").dropFirst().first ?? ""
            let query = target.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            lock.withLock { seen.append(query) }
            let body = answer(query)
            let response = "HTTP/1.0 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            _ = response.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
    }
}
