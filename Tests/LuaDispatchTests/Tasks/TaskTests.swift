import XCTest
@testable import LuaDispatch

/// Tasks: coroutines whose steps are blocks on their queue, suspended (not blocking a thread)
/// in every wait.
final class TaskTests: XCTestCase {
    func testATaskRunsOnItsQueueAndItsWaiterGetsEveryResult() {
        let run = runLua("""
            local q = dispatch.queue("tasks.home")
            local task = dispatch.task(function(...)
              t.record("inside", dispatch.in_task(), dispatch.current_label(), select("#", ...))
              dispatch.sleep(0.01)
              t.record("after sleep", dispatch.current_label())
              return 1, nil, "three"
            end, q)
            t.record("outside", dispatch.in_task())
            t.record(task:wait())
            t.record(select("#", task:wait()))        -- waiting again gives the same results
            """, timeout: 20)
        assertClean(run)
        // The main chunk may be switched out before its next line, so the task may start
        // first: "outside" and the task's own records are in no particular order.
        let outside = run.records.filter { $0.first == "outside" }
        let task = run.records.filter { $0.first == "inside" || $0.first == "after sleep" }
        XCTAssertEqual(outside, [["outside", false]])
        XCTAssertEqual(task, [["inside", true, "tasks.home", 0], ["after sleep", "tasks.home"]])
        XCTAssertEqual(run.records.count, 5, "\(run.records)")
        XCTAssertEqual(run.records.suffix(2), [[true, 1, .nil, "three"], [4]])
    }

    func testTheDefaultQueueIsTheDefaultGlobalQueue() {
        let run = runLua("""
            local task = dispatch.task(function() return dispatch.current_label() end)
            t.record(select(2, task:wait()), dispatch.global().label)
            t.record(tostring(task):match("^dispatch%.task #%d+ %(finished, queue '(.*)'%)$"))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0][0], run.records[0][1])
        XCTAssertEqual(run.records[1][0], run.records[0][1])
    }

    /// On a serial queue, the steps of two tasks and plain blocks alternate at the waits, never
    /// overlap, and each task's own steps keep their order.
    func testStepsOnASerialQueueInterleaveAtWaitsInOrder() {
        let run = runLua("""
            local q = dispatch.queue("tasks.serial")
            local log, inside, overlap = {}, 0, false
            local function step(name)
              inside = inside + 1
              if inside > 1 then overlap = true end
              log[#log + 1] = name
              if dispatch.current_label() ~= "tasks.serial" then overlap = true end
              inside = inside - 1
            end
            local a = dispatch.task(function()
              for i = 1, 3 do step("a" .. i); dispatch.sleep(0.1) end
            end, q)
            local b = dispatch.task(function()
              dispatch.sleep(0.05)
              for i = 1, 3 do step("b" .. i); dispatch.sleep(0.1) end
            end, q)
            a:wait(); b:wait()
            t.record(table.concat(log, " "), overlap)
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records.first, ["a1 b1 a2 b2 a3 b3", false])
    }

    /// A step is a block of the task's serial queue: it waits for the block holding the queue
    /// (even one parked in a blocking call), and blocks queued meanwhile run before the next step.
    func testStepsAreBlocksOfTheTasksSerialQueue() {
        let run = runLua("""
            local q = dispatch.queue("tasks.held")
            local log = {}
            q:async(function() log[#log + 1] = "block starts"; dispatch.sleep(0.2); log[#log + 1] = "block ends" end)
            local task = dispatch.task(function()
              log[#log + 1] = "task step 1"
              dispatch.sleep(0.01)
              log[#log + 1] = "task step 2"
            end, q)
            dispatch.sleep(0.05)
            q:async(function() log[#log + 1] = "second block"; dispatch.sleep(0.1) end)
            task:wait()
            t.record(table.concat(log, ", "))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.strings, ["block starts, block ends, task step 1, second block, task step 2"])
    }

    /// While a task waits, other blocks run on its serial queue: the task does not hold it.
    func testAWaitingTaskDoesNotHoldItsSerialQueue() {
        let run = runLua("""
            local q = dispatch.queue("tasks.free")
            local s = dispatch.semaphore(0)
            local task = dispatch.task(function()
              t.record("task waits")
              s:wait()
              t.record("task resumes")
            end, q)
            dispatch.sleep(0.05)
            q:async(function() t.record("block on the task's queue"); s:signal() end)
            task:wait()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.strings, ["task waits", "block on the task's queue", "task resumes"])
    }

    /// A suspended queue holds a task's next step; a barrier waits for a running step.
    func testSuspensionAndBarriersApplyToSteps() {
        let run = runLua("""
            local q = dispatch.queue{label = "tasks.concurrent", concurrent = true}
            local started = dispatch.semaphore(0)
            local task = dispatch.task(function()
              t.record("first step")
              started:signal()
              dispatch.sleep(0.1)
              t.record("second step")
              dispatch.sleep(0.3)
              t.record("third step")
            end, q)
            started:wait()
            q:suspend()
            dispatch.sleep(0.3)
            t.record("queue resumed")
            q:resume()
            dispatch.sleep(0.05)
            q:barrier_sync(function() t.record("barrier while the task waits") end)
            task:wait()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.strings, ["first step", "queue resumed", "second step", "barrier while the task waits", "third step"])
    }

    /// Steps of a task on a queue that targets a serial queue never overlap that queue's blocks.
    func testStepsRespectTargetQueues() {
        let run = runLua("""
            local root = dispatch.queue("tasks.root")
            local leaf = dispatch.queue{label = "tasks.leaf", target = root}
            local busy, overlap = false, false
            local g = dispatch.group()
            for i = 1, 20 do
              root:async(function() busy = true; dispatch.sleep(0.001); busy = false end, {group = g})
            end
            local task = dispatch.task(function()
              for i = 1, 10 do
                if busy then overlap = true end
                dispatch.sleep(0.001)
              end
            end, leaf)
            task:wait(); g:wait()
            t.record(overlap)
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records.first, [false])
    }

    /// A task that waits on a group plain blocks fill resumes once they all left it.
    func testATaskWaitsOnAGroupThatPlainBlocksFill() {
        let run = runLua("""
            local g = dispatch.group()
            local q = dispatch.queue{label = "fillers", concurrent = true}
            local done, counter = 0, dispatch.queue("counter")   -- the fillers may interleave
            local function count() counter:sync(function() done = done + 1 end) end
            for i = 1, 6 do q:async(function() dispatch.sleep(0.01 * i); count() end, {group = g}) end
            g:enter()
            dispatch.global():after(0.08, function() count(); g:leave() end)
            local task = dispatch.task(function()
              local early = {g:wait(0.001)}
              local ok = g:wait()
              return early[1], early[2], ok, done
            end, dispatch.queue("group.waiter"))
            t.record(task:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records.first, [true, false, "timeout", true, 7])
    }

    /// Many tasks waiting at once hold no thread each: a thousand suspended tasks live on the
    /// handful of threads Dispatch already has (plain blocks would need a thread each).
    func testSuspendedTasksHoldNoThreads() {
        let run = runLua("""
            local function threads()
              local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
              return tonumber(s:match("Threads:%s*(%d+)"))
            end
            local before = threads()
            local n, done, counter = 1000, 0, dispatch.queue("counter")   -- the tasks may interleave
            local gate = dispatch.semaphore(0)
            local tasks = {}
            for i = 1, n do
              tasks[i] = dispatch.task(function() gate:wait(); counter:sync(function() done = done + 1 end) end)
            end
            dispatch.sleep(0.3)                    -- every task is now suspended on the gate
            local during = threads()
            for i = 1, n do gate:signal() end
            for i = 1, n do tasks[i]:wait() end
            t.record(done, before, during)
            """, timeout: 60)
        assertClean(run)
        XCTAssertEqual(run.records.first?.first, 1000)
        let before = run.records.first?[1].intValue ?? 0, during = run.records.first?[2].intValue ?? .max
        XCTAssertLessThan(during, before + 16, "threads grew from \(before) to \(during) while tasks waited")
    }

    /// A task starts from the main chunk, a plain block, a source handler, a concurrent_perform
    /// iteration and another task alike.
    func testTasksStartFromEveryKindOfCaller() {
        let run = runLua("""
            local results, log = {}, dispatch.queue("results")   -- the tasks may interleave
            local function start(from)
              dispatch.task(function()
                dispatch.sleep(0.001)
                local r = from .. (dispatch.in_task() and "+" or "-")
                log:sync(function() results[#results + 1] = r end)
              end)
            end
            start("chunk")
            dispatch.queue("plain"):async(function() start("block") end)
            local timer = dispatch.source.timer{deadline = 0.01, queue = dispatch.queue("timers")}
            timer:set_event_handler(function() start("handler"); timer:cancel() end)
            timer:resume()
            dispatch.concurrent_perform(2, function(i) start("perform" .. i) end)
            dispatch.task(function() start("task") end)
            local deadline = dispatch.now() + 10
            while log:sync(function() return #results end) < 6 and dispatch.now() < deadline do dispatch.sleep(0.01) end
            table.sort(results)
            t.record(table.concat(results, " "))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.strings, ["block+ chunk+ handler+ perform1+ perform2+ task+"])
    }
}
