import XCTest
@testable import LuaDispatch

final class WorkItemTests: XCTestCase {
    func testPerformRunsOnTheCallingThreadUntilCancelled() {
        let run = runLua("""
            local n = 0
            local item = dispatch.work_item(function() n = n + 1; t.record(dispatch.thread().is_main) end)
            item:perform()
            t.record(item:is_cancelled())
            item:cancel()
            item:perform()
            t.record(n, item:is_cancelled())
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[true], [false], [1, true]])
    }

    func testAsyncItemCompletesAndWaitReturnsTrue() {
        let run = runLua("""
            local q = dispatch.queue("items")
            local item = dispatch.work_item(function() dispatch.sleep(0.02); t.record("ran") end)
            q:async(item)
            t.record(item:wait(5))
            t.record(item:wait(5))  -- already complete: returns at once
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [["ran"], [true], [true]])
    }

    func testWaitTimesOut() {
        let run = runLua("""
            local item = dispatch.work_item(function() end)
            t.record(item:wait(0.01))
            item:perform()
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[false, "timeout"]])
    }

    func testNotifyRunsAfterCompletionOnTheGivenQueue() {
        let run = runLua("""
            local value = 10
            local item = dispatch.work_item(function() value = value + 5 end)
            item:notify(dispatch.main, function() t.record("notify", value, dispatch.thread().is_main) end)
            dispatch.queue("q"):async(item)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [["notify", 15, true]])
    }

    func testCancelledItemNeverRunsButTheProcessStillEnds() {
        let run = runLua("""
            local q = dispatch.queue("cancel")
            q:suspend()
            local item = dispatch.work_item(function() t.record("ran") end)
            q:async(item)
            q:after(0.01, item)
            item:cancel()
            q:resume()
            """)
        assertClean(run)
        XCTAssertTrue(run.records.isEmpty)
    }

    func testBarrierItemOnAConcurrentQueue() {
        let run = runLua("""
            local q = dispatch.queue{label = "cq", concurrent = true}
            local running, seen, counts = 0, -1, dispatch.queue("counts")   -- blocks of q may interleave
            for i = 1, 3 do
              q:async(function()
                counts:sync(function() running = running + 1 end)
                dispatch.sleep(0.01)
                counts:sync(function() running = running - 1 end)
              end)
            end
            q:async(dispatch.work_item(function() seen = running end, {barrier = true}))
            q:barrier_sync(function() t.record(seen) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [0])
    }

    func testSyncAndAfterAcceptItems() {
        let run = runLua("""
            local q = dispatch.queue("q")
            local n = 0
            local item = dispatch.work_item(function() n = n + 1 end)
            q:sync(item)
            t.record(n)
            q:after(0.01, item)
            q:after(0.05, function() t.record(n) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [1, 2])
    }

    func testErrorsInItemsReachTheErrorHandler() {
        let run = runLua("""
            dispatch.queue("failing"):async(dispatch.work_item(function() error("item failed") end))
            """)
        XCTAssertEqual(run.errors.count, 1)
        XCTAssertTrue(run.errors[0].message.contains("item failed"))
        XCTAssertEqual(run.errors[0].label, "failing")
    }
}
