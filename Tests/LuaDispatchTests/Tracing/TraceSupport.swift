import Foundation
import XCTest
@testable import LuaDispatch

/// A parsed trace, with the checks every trace must pass (the documented shape).
struct Trace {
    let events: [[String: Any]]
    let other: [String: Any]

    init(json: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let root = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
                                 "not a JSON object", file: file, line: line)
        events = try XCTUnwrap(root["traceEvents"] as? [[String: Any]], "no traceEvents array", file: file, line: line)
        other = root["otherData"] as? [String: Any] ?? [:]
    }

    func ph(_ p: String) -> [[String: Any]] { events.filter { $0["ph"] as? String == p } }
    func cat(_ c: String) -> [[String: Any]] { ph("X").filter { $0["cat"] as? String == c } }
    var blocks: [[String: Any]] { cat("block") }
    func blocks(kind: String) -> [[String: Any]] { blocks.filter { Trace.arg($0, "kind") == kind } }
    static func arg(_ e: [String: Any], _ key: String) -> String? { (e["args"] as? [String: Any])?[key] as? String }
    static func ts(_ e: [String: Any]) -> Double { e["ts"] as? Double ?? .nan }
    static func end(_ e: [String: Any]) -> Double { ts(e) + (e["dur"] as? Double ?? .nan) }
    static func tid(_ e: [String: Any]) -> Int { e["tid"] as? Int ?? -1 }

    /// Thread names by tid.
    var threadNames: [Int: String] {
        var names: [Int: String] = [:]
        for e in ph("M") where e["name"] as? String == "thread_name" {
            names[Trace.tid(e)] = Trace.arg(e, "name")
        }
        return names
    }

    /// The documented shape: field types per phase, a name for every thread, every flow's start
    /// before its end and its end at the start of a block on its thread, slices on one thread
    /// nested or disjoint.
    func checkShape(file: StaticString = #filePath, line: UInt = #line) {
        let names = threadNames
        for e in events {
            let ph = e["ph"] as? String ?? "?"
            XCTAssertNotNil(e["pid"] as? Int, "pid in \(e)", file: file, line: line)
            XCTAssertNotNil(e["tid"] as? Int, "tid in \(e)", file: file, line: line)
            XCTAssertNotNil(e["name"] as? String, "name in \(e)", file: file, line: line)
            guard ph != "M" else { continue }
            XCTAssertNotNil(e["ts"] as? Double, "ts in \(e)", file: file, line: line)
            if Trace.tid(e) != 0 { XCTAssertNotNil(names[Trace.tid(e)], "no thread_name for \(e)", file: file, line: line) }
            switch ph {
            case "X":
                XCTAssertGreaterThanOrEqual(e["dur"] as? Double ?? -1, 0, "dur in \(e)", file: file, line: line)
                let cat = e["cat"] as? String
                XCTAssertTrue(["block", "wait", "lock"].contains(cat ?? ""), "cat in \(e)", file: file, line: line)
                if cat == "block" {
                    for key in ["queue", "kind", "source"] {
                        XCTAssertNotNil(Trace.arg(e, key), "\(key) in \(e)", file: file, line: line)
                    }
                    XCTAssertEqual(Trace.arg(e, "queue"), e["name"] as? String, file: file, line: line)
                }
            case "s", "f":
                XCTAssertNotNil(e["id"] as? Int, "id in \(e)", file: file, line: line)
                if ph == "f" { XCTAssertEqual(e["bp"] as? String, "e", file: file, line: line) }
            case "i": break
            default: XCTFail("unexpected phase in \(e)", file: file, line: line)
            }
        }
        let starts = Dictionary(ph("s").map { ($0["id"] as! Int, $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(starts.count, ph("s").count, "flow ids are unique", file: file, line: line)
        for f in ph("f") {
            guard let s = starts[f["id"] as! Int] else {
                XCTFail("flow end without start: \(f)", file: file, line: line)
                continue
            }
            XCTAssertLessThanOrEqual(Trace.ts(s), Trace.ts(f), "flow starts before it ends", file: file, line: line)
            XCTAssertTrue(blocks.contains { Trace.tid($0) == Trace.tid(f) && Trace.ts($0) == Trace.ts(f) },
                          "flow end \(f) at the start of a block on its thread", file: file, line: line)
        }
        // On one thread, slices nest or are disjoint (lock waits come before their block).
        let byThread = Dictionary(grouping: ph("X"), by: Trace.tid)
        for (_, slices) in byThread {
            let sorted = slices.sorted { Trace.ts($0) < Trace.ts($1) }
            for (i, a) in sorted.enumerated() {
                for b in sorted[(i + 1)...] where Trace.ts(b) < Trace.end(a) - 0.0005 {  // µs with 3 decimals
                    XCTAssertLessThanOrEqual(Trace.end(b), Trace.end(a) + 0.001, "\(b) overlaps \(a) without nesting",
                                             file: file, line: line)
                }
            }
        }
    }
}

/// Runs `code` (chunk name `=test`) in a tracing interpreter until idle and returns its trace.
func traceLua(_ code: String, limit: Int? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> Trace {
    let rt = TestRuntimes.make(tracing: true, traceLimit: limit)
    defer { rt.close() }
    rt.uncaughtErrorHandler = { _ in }
    try rt.run(string: code, name: "=test")
    rt.runUntilIdle()
    let json = try XCTUnwrap(rt.traceJSON(), file: file, line: line)
    return try Trace(json: json, file: file, line: line)
}
