import XCTest
@testable import LuaDispatch

/// Every misuse that makes libdispatch abort raises a Lua error naming the object and the rule,
/// and the interpreter goes on.
final class MisuseTests: XCTestCase {
    func testSyncOntoTheRunningSerialQueue() {
        let m = luaError("local q = dispatch.queue('self.q'); q:sync(function() q:sync(function() end) end)")
        XCTAssertTrue(m.contains("'self.q'") && m.contains("deadlock"), m)
    }

    func testSyncThroughATargetChain() {
        let m = luaError("""
            local s = dispatch.queue('root.serial')
            local c = dispatch.queue{label = 'leaf', concurrent = true, target = dispatch.queue{label = 'mid', target = s}}
            s:sync(function() c:sync(function() end) end)
            """)
        XCTAssertTrue(m.contains("'leaf'") && m.contains("'root.serial'") && m.contains("deadlock"), m)
    }

    func testSyncFromAnAsyncBlockOnTheSameQueue() {
        let run = runLua("""
            local q = dispatch.queue('async.self')
            q:async(function() t.record(pcall(q.sync, q, function() end)) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0][0], false)
        XCTAssertTrue(run.records[0][1].stringValue!.contains("'async.self'"))
    }

    func testMainSyncFromTheMainThread() {
        let m = luaError("dispatch.main:sync(function() end)")
        XCTAssertTrue(m.contains("main queue") && m.contains("main thread"), m)
        let viaTarget = luaError("dispatch.queue{label = 'on-main', target = dispatch.main}:sync(function() end)")
        XCTAssertTrue(viaTarget.contains("'on-main'") && viaTarget.contains("main"), viaTarget)
    }

    func testBarrierSyncOntoTheRunningConcurrentQueue() {
        let m = luaError("local q = dispatch.queue{label = 'cq', concurrent = true}; q:sync(function() q:barrier_sync(function() end) end)")
        XCTAssertTrue(m.contains("'cq'") && m.contains("deadlock"), m)
    }

    func testResumeOfAQueueThatIsNotSuspended() {
        let m = luaError("local q = dispatch.queue('never.suspended'); q:suspend(); q:resume(); q:resume()")
        XCTAssertTrue(m.contains("'never.suspended'") && m.contains("not suspended"), m)
    }

    func testSuspendingAGlobalQueue() {
        XCTAssertTrue(luaError("dispatch.global():suspend()").contains("global queue"))
    }

    func testLeaveWithoutEnter() {
        XCTAssertTrue(luaError("local g = dispatch.group(); g:enter(); g:leave(); g:leave()").contains("not entered"))
    }

    func testSetTargetOnAnActiveQueue() {
        let m = luaError("dispatch.queue('busy'):set_target(dispatch.queue('other'))")
        XCTAssertTrue(m.contains("'busy'") && m.contains("active"), m)
        XCTAssertTrue(luaError("dispatch.main:set_target(dispatch.queue('x'))").contains("cannot change the target"))
        XCTAssertTrue(luaError("local q = dispatch.queue{label='loop', inactive=true}; q:set_target(q)").contains("itself"))
    }

    func testWaitOnAWorkItemThatRanTwice() {
        let m = luaError("local i = dispatch.work_item(function() end); i:perform(); i:perform(); i:wait()")
        XCTAssertTrue(m.contains("more than once"), m)
        let n = luaError("local i = dispatch.work_item(function() end); i:perform(); i:perform(); i:notify(dispatch.main, function() end)")
        XCTAssertTrue(n.contains("more than once"), n)
    }

    func testSecondConcurrentWaitOnAWorkItem() {
        let run = runLua("""
            local item = dispatch.work_item(function() end)
            local q = dispatch.queue{label = 'waiters', concurrent = true}
            local started = dispatch.semaphore(0)
            q:async(function() started:signal(); item:wait(5) end)
            started:wait()
            dispatch.sleep(0.05)
            t.record(pcall(item.wait, item, 0.01))
            item:perform()
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0][0], false)
        XCTAssertTrue(run.records[0][1].stringValue!.contains("second concurrent wait"))
    }

    func testBadNumbers() {
        XCTAssertTrue(luaError("dispatch.semaphore(-1)").contains("bad argument #1 to 'semaphore'"))
        XCTAssertTrue(luaError("dispatch.concurrent_perform(-1, print)").contains("bad argument #1 to 'concurrent_perform'"))
        XCTAssertTrue(luaError("dispatch.concurrent_perform(1.5, print)").contains("integer"))
        XCTAssertTrue(luaError("dispatch.sleep(0/0)").contains("bad argument #1 to 'sleep'"))
        XCTAssertTrue(luaError("dispatch.queue('q'):after(0/0, print)").contains("NaN"))
    }

    func testWrongTypesNameTheFunctionAndArgument() {
        XCTAssertTrue(luaError("dispatch.queue('q'):async(nil)")
            .contains("bad argument #2 to 'async' (function or dispatch.work_item expected, got nil)"))
        XCTAssertTrue(luaError("dispatch.queue('q'):sync(42)")
            .contains("bad argument #2 to 'sync' (function or dispatch.work_item expected, got number)"))
        XCTAssertTrue(luaError("local q = dispatch.queue('q'); q.async(dispatch.group(), print)")
            .contains("bad argument #1 to 'async' (dispatch.queue expected, got dispatch.group)"))
        XCTAssertTrue(luaError("dispatch.group():notify(print, print)").contains("dispatch.queue expected"))
        XCTAssertTrue(luaError("dispatch.semaphore(1):wait('soon')").contains("bad argument #2 to 'wait'"))
        XCTAssertTrue(luaError("dispatch.global('fastest')").contains("unknown qos 'fastest'"))
    }

    func testUnknownOptionsAndWrongOptionTypesNameTheKey() {
        XCTAssertTrue(luaError("dispatch.queue{label = 'x', colour = 'red'}").contains("unknown option 'colour'"))
        XCTAssertTrue(luaError("dispatch.queue{label = 42}").contains("option 'label': string expected, got number"))
        XCTAssertTrue(luaError("dispatch.queue{qos = 'warp'}").contains("unknown qos 'warp'"))
        XCTAssertTrue(luaError("dispatch.queue('q'):async(print, {group = 1})").contains("option 'group': dispatch.group expected"))
        XCTAssertTrue(luaError("dispatch.work_item(print, {barrier = 'yes'})").contains("option 'barrier': boolean expected"))
        XCTAssertTrue(luaError("dispatch.queue('q'):sync(print, {group = dispatch.group()})").contains("unknown option 'group'"))
        XCTAssertTrue(luaError("dispatch.walltime{year = 2020, month = 13, day = 1}").contains("out of range"))
    }

    func testErrorsCarryTheCallersPosition() {
        let m = luaError("dispatch.semaphore(-5)")
        XCTAssertTrue(m.hasPrefix("test:"), m)
    }
}
