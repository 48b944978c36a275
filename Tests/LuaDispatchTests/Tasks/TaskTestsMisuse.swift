import XCTest
@testable import LuaDispatch

/// Misuse of tasks raises a clear error naming the function and the rule; nothing hangs.
final class TaskMisuseTests: XCTestCase {
    func testBadArguments() {
        XCTAssertEqual(luaError("dispatch.task()"), "test:3: bad argument #1 to 'task' (function expected, got no value)")
        XCTAssertEqual(luaError("dispatch.task(function() end, 5)"),
                       "test:3: bad argument #2 to 'task' (dispatch.queue expected, got number)")
        XCTAssertEqual(luaError("dispatch.task(function() end, nil, {})"),
                       "test:3: bad argument #3 to 'task' (no value expected, got table)")
        XCTAssertEqual(luaError("dispatch.task(function() end):wait('soon')"),
                       "test:3: bad argument #2 to 'wait' (number, dispatch.time or dispatch.walltime expected, got string)")
        XCTAssertEqual(luaError("local t = dispatch.task(function() end); t.wait(dispatch.group())"),
                       "test:3: bad argument #1 to 'wait' (dispatch.task expected, got dispatch.group)")
        XCTAssertEqual(luaError("dispatch.await(42)"), "test:3: bad argument #1 to 'await' (function expected, got number)")
    }

    func testATaskCannotWaitForItselfOrForATaskWaitingOnIt() {
        let run = runLua("""
            -- The task may start before `me` is assigned (switched out between the call and
            -- the assignment): it waits until it is.
            local me
            local assigned = dispatch.semaphore(0)
            me = dispatch.task(function() assigned:wait(); return pcall(me.wait, me) end)
            assigned:signal()
            t.record(me:wait())
            local a, b
            local go = dispatch.semaphore(0)
            a = dispatch.task(function() go:wait(); return b:wait() end)
            b = dispatch.task(function() go:wait(); dispatch.sleep(0.05); return pcall(a.wait, a) end)
            go:signal(); go:signal()
            t.record(b:wait())
            t.record(a:wait())
            """, timeout: 20)
        assertClean(run)
        guard run.records.count == 3 else { return XCTFail("\(run.records)") }
        XCTAssertEqual(run.records[0], [true, false, "a task cannot wait for itself"])
        XCTAssertEqual(run.records[1].prefix(2), [true, false])
        XCTAssertTrue(run.records[1][2].stringValue?.contains("would deadlock: it waits on the calling task") ?? false,
                      "\(run.records[1])")
        XCTAssertEqual(run.records[2], [true, true, false, run.records[1][2]])
    }

    /// Blocking on a task that needs the serial queue the caller holds would never end.
    func testWaitingOnATaskThatNeedsTheCallersSerialQueueIsRefused() {
        let run = runLua("""
            local q = dispatch.queue("held")
            local leaf = dispatch.queue{label = "leaf", target = q}
            q:sync(function()
              local task = dispatch.task(function() return "ran" end, leaf)
              t.record(pcall(task.wait, task))
            end)
            local onMain = dispatch.task(function() return "main" end, dispatch.main)
            t.record(pcall(onMain.wait, onMain))
            local elsewhere = dispatch.task(function() return "fine" end, dispatch.queue("elsewhere"))
            q:sync(function() t.record(elsewhere:wait()) end)
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0][0], false)
        XCTAssertEqual(run.records[0][1].stringValue,
                       "wait on a task that runs on queue 'leaf' would deadlock: the calling block holds serial queue 'held', which the task needs")
        XCTAssertEqual(run.records[1][0], false)
        XCTAssertTrue(run.records[1][1].stringValue?.contains("main queue, from the main thread, would deadlock") ?? false)
        XCTAssertEqual(run.records[2], [true, "fine"])
    }

    /// A wait where the task cannot yield (Lua called from a C function: a sort comparator, a
    /// gsub callback, a metamethod called from C) raises; a coroutine the task made waits by
    /// blocking, outside the task.
    func testWaitsWhereTheTaskCannotYield() {
        let run = runLua("""
            local task = dispatch.task(function()
              local r = {}
              r[1] = select(2, pcall(table.sort, {3, 1, 2}, function(a, b) dispatch.sleep(0) return a < b end))
              r[2] = select(2, pcall(string.gsub, "x", "x", function() return dispatch.queue("q"):sync(function() return "y" end) end))
              local obj = setmetatable({}, {__tostring = function() dispatch.sleep(0) return "obj" end})
              r[3] = select(2, pcall(tostring, obj))
              local co = coroutine.wrap(function() return dispatch.in_task(), dispatch.sleep(0.01), "blocked" end)
              r[4] = table.concat({tostring(co()), "ok"}, " ")
              return table.unpack(r)
            end)
            t.record(task:wait())
            """, timeout: 20)
        assertClean(run)
        let r = run.records.first ?? []
        XCTAssertEqual(r.count, 5, "\(r)")
        for (i, name) in [(1, "sleep"), (2, "sync"), (3, "sleep")] {
            XCTAssertTrue(r[i].stringValue?.contains("'\(name)' cannot suspend the task here") ?? false, "\(r[i])")
        }
        XCTAssertEqual(r[4], "false ok")
    }

    func testResumingAnAwaitTwiceRaises() {
        let run = runLua("""
            local again
            local task = dispatch.task(function()
              local v = dispatch.await(function(resume) again = resume; resume("first") end)
              return v, pcall(again, "second")
            end)
            t.record(task:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records.first?.prefix(3), [true, "first", false])
        XCTAssertTrue(run.records.first?[3].stringValue?.contains("resume called twice") ?? false)
    }
}
