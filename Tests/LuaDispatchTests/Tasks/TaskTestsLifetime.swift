import Foundation
import XCTest
@testable import LuaDispatch

/// Suspended tasks count as outstanding work; closing the interpreter ends them cleanly.
final class TaskLifetimeTests: XCTestCase {
    /// The run goes on while a task sleeps: a suspended task is outstanding work.
    func testASuspendedTaskKeepsTheRunGoing() {
        let run = runLua("""
            dispatch.task(function() dispatch.sleep(0.2); t.record("woke") end)
            """)
        assertClean(run)
        XCTAssertEqual(run.strings, ["woke"])
        XCTAssertEqual(run.runtime.pendingWork, 0)
    }

    /// A task whose next step can only run on a suspended queue is work that can never run:
    /// the run ends with the report, as for blocks. A wait that ended otherwise (a timeout)
    /// leaves nothing counted on the queue.
    func testATaskHeldByASuspendedQueueIsReportedAsStalled() {
        let run = runLua("""
            local q = dispatch.queue("parked")
            dispatch.task(function() dispatch.sleep(0.2); t.record("never") end, q)
            local other = dispatch.queue("timed out")
            local g = dispatch.group(); g:enter()
            dispatch.task(function() t.record(g:wait(0.05)) end, other):wait()
            other:suspend()
            other:async(function() end)
            dispatch.sleep(0.05)
            q:suspend()
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[false, "timeout"]])
        let report = run.runtime.stalledWork() ?? ""
        XCTAssertTrue(report.contains("'parked' (suspended, 1 block)"), report)
        XCTAssertTrue(report.contains("'timed out' (suspended, 1 block)"), report)
    }

    /// Closing with tasks suspended in every kind of wait, and with steps queued on a suspended
    /// queue: close returns, each task's outstanding work is done, nothing runs Lua afterwards.
    func testCloseEndsSuspendedTasks() throws {
        let rt = TestRuntimes.make()
        try rt.run(string: """
            local dispatch = require("dispatch")
            local s = dispatch.semaphore(0)
            local g = dispatch.group(); g:enter()
            local item = dispatch.work_item(function() end)
            local held = dispatch.queue("held"); held:suspend()
            keep = {
              dispatch.task(function() dispatch.sleep(3600) end),
              dispatch.task(function() s:wait() end),
              dispatch.task(function() g:wait() end),
              dispatch.task(function() item:wait() end),
              dispatch.task(function() dispatch.await(function() end) end),
              dispatch.task(function() held:sync(function() end) end),
              dispatch.task(function() end, held),
              dispatch.task(function() dispatch.sleep(0.01); error("after close") end, held),
            }
            keep[#keep + 1] = dispatch.task(function() keep[1]:wait() end)
            """)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(rt.pendingWork, 9)
        XCTAssertEqual(rt.ledger.tasks.unfinished.count, 9)
        rt.close()
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10), "outstanding work after close: \(rt.pendingWork)")
        XCTAssertEqual(rt.ledger.tasks.unfinished.count, 0)
        XCTAssertEqual(rt.reporting.uncaughtErrors.load(ordering: .relaxed), 0)
    }

    /// Tasks and their waits leave no thread behind over many interpreters.
    func testManyInterpretersWithTasksLeaveNoThreadsBehind() throws {
        func cycle(_ n: Int) throws {
            for _ in 0..<n {
                // Untracked: each is closed here, and the list would keep every one.
                let rt = TestRuntimes.untracked()
                let r = try rt.run(string: """
                    local dispatch = require('dispatch')
                    local s = dispatch.semaphore(0)
                    local tasks = {}
                    for i = 1, 20 do tasks[i] = dispatch.task(function() s:wait(); dispatch.sleep(0.001); return i end) end
                    local never = dispatch.semaphore(0)
                    dispatch.task(function() never:wait() end)     -- left waiting at close
                    for i = 1, 20 do s:signal() end
                    local sum = 0
                    for i = 1, 20 do sum = sum + select(2, tasks[i]:wait()) end
                    return sum
                    """)
                XCTAssertEqual(r, [210])
                rt.close()
            }
        }
        try cycle(20)
        Thread.sleep(forTimeInterval: 0.5)
        let threads0 = ProcessStats.threads()
        try cycle(100)
        Thread.sleep(forTimeInterval: 0.5)
        let threads1 = ProcessStats.threads()
        // A thread kept per task left waiting at close would add 100. Dispatch's pool itself
        // grows by a few dozen threads when the machine is loaded (seen: +11 to +30), hence
        // the margin.
        XCTAssertLessThanOrEqual(threads1, threads0 + 50, "threads grew from \(threads0) to \(threads1)")
    }

    /// A wait on the main thread that parks can be ended from another thread: the call raises
    /// "interrupted" (what Ctrl-C builds on).
    func testAParkedMainThreadWaitCanBeInterrupted() {
        let rt = TestRuntimes.make()
        rt.control.parksMainThreadWaits.store(true, ordering: .relaxed)
        let interrupter = Thread {
            Thread.sleep(forTimeInterval: 0.2)
            while !rt.interruptMainThreadWait() { Thread.sleep(forTimeInterval: 0.01) }
        }
        interrupter.start()
        let t0 = Date()
        XCTAssertThrowsError(try rt.run(string: "require('dispatch').semaphore(0):wait()")) { error in
            XCTAssertTrue("\(error)".contains("interrupted (in 'wait')"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(t0), 10)
        // Waits that complete are unaffected by parking.
        XCTAssertEqual(try rt.run(string: """
            local dispatch = require('dispatch')
            local s = dispatch.semaphore(0)
            dispatch.global():after(0.02, function() s:signal() end)
            dispatch.sleep(0.01)
            return s:wait(), s:wait(0.01)
            """), [.boolean(true), .boolean(false), .string("timeout")])
    }
}
