import Foundation
import XCTest

/// Tracing through the CLI: `LUADISPATCH_TRACE`, `scenarios run --trace DIR`, `trace view`.
final class TraceCLITests: XCTestCase {
    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func events(_ path: URL) throws -> [[String: Any]] {
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any]
        return try XCTUnwrap(root?["traceEvents"] as? [[String: Any]])
    }

    static func blocks(_ events: [[String: Any]]) -> [[String: Any]] {
        events.filter { $0["ph"] as? String == "X" && $0["cat"] as? String == "block" }
    }

    static func kind(_ e: [String: Any]) -> String? { (e["args"] as? [String: Any])?["kind"] as? String }
    static func ts(_ e: [String: Any]) -> Double { e["ts"] as! Double }
    static func end(_ e: [String: Any]) -> Double { ts(e) + (e["dur"] as! Double) }

    /// 3.8: tasks 1-3, then the barrier alone, then tasks 4-6, each on a named worker thread.
    func testScenarioTraceShowsTheBarrierAlone() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(["scenarios", "run", "3.8", "--scale", "0.2", "--trace", dir.path])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        let events = try Self.events(dir.appendingPathComponent("3.8.json"))
        let queue = "com.sinkingsoul.DispatchQueueTest.concurrentQueue"
        let blocks = Self.blocks(events).filter { ($0["name"] as? String) == queue }.sorted { Self.ts($0) < Self.ts($1) }
        XCTAssertEqual(blocks.map { Self.kind($0) ?? "" }, ["async", "async", "async", "barrier", "async", "async", "async"])
        guard blocks.count == 7 else { return }
        let barrier = blocks[3]
        for b in blocks[..<3] { XCTAssertLessThanOrEqual(Self.end(b), Self.ts(barrier)) }
        for b in blocks[4...] { XCTAssertLessThanOrEqual(Self.end(barrier), Self.ts(b)) }
        let names = Dictionary(events.filter { $0["name"] as? String == "thread_name" }.map {
            ($0["tid"] as! Int, ($0["args"] as! [String: Any])["name"] as! String)
        }, uniquingKeysWith: { a, _ in a })
        for b in blocks { XCTAssertEqual(names[b["tid"] as! Int], "worker \(b["tid"] as! Int)") }
        XCTAssertEqual(names[1], "main thread")
        // Every block of the queue was started by a submission from the main thread.
        XCTAssertEqual(events.filter { $0["ph"] as? String == "s" && $0["tid"] as? Int == 1 }.count, 8)
    }

    /// The trace is written however the process ends.
    func testTraceWrittenAfterErrorsAndExits() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let endings = [
            "uncaught": "q:async(function() error('in a block') end)",
            "chunk-error": "local s = dispatch.semaphore(0); q:async(function() s:signal(); dispatch.sleep(0.5) end); "
                + "s:wait(); error('in the chunk')",
            "dispatch-exit": "q:async(function() dispatch.exit(3) end)",
            "os-exit": "q:sync(function() end); os.exit(4)",
        ]
        for (name, ending) in endings {
            let script = dir.appendingPathComponent("\(name).lua"), trace = dir.appendingPathComponent("\(name).json")
            try "local dispatch = require('dispatch'); local q = dispatch.queue('q')\n\(ending)\n"
                .write(to: script, atomically: false, encoding: .utf8)
            let r = try CLI.run(["run", script.path], environment: ["LUADISPATCH_TRACE": trace.path])
            XCTAssertNotEqual(r.status, 0, name)
            let events = try Self.events(trace)
            let blocks = Self.blocks(events)
            XCTAssertEqual(blocks.filter { Self.kind($0) == "main chunk" }.count, 1, name)
            XCTAssertEqual(blocks.filter { Self.kind($0) == (name == "os-exit" ? "sync" : "async") }.count, 1, name)
            // Blocks the process ended in the middle of are written, marked unfinished.
            let unfinished = blocks.filter { ($0["args"] as? [String: Any])?["unfinished"] as? Bool == true }.map { Self.kind($0) ?? "" }
            let expected = ["uncaught": [], "chunk-error": ["async"], "dispatch-exit": ["async"], "os-exit": ["main chunk"]]
            XCTAssertEqual(unfinished, expected[name], name)
            let errors = events.filter { $0["ph"] as? String == "i" && $0["name"] as? String == "error" }.count
            // A block's uncaught error, and the chunk's own error (which the CLI reports).
            XCTAssertEqual(errors, name == "uncaught" || name == "chunk-error" ? 1 : 0, name)
        }
    }

    func testTraceViewRejectsBadInput() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appendingPathComponent("bad.json")
        try "{\"traceEvents\": 3}".write(to: bad, atomically: false, encoding: .utf8)
        let r1 = try CLI.run(["trace", "view", bad.path])
        XCTAssertEqual(r1.status, 2)
        XCTAssertTrue(r1.stderr.contains("no \"traceEvents\" array"), r1.stderr)
        let r2 = try CLI.run(["trace", "view", dir.appendingPathComponent("missing.json").path])
        XCTAssertEqual(r2.status, 2)
        XCTAssertTrue(r2.stderr.contains("cannot read"), r2.stderr)
        let r3 = try CLI.run(["trace", "show"])
        XCTAssertEqual(r3.status, 2)
        XCTAssertTrue(r3.stderr.contains("usage: luadispatch trace view"), r3.stderr)
    }
}
