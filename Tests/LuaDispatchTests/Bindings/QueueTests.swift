import XCTest
@testable import LuaDispatch

final class QueueTests: XCTestCase {
    func testSerialQueueRunsBlocksInFIFOOrder() {
        let run = runLua("""
            local q = dispatch.queue("fifo")
            for i = 1, 2000 do q:async(function() t.record(i) end) end
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, Array(1...2000))
    }

    func testSerialQueueNeverRunsTwoBlocksAtOnce() {
        let run = runLua("""
            local q = dispatch.queue("one-at-a-time")
            local inside, overlap = 0, false
            for i = 1, 20 do
              q:async(function()
                inside = inside + 1
                if inside > 1 then overlap = true end
                dispatch.sleep(0.002)   -- releases the interpreter: other blocks could run now
                inside = inside - 1
              end)
            end
            q:async(function() t.record(overlap) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.values, [.boolean(false)])
    }

    func testConcurrentQueueRunsBlocksAtTheSameTime() {
        // Each block waits for the other's signal: only possible if both run at once.
        let run = runLua("""
            local q = dispatch.queue{label = "both", concurrent = true}
            local a, b = dispatch.semaphore(0), dispatch.semaphore(0)
            local g = dispatch.group()
            q:async(function() a:signal(); t.record("A", (b:wait(10))) end, {group = g})
            q:async(function() b:signal(); t.record("B", (a:wait(10))) end, {group = g})
            g:wait()
            """)
        assertClean(run)
        XCTAssertEqual(Set(run.records.map { $0[1] }), [.boolean(true)])
        XCTAssertEqual(run.records.count, 2)
    }

    func testBarrierWaitsForEarlierBlocksAndHoldsLaterOnes() {
        let run = runLua("""
            local q = dispatch.queue{label = "barrier", concurrent = true}
            local events, log = {}, dispatch.queue("log")   -- blocks of q may interleave: one event at a time
            local function record(e) log:sync(function() events[#events + 1] = e end) end
            for i = 1, 3 do q:async(function() dispatch.sleep(0.01 * i); record("end" .. i) end) end
            q:barrier_async(function()
              record("barrier start"); dispatch.sleep(0.02); record("barrier end")
            end)
            for i = 4, 6 do q:async(function() record("start" .. i) end) end
            q:barrier_sync(function() end)
            for _, e in ipairs(events) do t.record(e) end
            """)
        assertClean(run)
        let e = run.strings
        XCTAssertEqual(e.count, 8)
        let start = e.firstIndex(of: "barrier start")!, end = e.firstIndex(of: "barrier end")!
        XCTAssertEqual(Set(e[..<start]), ["end1", "end2", "end3"])
        XCTAssertEqual(end, start + 1)
        XCTAssertEqual(Set(e[(end + 1)...]), ["start4", "start5", "start6"])
    }

    func testAsyncBarrierOptionIsABarrier() {
        let run = runLua("""
            local q = dispatch.queue{label = "opt", concurrent = true}
            local running, seen, counts = 0, 0, dispatch.queue("counts")
            for i = 1, 4 do
              q:async(function()
                counts:sync(function() running = running + 1 end)
                dispatch.sleep(0.01)
                counts:sync(function() running = running - 1 end)
              end)
            end
            q:async(function() seen = running end, {barrier = true})
            q:barrier_sync(function() t.record(seen) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [0])
    }

    func testSyncReturnsEveryValueAndPropagatesErrors() {
        let run = runLua("""
            local q = dispatch.queue("sync")
            t.record(q:sync(function() return 1, "two", nil, true end))
            local ok, err = pcall(q.sync, q, function() error({code = 7}) end)
            t.record(ok, err.code)
            t.record(select("#", q:sync(function() end)))
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], [1, "two", .nil, true])
        XCTAssertEqual(run.records[1], [false, 7])
        XCTAssertEqual(run.records[2], [0])
    }

    func testSyncRunsOnTheCallingThreadAndSeesTheQueue() {
        let run = runLua("""
            local q = dispatch.queue("caller")
            local key = dispatch.specific_key("k")
            q:set_specific(key, "on q")
            local main = dispatch.thread().number
            q:sync(function()
              t.record(dispatch.thread().number == main, dispatch.get_specific(key), dispatch.current_label())
            end)
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, "on q", "caller"])
    }

    func testSpecificsFollowTheTargetChainAndCanBeCleared() {
        let run = runLua("""
            local key = dispatch.specific_key()
            local parent = dispatch.queue("parent")
            parent:set_specific(key, {n = 1})
            local child = dispatch.queue{label = "child", target = parent}
            child:sync(function() t.record(dispatch.get_specific(key).n) end)
            t.record(child:get_specific(key) == nil, parent:get_specific(key).n)
            parent:set_specific(key, nil)
            t.record(parent:get_specific(key) == nil)
            t.record(dispatch.get_specific(key) == nil)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[1], [true, 1], [true], [true]])
    }

    func testQueuesTargetingOneSerialQueueNeverOverlap() {
        let run = runLua("""
            local s = dispatch.queue("target")
            local a = dispatch.queue{label = "a", concurrent = true, target = s}
            local b = dispatch.queue{label = "b", target = s}
            local inside, overlap = 0, false
            local g = dispatch.group()
            for i = 1, 10 do
              for _, q in ipairs({a, b}) do
                q:async(function()
                  inside = inside + 1
                  if inside > 1 then overlap = true end
                  dispatch.sleep(0.001)
                  inside = inside - 1
                end, {group = g})
              end
            end
            g:wait()
            t.record(overlap)
            """)
        assertClean(run)
        XCTAssertEqual(run.values, [false])
    }

    func testInactiveQueueRunsNothingUntilActivated() {
        let run = runLua("""
            local q = dispatch.queue{label = "later", inactive = true}
            local ran = false
            q:async(function() ran = true end)
            dispatch.sleep(0.05)
            t.record(ran)
            local target = dispatch.queue("new target")
            q:set_target(target)
            q:activate()
            q:sync(function() end)
            t.record(ran)
            """)
        assertClean(run)
        XCTAssertEqual(run.values, [false, true])
    }

    func testSuspendedQueueHoldsBlocksUntilEveryResume() {
        let run = runLua("""
            local q = dispatch.queue("held")
            local ran = 0
            q:suspend(); q:suspend()
            for i = 1, 3 do q:async(function() ran = ran + 1 end) end
            dispatch.sleep(0.03); t.record(ran)
            q:resume()
            dispatch.sleep(0.03); t.record(ran)
            q:resume()
            q:sync(function() end); t.record(ran)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [0, 0, 3])
    }

    func testAfterRunsNoEarlierThanItsDeadlineAndInDeadlineOrder() {
        let run = runLua("""
            local q = dispatch.queue("after")
            local t0 = dispatch.now()
            local g = dispatch.group()
            g:enter(); g:enter(); g:enter()
            q:after(0.06, function() t.record("late", dispatch.now() - t0); g:leave() end)
            q:after(dispatch.now() + 0.02, function() t.record("early", dispatch.now() - t0); g:leave() end)
            q:after(dispatch.walltime() + 0.04, function() t.record("wall", dispatch.now() - t0); g:leave() end)
            g:wait()
            """)
        assertClean(run)
        XCTAssertEqual(run.records.map { $0[0] }, ["early", "wall", "late"])
        XCTAssertGreaterThanOrEqual(run.records[0][1].doubleValue!, 0.019)
        XCTAssertGreaterThanOrEqual(run.records[2][1].doubleValue!, 0.059)
    }

    func testMainQueueBlocksRunOnTheMainThreadAfterTheScript() {
        let run = runLua("""
            dispatch.global():async(function()
              dispatch.main:async(function() t.record("main block", dispatch.thread().is_main) end)
            end)
            t.record("script end", dispatch.thread().is_main)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [["script end", true], ["main block", true]])
    }

    func testAsyncBlocksRunOffTheMainThread() {
        let run = runLua("""
            local q = dispatch.queue("worker")
            q:async(function() t.record(dispatch.thread().is_main, dispatch.current_label()) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[false, "worker"]])
    }

    func testFieldsAndToString() {
        let run = runLua("""
            local q = dispatch.queue{label = "f", concurrent = true, qos = "utility"}
            t.record(q.label, q.concurrent, q.qos, tostring(q):find("f", 1, true) ~= nil)
            local g = dispatch.global("background")
            t.record(g.concurrent, g.qos, dispatch.main.concurrent, dispatch.main.label)
            t.record(dispatch.queue().label, dispatch.queue("x").concurrent, dispatch.global() == dispatch.global())
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["f", true, "utility", true])
        XCTAssertEqual(run.records[1], [true, "background", false, "com.apple.main-thread"])
        XCTAssertEqual(run.records[2], ["", false, true])
    }

    func testGroupOptionOfAsyncCountsMembers() {
        let run = runLua("""
            local q = dispatch.queue{label = "members", concurrent = true}
            local g, n = dispatch.group(), 0
            local counter = dispatch.queue("counter")   -- the blocks of q may interleave
            for i = 1, 50 do q:async(function() dispatch.sleep(0.001); counter:sync(function() n = n + 1 end) end, {group = g}) end
            g:notify(dispatch.main, function() t.record(n) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [50])
    }

    func testConcurrentPerformCallsEachIndexOnceAndRaisesAfterAll() {
        let run = runLua("""
            local seen, count, counter = {}, 0, dispatch.queue("counter")   -- iterations may interleave
            dispatch.concurrent_perform(100, function(i) seen[i] = (seen[i] or 0) + 1; counter:sync(function() count = count + 1 end) end)
            local once = true
            for i = 1, 100 do if seen[i] ~= 1 then once = false end end
            t.record(count, once)
            local ran = 0
            local ok, err = pcall(dispatch.concurrent_perform, 10, function(i)
              counter:sync(function() ran = ran + 1 end)
              if i == 3 then error("iteration three") end
            end)
            t.record(ok, ran, tostring(err):find("iteration three", 1, true) ~= nil)
            dispatch.concurrent_perform(0, function() error("never") end)
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], [100, true])
        XCTAssertEqual(run.records[1], [false, 10, true])
    }
}
