import Foundation
import XCTest
@testable import LuaDispatch

/// The execution timeline of known scripts: exactly the blocks, threads, flows and waits they make.
final class TraceTests: XCTestCase {
    func testKnownScriptHasExactlyItsBlocksFlowsAndWaits() throws {
        let trace = try traceLua("""
            local dispatch = require('dispatch')
            local serial = dispatch.queue('serial')
            local conc = dispatch.queue{label = 'conc', concurrent = true}
            local g = dispatch.group()
            for i = 1, 3 do serial:async(function() dispatch.sleep(0.01) end, {group = g}) end
            conc:async(function() end, {group = g})
            conc:async(function() end, {group = g, barrier = true})
            g:notify(dispatch.main, function() end)
            serial:sync(function() end)
            dispatch.main:after(0.02, function() end)
            """)
        trace.checkShape()
        let blocks = trace.blocks
        XCTAssertEqual(blocks.count, 9)  // chunk, 3 + 1 async, barrier, notify, sync, after
        XCTAssertEqual(trace.blocks(kind: "main chunk").count, 1)
        XCTAssertEqual(trace.blocks(kind: "async").count, 4)
        XCTAssertEqual(trace.blocks(kind: "barrier").count, 1)
        XCTAssertEqual(trace.blocks(kind: "notify").count, 1)
        XCTAssertEqual(trace.blocks(kind: "sync").count, 1)
        XCTAssertEqual(trace.blocks(kind: "after").count, 1)
        XCTAssertEqual(blocks.filter { Trace.arg($0, "queue") == "serial" }.count, 4)
        XCTAssertEqual(blocks.filter { Trace.arg($0, "queue") == "conc" }.count, 2)
        // Sources are the functions' own lines.
        XCTAssertEqual(Set(trace.blocks(kind: "async").compactMap { Trace.arg($0, "source") }), ["test:5", "test:6"])
        XCTAssertEqual(Trace.arg(trace.blocks(kind: "barrier")[0], "source"), "test:7")
        XCTAssertEqual(Trace.arg(trace.blocks(kind: "notify")[0], "source"), "test:8")
        XCTAssertEqual(Trace.arg(trace.blocks(kind: "after")[0], "source"), "test:10")
        // The chunk, the notify and the after ran on the main thread.
        let main = try XCTUnwrap(trace.blocks(kind: "main chunk").first)
        XCTAssertEqual(Trace.tid(main), 1)
        XCTAssertEqual(trace.threadNames[1], "main thread")
        for kind in ["notify", "after"] { XCTAssertEqual(Trace.tid(trace.blocks(kind: kind)[0]), 1, kind) }
        for (tid, name) in trace.threadNames where tid != 1 { XCTAssertEqual(name, "worker \(tid)") }
        // One flow per async, barrier, notify and after (7), none for sync; all from the main chunk.
        XCTAssertEqual(trace.ph("s").count, 7)
        XCTAssertEqual(trace.ph("f").count, 7)
        for s in trace.ph("s") {
            XCTAssertEqual(Trace.tid(s), 1)
            XCTAssertTrue(Trace.ts(main) <= Trace.ts(s) && Trace.ts(s) <= Trace.end(main))
        }
        // Waits: the sync in the chunk (holding the sync block) and the three sleeps.
        let waits = trace.cat("wait")
        XCTAssertEqual(waits.map { $0["name"] as? String ?? "" }.sorted(), ["sleep", "sleep", "sleep", "sync"])
        let sync = try XCTUnwrap(waits.first { $0["name"] as? String == "sync" })
        let syncBlock = trace.blocks(kind: "sync")[0]
        XCTAssertEqual(Trace.tid(sync), 1)
        XCTAssertTrue(Trace.ts(main) <= Trace.ts(sync) && Trace.end(sync) <= Trace.end(main))
        XCTAssertTrue(Trace.ts(sync) <= Trace.ts(syncBlock) && Trace.end(syncBlock) <= Trace.end(sync))
        // The serial queue's blocks never overlap, and each sleep lies inside one of them.
        let serial = blocks.filter { Trace.arg($0, "queue") == "serial" }.sorted { Trace.ts($0) < Trace.ts($1) }
        for (a, b) in zip(serial, serial.dropFirst()) { XCTAssertLessThanOrEqual(Trace.end(a), Trace.ts(b)) }
        for sleep in waits where sleep["name"] as? String == "sleep" {
            XCTAssertTrue(serial.contains { Trace.tid($0) == Trace.tid(sleep) && Trace.ts($0) <= Trace.ts(sleep)
                && Trace.end(sleep) <= Trace.end($0) })
        }
        // The barrier ran alone on its queue.
        let barrier = trace.blocks(kind: "barrier")[0]
        for other in blocks where Trace.arg(other, "queue") == "conc" && Trace.arg(other, "kind") != "barrier" {
            XCTAssertTrue(Trace.end(other) <= Trace.ts(barrier) || Trace.end(barrier) <= Trace.ts(other))
        }
        // The notify ran after every block of the group.
        let notify = trace.blocks(kind: "notify")[0]
        for b in blocks where ["serial", "conc"].contains(Trace.arg(b, "queue")) && Trace.arg(b, "kind") != "sync" {
            XCTAssertLessThanOrEqual(Trace.end(b), Trace.ts(notify))
        }
        XCTAssertEqual(trace.other["dropped"] as? Int, 0)
    }

    func testConcurrentPerformIterationsAndTheirWait() throws {
        let trace = try traceLua("""
            local dispatch = require('dispatch')
            dispatch.concurrent_perform(4, function(i) dispatch.sleep(0.005) end)
            """)
        trace.checkShape()
        let apply = trace.blocks(kind: "apply")
        XCTAssertEqual(apply.count, 4)
        XCTAssertEqual(Set(apply.compactMap { Trace.arg($0, "source") }), ["test:2"])
        let waits = trace.cat("wait")
        XCTAssertEqual(waits.filter { $0["name"] as? String == "concurrent_perform" }.count, 1)
        XCTAssertEqual(waits.filter { $0["name"] as? String == "sleep" }.count, 4)
        let perform = waits.first { $0["name"] as? String == "concurrent_perform" }!
        for b in apply { XCTAssertTrue(Trace.ts(perform) <= Trace.ts(b) && Trace.end(b) <= Trace.end(perform)) }
        XCTAssertEqual(trace.ph("s").count, 0)
    }

    func testInstantsForSuspendResumeActivateCancelAndErrors() throws {
        let trace = try traceLua("""
            local dispatch = require('dispatch')
            local q = dispatch.queue{label = 'idle', inactive = true}
            q:activate()
            q:suspend()
            q:resume()
            local item = dispatch.work_item(function() end)
            item:cancel()
            dispatch.queue('bad'):async(function() error('boom') end)
            """)
        trace.checkShape()
        let instants = trace.ph("i").map { ($0["name"] as? String ?? "", Trace.arg($0, "subject") ?? "") }
        XCTAssertEqual(instants.map(\.0), ["activate", "suspend", "resume", "cancel", "error"])
        XCTAssertEqual(instants[0].1, "idle")
        XCTAssertTrue(instants[4].1.contains("boom"))
        let error = trace.ph("i")[4], bad = try XCTUnwrap(trace.blocks.first { Trace.arg($0, "queue") == "bad" })
        XCTAssertEqual(Trace.tid(error), Trace.tid(bad))
        XCTAssertTrue(Trace.ts(bad) <= Trace.ts(error) && Trace.ts(error) <= Trace.end(bad))
    }

    func testTasksAreBlocksOfTheirQueue() throws {
        let trace = try traceLua("""
            local dispatch = require('dispatch')
            local q = dispatch.queue('tasks')
            for i = 1, 2 do dispatch.task(function() dispatch.sleep(0.01) end, q) end
            """)
        trace.checkShape()
        // Each task runs in two steps: up to its sleep, and after it.
        let steps = trace.blocks(kind: "task")
        XCTAssertEqual(steps.count, 4)
        XCTAssertTrue(steps.allSatisfy { Trace.arg($0, "queue") == "tasks" })
        XCTAssertEqual(steps.map { Trace.arg($0, "source") }, Array(repeating: "test:3", count: 4))
        XCTAssertEqual(trace.cat("wait").count, 0, "a task's sleep holds no thread")
    }

    func testBoundedBufferNotesDroppedEvents() throws {
        let trace = try traceLua("""
            local dispatch = require('dispatch')
            local q = dispatch.queue('many')
            for i = 1, 200 do q:async(function() end) end
            """, limit: 50)
        trace.checkShapeOfTruncated()
        XCTAssertEqual(trace.other["events"] as? Int, 50)
        let dropped = try XCTUnwrap(trace.other["dropped"] as? Int)
        XCTAssertGreaterThan(dropped, 200)  // 200 flow starts, 200 flow ends and 200 blocks: 600 events
        let note = try XCTUnwrap(trace.ph("i").first { $0["name"] as? String == "events dropped" })
        XCTAssertEqual((note["args"] as? [String: Any])?["dropped"] as? Int, dropped)
    }

    func testTracingOffRecordsNothing() throws {
        let rt = TestRuntimes.make(tracing: false)
        defer { rt.close() }
        try rt.run(string: "require('dispatch').queue('q'):async(function() end)")
        rt.runUntilIdle()
        XCTAssertFalse(rt.isTracing)
        XCTAssertNil(rt.traceJSON())
        XCTAssertFalse(rt.writeTrace(to: "/dev/null"))
    }

    func testWriteTraceAndEscapes() throws {
        let rt = TestRuntimes.make(tracing: true)
        defer { rt.close() }
        rt.uncaughtErrorHandler = { _ in }
        try rt.run(string: "require('dispatch').queue('q \"quoted\"\\n\\t'):async(function() error('a\\1b') end)", name: "=test")
        rt.runUntilIdle()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertTrue(rt.writeTrace(to: path))
        let trace = try Trace(json: try String(contentsOfFile: path, encoding: .utf8))
        trace.checkShape()
        // Among the blocks (a main-queue block, the uncaught error's report, may come last).
        XCTAssertTrue(trace.blocks.contains { Trace.arg($0, "queue") == "q \"quoted\"\n\t" },
                      "\(trace.blocks.map { Trace.arg($0, "queue") })")
        XCTAssertTrue(Trace.arg(trace.ph("i")[0], "subject")?.contains("a\u{1}b") ?? false)
        XCTAssertFalse(rt.writeTrace(to: "/nonexistent/dir/t.json"))
    }
}

extension Trace {
    /// A truncated trace: still valid JSON of the documented shape, except that flows may have
    /// lost an end.
    func checkShapeOfTruncated(file: StaticString = #filePath, line: UInt = #line) {
        for e in ph("X") { XCTAssertNotNil(e["dur"] as? Double, file: file, line: line) }
        XCTAssertNotNil(threadNames[1], file: file, line: line)
    }
}
