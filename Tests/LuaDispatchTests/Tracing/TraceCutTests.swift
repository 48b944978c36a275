import Foundation
import XCTest
@testable import LuaDispatch

/// A trace written after the time limit stops at its deadline: what is left out is counted as
/// dropped and as `cut`, and the trace still reads. Without a deadline nothing changes.
final class TraceCutTests: XCTestCase {
    func testATraceCutShortAtItsDeadlineStillReads() throws {
        let rt = Runtime(tracing: true)
        defer { rt.close() }
        try rt.run(string: "local d = require'dispatch' local q = d.queue'x' for i = 1, 10000 do q:async(function() end) end")
        rt.runUntilIdle()
        let full = try XCTUnwrap(rt.traceJSON())
        let tracer = try XCTUnwrap(rt.tracer)
        rt.acquire()
        let whole = tracer.jsonBytes(until: .max)
        let none = tracer.jsonBytes(until: Tracer.clock() - 1)  // already past
        let count = tracer.events.count
        rt.release()

        XCTAssertEqual(whole.cut, 0)
        XCTAssertEqual(String(decoding: whole.bytes, as: UTF8.self), full)
        XCTAssertFalse(full.contains("\"cut\""))

        XCTAssertGreaterThan(count, 20_000)
        XCTAssertEqual(none.cut, count)
        let trace = try Trace(json: String(decoding: none.bytes, as: UTF8.self))
        XCTAssertEqual(trace.other["cut"] as? Int, count)
        XCTAssertEqual(trace.other["dropped"] as? Int, count)
        XCTAssertEqual(trace.other["events"] as? Int, 0)
        XCTAssertTrue(trace.ph("X").isEmpty)
        XCTAssertEqual(trace.events.filter { $0["name"] as? String == "events dropped" }.count, 1)
    }

    /// A host's interpreter traced to a file (`LUADISPATCH_TRACE`) whose run the time limit
    /// ended writes the trace as it closes: cut short, within moments, not seconds.
    func testAHostWritesABigTraceWithinTheLimit() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("host-big-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Only the first interpreter made while it is set takes the file (once per process).
        setenv("LUADISPATCH_TRACE", path, 1)
        let rt = Runtime()
        unsetenv("LUADISPATCH_TRACE")
        let started = Date()
        do {
            // The chunk computes after its submissions, so the limit ends this run however fast
            // the build submits (a plain debug build submitted the million blocks within 1 s,
            // and the run returned without an end).
            _ = try rt.run(string: "local d = require'dispatch' local q = d.queue'x' for i = 1, 1e6 do q:async(function() end) end "
                               + "while true do end",
                           timeLimit: 1)
            XCTFail("not ended")
        } catch {
            XCTAssertEqual(error.kind, .timeLimit, error.message)
        }
        rt.close()
        // 1.5 s promised; the rest is a loaded machine's.
        XCTAssertLessThan(Date().timeIntervalSince(started), 3.0)
        let trace = try Trace(json: String(contentsOfFile: path, encoding: .utf8))
        XCTAssertGreaterThan(trace.other["cut"] as? Int ?? 0, 0)
    }
}
