import XCTest
@testable import LuaDispatch

/// Objects collected in states that make libdispatch abort on release must not crash.
final class LifetimeTests: XCTestCase {
    func testCollectingObjectsInAbortingStates() {
        let run = runLua("""
            do
              local s = dispatch.semaphore(3); s:wait(); s:wait()        -- below its initial value
              local q = dispatch.queue("suspended"); q:suspend(); q:suspend()
              local i = dispatch.queue{label = "inactive", inactive = true}
              local g = dispatch.group(); g:enter(); g:enter()              -- still entered
              local k = dispatch.specific_key(); dispatch.queue("with specific"):set_specific(k, {})
            end
            for n = 1, 3 do collectgarbage() end
            dispatch.sleep(0.05)
            for n = 1, 3 do collectgarbage() end
            t.record("survived")
            """)
        assertClean(run)
        XCTAssertEqual(run.strings, ["survived"])
    }

    /// An active source keeps itself (and the runtime) alive until its cancel handler ran:
    /// closing the interpreter cancels live sources, suspended ones included, so that the
    /// runtime is freed.
    func testCloseCancelsLiveSourcesAndFreesTheRuntime() throws {
        weak var weakRuntime: Runtime?
        do {
            // Untracked: the test checks it is freed, which the list would prevent.
            let rt = TestRuntimes.untracked()
            weakRuntime = rt
            try rt.run(string: """
                local d = require('dispatch')
                local q = d.queue('held')
                active = d.source.timer{deadline = 0.001, interval = 0.001}
                active:set_event_handler(function() end)
                active:resume()
                suspended = d.source.timer{deadline = 0.001, interval = 0.001, queue = q}
                suspended:resume()
                suspended:suspend()
                q:suspend()
                d.sleep(0.01)
                """)
            rt.close()
        }
        // The cancel handlers run on Dispatch's threads.
        let deadline = Date().addingTimeInterval(10)
        while weakRuntime != nil && Date() < deadline { usleep(1000) }
        XCTAssertNil(weakRuntime, "a live source kept the closed runtime alive")
    }

    /// A cancelled source is collected once its cancel handler ran, also when its handlers
    /// refer to it (`s:cancel()` inside the handler, the usual idiom): the runtime lets the
    /// handlers go, which breaks the cycle through the registry. Handlers set afterwards are
    /// not kept either.
    func testCancelledSourceReferencedByItsHandlersIsCollected() {
        let run = runLua("""
            local weak = setmetatable({}, {__mode = "v"})
            local done = dispatch.semaphore(0)
            for i = 1, 3 do
              local s = dispatch.source.timer{interval = 0.001, queue = dispatch.queue("q" .. i)}
              local n = 0
              s:set_event_handler(function() n = n + 1; if n == 2 then s:cancel() end end)
              s:set_cancel_handler(function() s:set_event_handler(function() return s end); done:signal() end)
              weak[i] = s
              s:resume()
            end
            for i = 1, 3 do done:wait() end
            local left
            for round = 1, 100 do
              collectgarbage(); collectgarbage()
              left = 0
              for i = 1, 3 do if weak[i] then left = left + 1 end end
              if left == 0 then break end
              dispatch.sleep(0.01)
            end
            t.record(left)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[0]])
    }

    func testManyShortLivedObjects() {
        let run = runLua("""
            local total = 0
            for round = 1, 20 do
              local q = dispatch.queue{label = "tmp" .. round, concurrent = round % 2 == 0}
              local g = dispatch.group()
              local counter = dispatch.queue("counter" .. round)   -- blocks of a concurrent q may interleave
              for i = 1, 50 do q:async(function() counter:sync(function() total = total + 1 end) end, {group = g}) end
              g:wait()
              if round % 5 == 0 then collectgarbage() end
            end
            t.record(total)
            """)
        assertClean(run)
        XCTAssertEqual(run.ints, [1000])
    }

    func testWorkHeldBySuspendedQueuesEndsTheRunWithAReport() {
        let run = runLua("""
            local q = dispatch.queue("parked")
            q:suspend()
            q:async(function() t.record("never") end)
            """)
        assertClean(run)
        XCTAssertTrue(run.records.isEmpty)
        XCTAssertEqual(run.runtime.stalledWork(), "'parked' (suspended, 1 block)")
    }
}
