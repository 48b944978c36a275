import XCTest
@testable import LuaDispatch

/// `t:cancel()`: the wait the task is in, or else its next one, raises "cancelled" (once); a
/// task cancelled before it starts never runs.
final class TaskCancelTests: XCTestCase {
    func testATaskCancelledBeforeItStartsNeverRuns() {
        let run = runLua("""
            local q = dispatch.queue("not yet")
            q:suspend()
            local ran = false
            local task = dispatch.task(function() ran = true end, q)
            t.record(task:is_cancelled())
            task:cancel()
            q:resume()
            local ok, err = pcall(task.wait, task)
            dispatch.sleep(0.05)
            t.record(ok, err, ran, task:is_cancelled())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [false])
        XCTAssertEqual(run.records[1].count, 4)
        XCTAssertEqual(run.records[1][0], false)
        XCTAssertTrue(run.records[1][1].stringValue?.contains("cancelled") ?? false, "\(run.records[1])")
        XCTAssertEqual(Array(run.records[1][2...]), [false, true])
    }

    /// Cancelling a task in a long wait ends that wait at once with a catchable error; the
    /// task's next wait is an ordinary one.
    ///
    /// The task is cancelled once it is in its sleep, not after a fixed delay: under load a
    /// task may not even have started 50 ms after it was submitted, and a task cancelled
    /// before it starts never runs. It signals `inWait` right before the sleep; the task may
    /// still be switched out between the signal and the sleep, so the main thread then waits
    /// until the task says it is suspended (in that sleep, its only wait after the signal).
    func testCancellingMidWaitRaisesInThatWaitOnce() {
        let run = runLua("""
            local s = dispatch.semaphore(0)
            local inWait = dispatch.semaphore(0)
            local task = dispatch.task(function()
              local t0 = dispatch.now()
              inWait:signal()
              local ok, err = pcall(dispatch.sleep, 30)
              local waited = dispatch.now() - t0
              local again = {s:wait(0.01)}
              return ok, err, waited < 5, again[2]
            end)
            assert(inWait:wait(10), "the task did not reach its sleep within 10 s")
            local deadline = dispatch.now() + 10
            while not tostring(task):find("suspended") and dispatch.now() < deadline do dispatch.sleep(0.001) end
            task:cancel()
            t.record(task:wait())
            t.record(task:is_cancelled())
            """, timeout: 20)
        assertClean(run)
        let r = run.records.first ?? []
        guard r.count == 5 else { return XCTFail("\(r)") }
        XCTAssertEqual(r[0], true)
        XCTAssertEqual(r[1], false)
        XCTAssertTrue(r[2].stringValue?.contains("cancelled") ?? false, "\(r)")
        XCTAssertEqual(Array(r[3...]), [true, "timeout"])
        XCTAssertEqual(run.records[1], [true])
    }

    /// Every kind of wait ends on cancellation; a uncaught cancellation ends the task, and its
    /// waiter sees the error, but it is not reported as an uncaught error.
    func testEveryKindOfWaitIsCancellable() {
        let run = runLua("""
            local g = dispatch.group(); g:enter()
            local s = dispatch.semaphore(0)
            local item = dispatch.work_item(function() end)
            local blocker = dispatch.task(function() s:wait() end)
            local busy = dispatch.queue("busy"); busy:suspend()
            local waits = {
              sleep = function() dispatch.sleep(30) end,
              group = function() g:wait() end,
              semaphore = function() s:wait() end,
              item = function() item:wait() end,
              task = function() blocker:wait() end,
              await = function() dispatch.await(function() end) end,
              sync = function() busy:sync(function() end) end,
            }
            local tasks = {}
            for name, wait in pairs(waits) do tasks[name] = dispatch.task(wait) end
            dispatch.sleep(0.1)
            for name, task in pairs(tasks) do task:cancel() end
            local names = {}
            for name in pairs(waits) do names[#names + 1] = name end
            table.sort(names)
            for _, name in ipairs(names) do
              local ok, err = pcall(tasks[name].wait, tasks[name], 10)
              t.record(name, ok, tostring(err):match("task cancelled %(in '([%w_]+)'%)"))
            end
            busy:resume()
            g:leave()
            blocker:cancel()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [
            ["await", false, "await"], ["group", false, "wait"], ["item", false, "wait"],
            ["semaphore", false, "wait"], ["sleep", false, "sleep"], ["sync", false, "sync"],
            ["task", false, "wait"],
        ])
    }

    /// A cancelled semaphore wait gives up its place: the next signal goes to another waiter.
    func testACancelledSemaphoreWaiterLosesNoUnit() {
        let run = runLua("""
            local s = dispatch.semaphore(0)
            local first = dispatch.task(function() return pcall(s.wait, s) end)
            dispatch.sleep(0.05)
            local second = dispatch.task(function() return s:wait(5) end)
            dispatch.sleep(0.05)
            first:cancel()
            t.record(first:wait())
            s:signal()
            t.record(second:wait())
            t.record(tostring(s))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0].prefix(2), [true, false])
        XCTAssertEqual(run.records[1], [true, true])
        XCTAssertEqual(run.records[2], ["dispatch.semaphore (0)"])
    }

    /// A task that cancels itself sees the cancellation at its next wait; cancelling a finished
    /// task changes nothing.
    func testCancelWhileRunningAndAfterFinishing() {
        let run = runLua("""
            local me
            local assigned = dispatch.semaphore(0)   -- it may start before `me` is assigned
            me = dispatch.task(function()
              assigned:wait()
              me:cancel()
              local x = 1 + 1                              -- no wait: runs on
              local ok, err = pcall(dispatch.sleep, 0)
              return x, ok, tostring(err):match("cancelled") ~= nil
            end)
            assigned:signal()
            t.record(me:wait())
            local done = dispatch.task(function() return "done" end)
            done:wait()
            done:cancel()
            t.record(done:is_cancelled(), done:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, 2, false, true])
        XCTAssertEqual(run.records[1], [true, true, "done"])
    }

    /// A sync cancelled while its function runs: the function finishes on its queue, the task
    /// moves on, and the Lua thread that ran the function goes back to the pool.
    func testCancelDuringSync() {
        let run = runLua("""
            local q = dispatch.queue("slow sync")
            local finished = false
            -- The function runs until the task has moved on (a fixed sleep let a loaded
            -- machine finish it before the cancel came).
            local started, release = dispatch.semaphore(0), dispatch.semaphore(0)
            local task = dispatch.task(function()
              return pcall(q.sync, q, function() started:signal(); release:wait(); finished = true; return "late" end)
            end)
            started:wait()
            task:cancel()
            local r = {task:wait()}
            t.record(r[1], r[2], finished)
            release:signal()
            q:sync(function() end)
            t.record(finished)
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [[true, false, false], [true]])
    }
}
