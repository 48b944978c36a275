import Foundation
import XCTest

/// Waits of the main thread end on time while busy blocks occupy every thread of the global
/// queue's pool: what ends them (a group's notify, a sleep's timer) does not wait for a thread
/// of that pool.
final class WaitStarvationTests: XCTestCase {
    func testMainThreadWaitsEndWhileBusyBlocksFillTheGlobalPool() throws {
        let r = try CLI.run(["-e", """
            local dispatch = require("dispatch")
            local stop, started = false, dispatch.semaphore(0)
            for i = 1, 8 do
              dispatch.global():async(function()
                started:signal()
                local j = 0
                while not stop do j = j + 1 end  -- runnable: the pool sees no reason to grow
              end)
            end
            started:wait()
            local t = dispatch.now()
            dispatch.sleep(0.001)
            print("sleep", dispatch.now() - t < 2)
            local g = dispatch.group()
            dispatch.queue("s"):async(function() end, {group = g})
            t = dispatch.now()
            print("group wait", g:wait(10), dispatch.now() - t < 2)
            stop = true
            """], timeout: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "sleep\ttrue\ngroup wait\ttrue\ttrue\n", r.stderr)
    }
}
