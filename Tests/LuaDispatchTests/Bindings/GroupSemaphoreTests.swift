import XCTest
import CLua
import CLuaShim
import Foundation
@testable import LuaDispatch

final class GroupTests: XCTestCase {
    func testNotifyRunsAfterEveryMember() {
        let run = runLua("""
            local g = dispatch.group()
            local q = dispatch.queue{label = "members", concurrent = true}
            local done, counter = 0, dispatch.queue("counter")   -- the members may interleave
            local function count() counter:sync(function() done = done + 1 end) end
            for i = 1, 5 do q:async(function() dispatch.sleep(0.005 * i); count() end, {group = g}) end
            g:enter()
            dispatch.global():after(0.04, function() count(); g:leave() end)
            g:notify(dispatch.main, function() t.record(done) end)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [6])
    }

    func testWaitSucceedsOrTimesOut() {
        let run = runLua("""
            local g = dispatch.group()
            t.record(g:wait(0))
            g:enter()
            t.record(g:wait(0.01))
            dispatch.global():async(function() dispatch.sleep(0.02); g:leave() end)
            t.record(g:wait(5))
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[true], [false, "timeout"], [true]])
    }

    func testNotifyWithAWorkItem() {
        let run = runLua("""
            local g = dispatch.group()
            g:enter()
            g:notify(dispatch.main, dispatch.work_item(function() t.record("item") end))
            g:leave()
            """)
        assertClean(run)
        XCTAssertEqual(run.strings, ["item"])
    }

    /// A group still entered whose userdata Lua collects keeps its notify pending, as in Swift
    /// (where the notify holds the group): running it would say the work ended when it has not.
    /// Left later, the notify runs and the group is freed.
    func testCollectingAnEnteredGroupDoesNotRunItsNotify() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        try rt.run(string: """
            local dispatch = require('dispatch')
            ran = false
            g = dispatch.group(); g:enter()
            g:notify(dispatch.global(), function() ran = true end)
            """)
        weak var group: GroupObject?
        group = try rt.withInterpreter { T throws(LuaScriptError) -> GroupObject? in
            lua_rawgeti(T, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            _ = Lua.getField(T, -1, "g")
            return rt.objects.check(T, -1, .group)
        }
        XCTAssertNotNil(group)
        try rt.run(string: "g = nil; for i = 1, 3 do collectgarbage() end")
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(try rt.run(string: "return ran"), [false], "the notify ran for a group still entered")
        do {
            let g = try XCTUnwrap(group, "the group was freed with its notify pending")
            XCTAssertTrue(g.entered.decrementIfPositive())
            g.openEnters.count.wrappingSubtract(1, ordering: .relaxed)
            g.group.leave()
        }
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        XCTAssertEqual(try rt.run(string: "return ran"), [true])
        // Dispatch lets go of the notify's block just after it ran.
        let deadline = Date(timeIntervalSinceNow: 5)
        while group != nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertNil(group)
    }
}

final class SemaphoreTests: XCTestCase {
    func testCountingSemaphoreLimitsConcurrency() {
        let run = runLua("""
            local s = dispatch.semaphore(2)
            local q = dispatch.queue{label = "limited", concurrent = true}
            local g = dispatch.group()
            local inside, peak, counts = 0, 0, dispatch.queue("counts")   -- changed one at a time
            for i = 1, 8 do
              q:async(function()
                s:wait()
                counts:sync(function()
                  inside = inside + 1
                  if inside > peak then peak = inside end
                end)
                dispatch.sleep(0.01)
                counts:sync(function() inside = inside - 1 end)
                s:signal()
              end, {group = g})
            end
            g:wait()
            t.record(peak)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints.count, 1)
        XCTAssertLessThanOrEqual(run.ints[0], 2)
        XCTAssertGreaterThanOrEqual(run.ints[0], 1)
    }

    func testWaitTimesOutAndSignalReportsAWokenWaiter() {
        let run = runLua("""
            local s = dispatch.semaphore(0)
            t.record(s:wait(0.01))
            t.record(s:signal())          -- nobody waiting
            t.record(s:wait(0))           -- takes that signal
            local started = dispatch.semaphore(0)
            dispatch.global():async(function() started:signal(); s:wait() end)
            started:wait()
            dispatch.sleep(0.05)
            t.record(s:signal())          -- wakes the waiter
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[false, "timeout"], [false], [true], [true]])
    }

    func testBinarySemaphoreOrdersHandOffs() {
        let run = runLua("""
            local s = dispatch.semaphore(0)
            local q = dispatch.queue("producer")
            for i = 1, 5 do q:async(function() t.record(i); s:signal() end) end
            for i = 1, 5 do s:wait() end
            t.record("done")
            """)
        assertClean(run)
        XCTAssertEqual(run.values, [1, 2, 3, 4, 5, "done"])
    }
}
