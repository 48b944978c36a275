import XCTest
@testable import LuaDispatch

/// Every blocking call of the API, inside a task: it suspends the task, returns what it
/// returns outside one, and other work runs on the task's queue meanwhile.
final class TaskWaitTests: XCTestCase {
    func testSyncRunsOnTheTargetQueueAndReturnsItsResultsOrError() {
        let run = runLua("""
            local q = dispatch.queue("sync.target")
            local home = dispatch.queue("sync.home")
            local task = dispatch.task(function()
              local a, b, c = q:sync(function() return dispatch.current_label(), nil, 3 end)
              local ok, err = pcall(q.sync, q, function() error({code = 7}) end)
              local cq = dispatch.queue{label = "sync.concurrent", concurrent = true}
              local inBarrier = cq:barrier_sync(function() return dispatch.current_label() end)
              local item = dispatch.work_item(function() t.record("item via sync", dispatch.current_label()) end)
              q:sync(item)
              return a, b, c, ok, type(err) == "table" and err.code, inBarrier, dispatch.current_label()
            end, home)
            t.record(task:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["item via sync", "sync.target"])
        XCTAssertEqual(run.records[1], [true, "sync.target", .nil, 3, false, 7, "sync.concurrent", "sync.home"])
    }

    /// Inside a task, `sync` onto the task's own serial queue suspends the task instead of
    /// deadlocking: the function runs on the queue after the step that called it.
    func testSyncOntoTheTasksOwnSerialQueue() {
        let run = runLua("""
            local q = dispatch.queue("sync.own")
            local task = dispatch.task(function()
              t.record("before")
              local v = q:sync(function() t.record("in sync"); return dispatch.current_label() end)
              t.record("after", v)
            end, q)
            task:wait()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [["before"], ["in sync"], ["after", "sync.own"]])
    }

    func testSemaphoreWaitsSignalsAndTimeouts() {
        let run = runLua("""
            local s = dispatch.semaphore(0)
            local task = dispatch.task(function()
              local r1 = {s:wait(0.02)}
              dispatch.global():after(0.05, function() s:signal() end)
              local r2 = {s:wait()}
              s:signal()
              local r3 = {s:wait(0)}
              return r1[1], r1[2], r2[1], r3[1]
            end)
            t.record(task:wait())
            t.record(tostring(s))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, false, "timeout", true, true])
        XCTAssertEqual(run.records[1], ["dispatch.semaphore (0)"])
    }

    /// Tasks and plain threads waiting on one semaphore share its units: each signal lets
    /// exactly one waiter through, whichever kind, and none is lost.
    func testTasksAndThreadsShareASemaphore() {
        let run = runLua("""
            local s = dispatch.semaphore(0)
            local passed, started = 0, 0
            local counts = dispatch.queue("counts")   -- the waiters run at the same time
            local function count(name) counts:sync(function() if name == "started" then started = started + 1 else passed = passed + 1 end end) end
            local function get() return counts:sync(function() return started, passed end) end
            local g = dispatch.group()
            -- serial queues each get a thread of their own, so all three threads block in s:wait
            for i = 1, 3 do
              dispatch.queue("thread" .. i):async(function() count("started"); s:wait(); count("passed") end, {group = g})
            end
            local tq = dispatch.queue("tasks")
            local tasks = {}
            for i = 1, 3 do tasks[i] = dispatch.task(function() s:wait(); count("passed") end, tq) end
            local function suspended()
              for i = 1, 3 do if not tostring(tasks[i]):find("suspended") then return false end end
              return true
            end
            local deadline = dispatch.now() + 10
            while (get() < 3 or not suspended()) and dispatch.now() < deadline do dispatch.sleep(0.01) end
            dispatch.sleep(0.1)
            local woke = 0
            for i = 1, 4 do if s:signal() then woke = woke + 1 end end
            dispatch.sleep(0.2)
            t.record("after 4 signals", select(2, get()), woke)
            for i = 1, 2 do s:signal() end
            g:wait()
            for i = 1, 3 do tasks[i]:wait() end
            t.record("after 6", select(2, get()), tostring(s))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["after 4 signals", 4, 4])
        XCTAssertEqual(run.records[1], ["after 6", 6, "dispatch.semaphore (0)"])
    }

    /// A task waiting on a semaphore keeps it alive; one collected below its initial value
    /// (units taken by a task) is balanced before Dispatch releases it.
    func testSemaphoreTakenByATaskAndCollectedDoesNotAbort() {
        let run = runLua("""
            local task = dispatch.task(function()
              local s = dispatch.semaphore(2)
              s:wait(); s:wait()
              local r = {s:wait(0.01)}
              return r[2]
            end)
            t.record(task:wait())
            for i = 1, 3 do collectgarbage() end
            dispatch.sleep(0.02)
            t.record("survived")
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [[true, "timeout"], ["survived"]])
    }

    func testWorkItemWaitAndItsRules() {
        let run = runLua("""
            local item = dispatch.work_item(function() dispatch.sleep(0.05) end)
            local task = dispatch.task(function()
              local early = {item:wait(0.001)}
              dispatch.global():async(item)
              local ok = item:wait()
              return early[2], ok
            end)
            t.record(task:wait())
            local slow = dispatch.work_item(function() dispatch.sleep(0.2) end)
            dispatch.global():async(slow)
            local first = dispatch.task(function() return slow:wait() end)
            dispatch.sleep(0.05)
            local second = dispatch.task(function() return pcall(slow.wait, slow) end)
            t.record(second:wait())
            t.record(first:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, "timeout", true])
        XCTAssertEqual(run.records[1].prefix(2), [true, false])
        XCTAssertTrue(run.records[1][2].stringValue?.contains("second concurrent wait") ?? false, "\(run.records[1])")
        XCTAssertEqual(run.records[2], [true, true])
    }

    func testNestedTasksWaitOnEachOther() {
        let run = runLua("""
            local q = dispatch.queue("nested")
            local function chain(depth)
              return dispatch.task(function()
                if depth == 0 then dispatch.sleep(0.01); return 0 end
                local ok, v = chain(depth - 1):wait()
                return v + 1
              end, q)
            end
            t.record(chain(5):wait())
            local slow = dispatch.task(function() dispatch.sleep(0.3); return "late" end)
            local impatient = dispatch.task(function()
              local r = {slow:wait(0.01)}
              local again = {slow:wait()}
              return r[1], r[2], again[1], again[2]
            end)
            t.record(impatient:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, 5])
        XCTAssertEqual(run.records[1], [true, false, "timeout", true, "late"])
    }

    func testAwaitTurnsACallbackIntoAPlainCall() {
        let run = runLua("""
            local task = dispatch.task(function()
              local a, b, c = dispatch.await(function(resume)
                dispatch.global():after(0.02, function() t.record("delivered", resume(1, nil, "three")) end)
              end)
              local now = dispatch.await(function(resume) resume("at once") end)
              -- the function itself may wait inside a task
              local waited = dispatch.await(function(resume)
                dispatch.sleep(0.01)
                dispatch.queue("late"):async(function() resume("after a wait") end)
              end)
              return a, b, c, now, waited, select("#", dispatch.await(function(r) r() end))
            end)
            t.record(task:wait())
            -- outside a task it blocks the calling thread until resume is called
            t.record(dispatch.await(function(resume)
              dispatch.global():after(0.02, function() resume("blocked", dispatch.in_task()) end)
            end))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["delivered", true])
        XCTAssertEqual(run.records[1], [true, 1, .nil, "three", "at once", "after a wait", 0])
        XCTAssertEqual(run.records[2], ["blocked", false])
    }

    func testAwaitBridgesChannelReads() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("await-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("in.txt")
        try Data("hello from a channel".utf8).write(to: file)
        let run = runLua("""
            local task = dispatch.task(function()
              local ch = dispatch.io{path = "\(file.path)"}
              local chunks = {}
              local err = dispatch.await(function(resume)
                ch:read(0, math.huge, dispatch.global(), function(done, data, errno)
                  chunks[#chunks + 1] = data:bytes()
                  if done then resume(errno) end
                end)
              end)
              ch:close()
              return table.concat(chunks), err
            end)
            t.record(task:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records.first, [true, "hello from a channel", 0])
    }

    /// Calls of a `dispatch.once` whose function waits: every task gets the one result.
    func testOnceInsideTasks() {
        let run = runLua("""
            local calls = 0
            local init = dispatch.once(function() calls = calls + 1; dispatch.sleep(0.05); return "ready" end)
            local tasks = {}
            for i = 1, 4 do tasks[i] = dispatch.task(function() return init() end) end
            local results = {}
            for i = 1, 4 do results[i] = select(2, tasks[i]:wait()) end
            t.record(calls, table.concat(results, " "), init())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records.first, [1, "ready ready ready ready", "ready"])
    }

    /// Every wait outside a task still blocks its thread, with the same results.
    func testWaitsOutsideTasksStillBlock() {
        let run = runLua("""
            local q = dispatch.queue("plain")
            local s = dispatch.semaphore(0)
            local g = dispatch.group()
            dispatch.global():after(0.02, function() s:signal() end)
            q:async(function() dispatch.sleep(0.02) end, {group = g})
            local item = dispatch.work_item(function() end)
            dispatch.global():async(item)
            local task = dispatch.task(function() dispatch.sleep(0.02); return "t" end)
            t.record(s:wait(), g:wait(), item:wait(), q:sync(function() return "s" end), task:wait())
            t.record(s:wait(0.01))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [[true, true, true, "s", true, "t"], [false, "timeout"]])
    }
}
