import Foundation
import XCTest
@testable import LuaDispatch

/// Pool workers in the execution timeline: a lane each, jobs (and `init`) as slices on it, a flow
/// from every `submit` to its job.
final class WorkerTraceTests: XCTestCase {
    func testWorkersAreLanesAndJobsAreSlicesWithFlowsFromSubmit() throws {
        let trace = try traceLua("""
            local dispatch = require('dispatch')
            local pool = dispatch.workers{count = 2, init = function() ready = true end}
            -- `a` holds its worker until `b` answers it, so `b` runs on the other worker.
            local gate = dispatch.channel{}
            local a = pool:submit(function(g) return g:receive() end, gate)
            local b = pool:submit(function(g) g:send(2); return true end,
                                  gate)
            a:wait(); b:wait()
            pool:submit(function() end):notify(dispatch.main, function() end)
            pool:close()
            """)
        trace.checkShape()
        let names = trace.threadNames
        let lanes = names.filter { $0.value.hasPrefix("pool #") }
        XCTAssertEqual(lanes.count, 2, "\(names)")
        XCTAssertEqual(Set(lanes.values.map { $0.replacingOccurrences(of: "#\\d+", with: "#", options: .regularExpression) }),
                       ["pool # worker 1", "pool # worker 2"])
        let jobs = trace.blocks(kind: "job"), inits = trace.blocks(kind: "init")
        XCTAssertEqual(jobs.count, 3)
        XCTAssertEqual(inits.count, 2)
        XCTAssertEqual(Set(jobs.map(Trace.tid)).union(inits.map(Trace.tid)), Set(lanes.keys))
        XCTAssertEqual(Set(jobs.compactMap { Trace.arg($0, "source") }), ["test:5", "test:6", "test:9"])
        // Every job's flow starts on the main thread (the submit) and ends where the job starts.
        let starts = Dictionary(trace.ph("s").map { ($0["id"] as! Int, $0) }, uniquingKeysWith: { a, _ in a })
        for job in jobs {
            let end = try XCTUnwrap(trace.ph("f").first { Trace.tid($0) == Trace.tid(job) && Trace.ts($0) == Trace.ts(job) },
                                    "no flow into \(job)")
            let start = try XCTUnwrap(starts[end["id"] as! Int])
            XCTAssertEqual(Trace.tid(start), 1)
        }
        // Each worker's init comes before its first job.
        for (tid, _) in lanes {
            let first = jobs.filter { Trace.tid($0) == tid }.map(Trace.ts).min() ?? .infinity
            let initialised = inits.first { Trace.tid($0) == tid }.map(Trace.end) ?? .nan
            XCTAssertLessThanOrEqual(initialised, first)
        }
    }
}
