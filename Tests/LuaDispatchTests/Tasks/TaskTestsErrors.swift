import XCTest
@testable import LuaDispatch

/// A task's error goes, with its traceback, to whoever waits on it; unobserved, it is an
/// uncaught error labelled with the task's queue.
final class TaskErrorTests: XCTestCase {
    func testTheWaiterGetsTheErrorWithTheTasksTraceback() {
        let run = runLua("""
            local function deep() local x = nil; return x.field end
            local task = dispatch.task(function()
              dispatch.sleep(0.01)
              local v = deep()
              return v
            end, dispatch.queue("failing"))
            local ok, err = pcall(task.wait, task)
            t.record(ok, err)
            local ok2, err2 = pcall(task.wait, task)   -- again: the same error
            t.record(err2 == err)
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0][0], false)
        let err = run.records[0][1].stringValue ?? ""
        XCTAssertTrue(err.hasPrefix("test:2: attempt to index a nil value (local 'x')\nstack traceback:\n"), err)
        XCTAssertTrue(err.contains("test:2: in upvalue 'deep'"), err)
        XCTAssertTrue(err.contains("test:5:"), "the task's own frame: \(err)")
        XCTAssertEqual(run.records[1], [true])
    }

    func testNonStringErrorValuesComeBackUnchanged() {
        let run = runLua("""
            local value = setmetatable({code = 42}, {__tostring = function() return "custom" end})
            local task = dispatch.task(function() dispatch.sleep(0); error(value) end)
            local ok, err = pcall(task.wait, task)
            t.record(ok, rawequal(err, value), err.code)
            local numeric = dispatch.task(function() error(7, 0) end)
            local ok2, err2 = pcall(numeric.wait, numeric)
            t.record(type(err2), (tostring(err2):match("^7\\nstack traceback:")) ~= nil)
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [[false, true, 42], ["string", true]])
    }

    func testAnUnobservedErrorIsUncaughtWithTheTasksQueueLabel() {
        let run = runLua("""
            dispatch.task(function() dispatch.sleep(0.01); error("nobody listens") end, dispatch.queue("lonely"))
            """, timeout: 20)
        XCTAssertTrue(run.ok)
        XCTAssertEqual(run.errors.count, 1)
        XCTAssertEqual(run.errors.first?.label, "lonely")
        XCTAssertEqual(run.errors.first?.message, "test:2: nobody listens")
        XCTAssertTrue(run.errors.first?.traceback.contains("test:2:") ?? false, run.errors.first?.traceback ?? "")
        XCTAssertEqual(run.runtime.exitStatus, 1)
    }

    /// The Lua error handler gets it too, with the message, traceback and label.
    func testTheErrorHandlerGetsUnobservedTaskErrors() {
        let run = runLua("""
            dispatch.set_error_handler(function(message, traceback, label)
              t.record(message, label, traceback:match("stack traceback") ~= nil)
            end)
            dispatch.task(function() error("to the handler") end, dispatch.queue("handled"))
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [["test:5: to the handler", "handled", true]])
    }

    /// An error the starter retrieves later, even after other waits, is not reported; one its
    /// starter never retrieves is reported once the starter has returned.
    func testTheStarterMayRetrieveAnErrorLater() {
        let run = runLua("""
            local slow = dispatch.task(function() dispatch.sleep(0.1); return "slow" end)
            local failing = dispatch.task(function() error("retrieved later") end)
            slow:wait()                                   -- failing fails meanwhile
            t.record("main", pcall(failing.wait, failing))
            local parent = dispatch.task(function()
              local x = dispatch.task(function() dispatch.sleep(0.1); return "x" end)
              local y = dispatch.task(function() error("child") end)
              x:wait()
              local ok = pcall(y.wait, y)
              dispatch.task(function() error("never waited for") end)
              dispatch.sleep(0.05)
              t.record("parent returns")
              return ok
            end)
            t.record("parent", parent:wait())
            """, timeout: 20)
        XCTAssertTrue(run.ok)
        XCTAssertEqual(run.records.map { $0.prefix(2) }, [["main", false], ["parent returns"], ["parent", true]])
        XCTAssertEqual(run.errors.map(\.message), ["test:11: never waited for"])
    }

    /// A task whose handle is collected can no longer be waited on: its error is reported even
    /// while the code that started it goes on.
    func testAnErrorOfATaskWhoseHandleWasCollectedIsReported() {
        let run = runLua("""
            local keeper = dispatch.task(function()
              dispatch.task(function() error("dropped handle") end)
              dispatch.sleep(0.05)
              collectgarbage(); collectgarbage()
              dispatch.sleep(0.05)
              t.record("still running")
              dispatch.sleep(0.05)
            end)
            """, timeout: 20)
        XCTAssertTrue(run.ok)
        XCTAssertEqual(run.errors.map(\.message), ["test:3: dropped handle"])
        XCTAssertEqual(run.strings, ["still running"])
    }

    /// A failed task's to-be-closed variables are closed; a coroutine.yield of the task's own
    /// coroutine fails the task with a clear error.
    func testClosingAndStrayYields() {
        let run = runLua("""
            local task = dispatch.task(function()
              local guard <close> = setmetatable({}, {__close = function(_, err) t.record("closed", err ~= nil) end})
              dispatch.sleep(0.01)
              error("with a guard")
            end)
            t.record(pcall(task.wait, task))
            local yielding = dispatch.task(function() coroutine.yield("x") end)
            local ok, err = pcall(yielding.wait, yielding)
            t.record(ok, err:match("^coroutine%.yield in a task's own coroutine") ~= nil)
            -- a coroutine made inside a task yields as usual
            local inner = dispatch.task(function()
              local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
              return gen() + gen() + gen()
            end)
            t.record(inner:wait())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["closed", true])
        XCTAssertEqual(run.records[1][0], false)
        XCTAssertEqual(run.records[2], [false, true])
        XCTAssertEqual(run.records[3], [true, 6])
    }
}
