import XCTest
@testable import LuaDispatch

final class ThreadTests: XCTestCase {
    func testThreadIdentity() {
        let run = runLua("""
            local me = dispatch.thread()
            t.record(me.number, me.is_main, me.name, tostring(me), me.tid == dispatch.pid())
            dispatch.queue("w"):sync(function() end)
            dispatch.global():async(function()
              local w = dispatch.thread()
              t.record(w.number > 1, w.is_main, tostring(w):match("^<Thread: number = %d+, name = %(null%)>$") ~= nil)
            end)
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], [1, true, "main", "<Thread: number = 1, name = main>", true])
        XCTAssertEqual(run.records[1], [true, false, true])
    }

    func testSleepLetsOtherBlocksRun() {
        let run = runLua("""
            local ran = false
            dispatch.global():async(function() ran = true end)
            dispatch.sleep(0.1)
            t.record(ran)
            """)
        assertClean(run)
        XCTAssertEqual(run.values, [true])
    }

    /// Blocks of a concurrent queue may interleave at any instruction (they switch at a very
    /// short interval here); a counter they share changes on a serial queue and loses nothing.
    func testSharedCounterOnASerialQueueLosesNoUpdate() {
        let run = runLua("""
            dispatch.switch_interval(0.00002)
            local q = dispatch.queue{label = "racers", concurrent = true}
            local n, counter = 0, dispatch.queue("counter")
            local g = dispatch.group()
            for i = 1, 8 do
              q:async(function()
                for j = 1, 500 do
                  local x = 0
                  for k = 1, 20 do x = x + k end          -- work between two updates
                  counter:sync(function() local v = n; n = v + 1 end)
                end
              end, {group = g})
            end
            g:wait()
            t.record(n)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [4000])
    }

    func testOnceRunsOnceForConcurrentCallersWhoAllGetItsResults() {
        let run = runLua("""
            local calls = 0
            local init = dispatch.once(function() calls = calls + 1; dispatch.sleep(0.02); return "value", 42 end)
            local results = {}
            dispatch.concurrent_perform(16, function(i) results[i] = table.pack(init()) end)
            local same = true
            for i = 1, 16 do if results[i][1] ~= "value" or results[i][2] ~= 42 then same = false end end
            t.record(calls, same, init())
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], [1, true, "value", 42])
    }

    func testOnceErrorsAndRecursion() {
        let run = runLua("""
            local failing = dispatch.once(function() error("init failed") end)
            local ok1, e1 = pcall(failing)
            local ok2, e2 = pcall(failing)
            t.record(ok1, ok2, e1 == e2)
            local rec
            rec = dispatch.once(function() return rec() end)
            local ok, e = pcall(rec)
            t.record(ok, tostring(e):find("recursive", 1, true) ~= nil)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[false, false, true], [false, true]])
    }

    func testKillAndPid() {
        let run = runLua("""
            t.record(dispatch.pid() > 0, dispatch.kill(dispatch.pid(), 0))
            local ok, msg, name = dispatch.kill(999999999, "SIGTERM")
            t.record(ok, name)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[true, true], [.nil, "ESRCH"]])
        XCTAssertTrue(luaError("dispatch.kill(dispatch.pid(), 'SIGNOPE')").contains("unknown signal 'SIGNOPE'"))
        XCTAssertTrue(luaError("dispatch.kill(dispatch.pid(), 99)").contains("invalid signal"))
    }

    func testErrorHandlerGetsMessageTracebackAndLabel() {
        let run = runLua("""
            dispatch.set_error_handler(function(message, traceback, label)
              t.record(message:match("boom") ~= nil, traceback:match("stack traceback") ~= nil, label)
            end)
            dispatch.queue("handled"):async(function() error("boom") end)
            dispatch.queue("after"):async(function() t.record("other work goes on") end)
            """)
        assertClean(run)  // a Lua handler replaces the default report
        XCTAssertTrue(run.records.contains([true, true, "handled"]))
        XCTAssertTrue(run.records.contains(["other work goes on"]))
        XCTAssertEqual(run.runtime.exitStatus, 0)
    }

    func testDefaultHandlerCountsTheErrorAndWorkGoesOn() {
        let run = runLua("""
            dispatch.queue("bad"):async(function() error("first") end)
            dispatch.queue("good"):after(0.02, function() t.record("still running") end)
            """)
        XCTAssertEqual(run.errors.map(\.label), ["bad"])
        XCTAssertTrue(run.errors[0].traceback.contains("stack traceback"))
        XCTAssertEqual(run.strings, ["still running"])
        XCTAssertEqual(run.runtime.exitStatus, 1)
    }

    func testErrnoNames() {
        let run = runLua("t.record(dispatch.errno_name(2), dispatch.errno_name(0), dispatch.errno_name(125))")
        XCTAssertEqual(run.records[0], ["ENOENT", "OK", "ECANCELED"])
    }
}
