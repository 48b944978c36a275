import Dispatch
import XCTest
@testable import LuaDispatch

/// `Runtime.outstandingWork()`: what a watchdog reports when a program does not end.
final class OutstandingWorkTests: XCTestCase {
    func testNamesHeldQueuesOpenGroupsNotifiesAndParkedBlocks() throws {
        let rt = TestRuntimes.make()
        XCTAssertNil(rt.outstandingWork(), "a fresh runtime has nothing outstanding")
        try rt.run(string: """
            local dispatch = require("dispatch")
            held = dispatch.queue("held"); held:suspend()
            held:async(function() end); held:async(function() end)
            idle = dispatch.queue{label = "dormant", inactive = true}
            idle:async(function() end)
            group = dispatch.group(); group:enter(); group:enter(); group:leave()
            group:notify(dispatch.global(), function() end)
            gate = dispatch.semaphore(0)
            dispatch.queue("parked"):async(function() gate:wait() end)
            """)
        // The parked block needs a moment to start and park.
        var report = ""
        for _ in 0..<200 {
            report = rt.outstandingWork() ?? ""
            if report.contains("1 block running") { break }
            usleep(5000)
        }
        XCTAssertTrue(report.contains("1 block running or parked in a blocking call"), report)
        XCTAssertTrue(report.contains("queue 'held' (suspended): 2 blocks or sources waiting"), report)
        XCTAssertTrue(report.contains("queue 'dormant' (inactive): 1 block or source waiting"), report)
        XCTAssertTrue(report.contains("1 group enter not yet left"), report)
        XCTAssertTrue(report.contains("1 more unit of work"), report)

        try rt.run(string: """
            held:resume(); idle:activate(); group:leave(); gate:signal()
            """)
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        XCTAssertNil(rt.outstandingWork())
        rt.close()
    }

    func testAnswersWhileLuaCodeHoldsTheInterpreter() throws {
        let rt = TestRuntimes.make()
        try rt.run(string: """
            local dispatch = require("dispatch")
            dispatch.queue("busy"):async(function()
                local t = dispatch.now()
                while dispatch.now() - t < 1.0 do end   -- never releases the interpreter
            end)
            """)
        usleep(50_000)
        let started = DispatchTime.now()
        let report = rt.outstandingWork() ?? ""
        XCTAssertLessThan(Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9, 0.5,
                          "the report must not wait for the interpreter (held for 0.95 s more)")
        XCTAssertTrue(report.contains("1 block running"), report)
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        rt.close()
    }
}
