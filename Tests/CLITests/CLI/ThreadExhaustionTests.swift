import Foundation
import XCTest

/// libdispatch's worker pool stops growing at about 255 threads on Linux: when that many blocks
/// are blocked in waits while work is queued, the runtime says so once on stderr, and the
/// outstanding-work report (the scenario runner's time-limit report) names it.
final class ThreadExhaustionTests: XCTestCase {
    /// 1,024 serial queues whose blocks wait for each other: each waits until all have started.
    static func script(timeout: String) -> String {
        """
        local dispatch = require("dispatch")
        local n, all, lock, count = 1024, dispatch.semaphore(0), dispatch.semaphore(1), 0
        local done = dispatch.group()
        for i = 1, n do
          dispatch.queue("q" .. i):async(function()
            lock:wait(); count = count + 1; local c = count; lock:signal()
            if c == n then for _ = 1, n - 1 do all:signal() end else all:wait(\(timeout)) end
          end, {group = done})
        end

        """
    }

    func testOneWarningWhenBlockedBlocksFillThePool() throws {
        // Each wait gives up after 0.3 s, so the 1,024 blocks get through in rounds of 255.
        let r = try CLI.script(Self.script(timeout: "0.3") + "done:wait()\nprint('started', count)\n")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "started\t1024\n")
        let warnings = r.stderr.components(separatedBy: "luadispatch: warning: ").count - 1
        XCTAssertEqual(warnings, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("255 blocks are blocked in waits (sleep, wait, sync, ...)"), r.stderr)
        XCTAssertTrue(r.stderr.contains("tasks (dispatch.task)"), r.stderr)
    }

    /// 255 blocked blocks with nothing else queued stall nothing: no warning.
    func testNoWarningWithoutQueuedWork() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            local n, go, started = 255, dispatch.semaphore(0), dispatch.semaphore(0)
            local done = dispatch.group()
            for i = 1, n do
              dispatch.queue("q" .. i):async(function() started:signal(); go:wait() end, {group = done})
            end
            for i = 1, n do started:wait() end
            dispatch.sleep(0.2)
            for i = 1, n do go:signal() end
            done:wait()
            print("done")
            """)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "done\n")
        XCTAssertFalse(r.stderr.contains("warning"), r.stderr)
    }

    /// Blocks that wait in tasks hold no thread: no warning, and all 1,024 start.
    func testTasksDoNotExhaustThePool() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            local n, all, lock, count = 1024, dispatch.semaphore(0), dispatch.semaphore(1), 0
            local tasks = {}
            for i = 1, n do
              tasks[i] = dispatch.task(function()
                lock:wait(); count = count + 1; local c = count; lock:signal()
                if c == n then for _ = 1, n - 1 do all:signal() end else all:wait() end
              end, dispatch.queue("q" .. i))
            end
            for i = 1, n do tasks[i]:wait() end
            print('started', count)
            """)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "started\t1024\n")
        XCTAssertFalse(r.stderr.contains("warning"), r.stderr)
    }

    /// A scenario stalled that way is stopped at its time limit with the count in its report.
    func testScenarioTimeLimitReportNamesIt() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("exhaustion-\(UUID().uuidString).lua")
        try ("-- title: blocks waiting for each other on 1,024 serial queues\n-- expect: 1 checks, 1 s of delays\n"
             + Self.script(timeout: "nil") + "done:wait()\n").write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try CLI.run(["scenarios", "exec", file.path, "--timeout", "3"])
        XCTAssertEqual(r.status, 124, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("FAILED: timed out after 3.00 s; still pending:"), r.stdout)
        XCTAssertTrue(r.stdout.contains("255 blocks are blocked in waits"), r.stdout)
        XCTAssertTrue(r.stderr.contains("luadispatch: warning: 255 blocks are blocked in waits"), r.stderr)
    }
}
