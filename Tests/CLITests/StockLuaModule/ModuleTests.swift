import Foundation
import XCTest

/// The runtime as a C module in Debian's stock `lua5.4`: loading, `dispatch.run`, errors,
/// Ctrl-C, closing.
final class ModuleTests: XCTestCase {
    /// The command docs/module.md gives, verbatim apart from the directory.
    func testTickFromStockLua() throws {
        let r = try StockLua.run(["-e", StockLua.cpath + "; local d = require 'dispatch'; "
                                  + "d.main:after(0.1, function() print('tick') end); d.run()"])
        XCTAssertEqual(r.stdout, "tick\n", r.stderr)
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stderr, "")
    }

    func testLoadsWithDashL() throws {
        let r = try StockLua.run(["-e", StockLua.cpath, "-l", "dispatch", "-e", "print(type(dispatch.queue), dispatch.main.label)"])
        XCTAssertEqual(r.stdout, "function\tcom.apple.main-thread\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// Workers, groups, sync, tasks and the main queue, with the order Dispatch promises.
    func testRuntimeAttachedToStockLua() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            assert(require("dispatch") == dispatch)
            local q = dispatch.queue("worker")
            local group = dispatch.group()
            local done = {}
            for i = 1, 3 do
              q:async(function() dispatch.sleep(0.01) done[#done + 1] = i end, {group = group})
            end
            group:notify(dispatch.main, function()
              print("notify", table.concat(done, ","), dispatch.thread().is_main)
            end)
            print("sync", q:sync(function() return #done end))
            local t = dispatch.task(function() dispatch.sleep(0.01) return "task result" end)
            print("run", dispatch.run())
            print("wait", t:wait())
            -- a second require after unloading finds the same runtime
            package.loaded.dispatch = nil
            print("same", require("dispatch") == dispatch)
            """)
        XCTAssertEqual(r.stdout, "sync\t3\nnotify\t1,2,3\ttrue\nrun\tfalse\nwait\ttrue\ttask result\nsame\ttrue\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// Switching under stock `lua5.4`: the host's main chunk computing gives the interpreter up
    /// to a ticking timer's handler, and a block computing gives it up to the main queue that
    /// `dispatch.run` services.
    func testSwitchingUnderStockLua() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            -- Computes until `done()` (10 s at most: only code keeping the interpreter waits that long).
            local function spin(done)
              local deadline, x = dispatch.now() + 10, 0
              while dispatch.now() < deadline and not done() do x = x + 1 end
            end
            local ticks = 0
            local timer = dispatch.source.timer{interval = 0.01, queue = dispatch.queue("ticker"),
                                                handler = function() ticks = ticks + 1 end}
            timer:resume()
            dispatch.sleep(0.05)
            local before = ticks
            spin(function() return ticks - before >= 15 end)   -- the main chunk computes
            print("main chunk let the timer tick", ticks - before >= 15)
            timer:cancel()
            local main = 0
            local tick = dispatch.source.timer{interval = 0.01, queue = dispatch.main,
                                               handler = function() main = main + 1 end}
            tick:resume()
            dispatch.global():async(function()
              spin(function() return main >= 15 end)           -- a block computes
              dispatch.main:async(function() print("block let the main queue tick", main >= 15); tick:cancel() end)
            end)
            dispatch.run()
            """)
        XCTAssertEqual(r.stdout, "main chunk let the timer tick\ttrue\nblock let the main queue tick\ttrue\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// `dispatch.run` returns only once no work is left, although the main thread takes the
    /// interpreter while it serves with the main Lua thread innermost (here: the check for
    /// stalled work, made long by many queues) and a block computing meanwhile asks for a switch,
    /// which hooks that thread. The hook is no Ctrl-C: returning then let the chunk end and
    /// `lua_close` finalize `dispatch.main` under the block ("dispatch.queue expected").
    func testSwitchHookDoesNotEndRun() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            dispatch.switch_interval(0.00002)
            local keep = {}
            for i = 1, 20000 do keep[i] = dispatch.queue("q" .. i) end
            local early = 0
            for round = 1, 10 do
              local done = false
              dispatch.global():async(function()
                local deadline = dispatch.now() + 0.06
                while dispatch.now() < deadline do end
                dispatch.main:async(function() done = true end)
              end)
              dispatch.run()
              if not done then early = early + 1 end
            end
            print("runs that returned with work left", early)
            """)
        XCTAssertEqual(r.stdout, "runs that returned with work left\t0\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// A coroutine made before `require` has no runtime in its extra space of its own.
    func testCoroutineMadeBeforeRequire() throws {
        let r = try StockLua.script("""
            local co = coroutine.wrap(function()
              local d = require("dispatch")
              local q = d.queue("from a coroutine")
              coroutine.yield(q:sync(function() return q.label end))
            end)
            print(co())
            """)
        XCTAssertEqual(r.stdout, "from a coroutine\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    func testRunModes() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            local n = 0
            print("nowait idle", dispatch.run("nowait"))
            dispatch.main:after(0.05, function() n = n + 1 end)
            dispatch.main:after(0.4, function() n = n + 1 end)
            print("nowait", dispatch.run("nowait"), n)
            print("once", dispatch.run("once"), n)
            print("once", dispatch.run("once"), n)
            local q = dispatch.queue("bg")
            local finished = false
            q:async(function() dispatch.sleep(0.05) finished = true end)
            print("once until idle", dispatch.run("once"), finished)
            print(pcall(dispatch.run, "forever"))
            dispatch.main:async(function() print(pcall(dispatch.run)) end)
            dispatch.run()
            """)
        XCTAssertEqual(r.stdout, """
            nowait idle\tfalse
            nowait\ttrue\t0
            once\ttrue\t1
            once\tfalse\t2
            once until idle\tfalse\ttrue
            false\tbad argument #1 to 'run' (invalid option 'forever')
            false\tdispatch.run: cannot be called from a block, a handler or a task

            """, r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// The same modes through the CLI (the chunk runs on a pooled thread there).
    func testRunInTheCLI() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            local n = 0
            dispatch.main:after(0.05, function() n = n + 1 end)
            print(dispatch.run("once"), n)
            print(dispatch.run("nowait"), n)
            """)
        XCTAssertEqual(r.stdout, "false\t1\nfalse\t1\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// In the CLI too, one Ctrl-C ends `dispatch.run` with "interrupted!" in the chunk, once:
    /// the script goes on and the main queue is serviced after it as usual.
    func testOneInterruptEndsRunInTheCLI() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString).lua")
        try """
            local dispatch = require("dispatch")
            local n = 0
            local function again() n = n + 1; if n < 1000000 then dispatch.main:after(0.02, again) end end
            again()
            print("running") io.stdout:flush()
            print(pcall(dispatch.run))
            n = 1000000   -- the chain ends: the CLI's own servicing finishes
            print("after")
            """.write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try CLI.run(["run", file.path], timeout: 30) { p in
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) { kill(p.processIdentifier, SIGINT) }
        }
        XCTAssertEqual(r.stdout, "running\nfalse\tinterrupted!\nafter\n", r.stderr)
        XCTAssertEqual(r.stderr, "")
        XCTAssertEqual(r.status, 0)
    }

    /// A task's error that nobody waits for is reported when the chunk hands over to
    /// `dispatch.run`, or when the state closes; either way the exit status is 1.
    func testUnobservedTaskErrorsAreReported() throws {
        let atRun = try StockLua.script("""
            local dispatch = require("dispatch")
            dispatch.task(function() error("failed before run") end)
            dispatch.sleep(0.05)
            io.stderr:write("before run\\n")
            dispatch.run()
            io.stderr:write("after run\\n")
            """)
        XCTAssertTrue(atRun.stderr.hasPrefix("before run\n"), atRun.stderr)
        XCTAssertTrue(atRun.stderr.contains("failed before run"), atRun.stderr)
        XCTAssertTrue(atRun.stderr.hasSuffix("after run\n"), atRun.stderr)
        XCTAssertEqual(atRun.status, 1)

        let atClose = try StockLua.script("""
            local dispatch = require("dispatch")
            local t = dispatch.task(function() error("failed before close") end)
            dispatch.sleep(0.05)
            print("end of chunk")
            """)
        XCTAssertEqual(atClose.stdout, "end of chunk\n")
        XCTAssertTrue(atClose.stderr.contains("failed before close"), atClose.stderr)
        XCTAssertEqual(atClose.status, 1)
    }

    func testUncaughtBlockErrorMakesStatusOne() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            dispatch.queue("q"):async(function() error("boom") end)
            dispatch.run()
            """)
        XCTAssertTrue(r.stderr.contains("error in block on queue 'q'"), r.stderr)
        XCTAssertTrue(r.stderr.contains("boom"), r.stderr)
        XCTAssertEqual(r.status, 1)
    }

    /// The state closes while workers are parked, blocks wait for the lock and sources are
    /// live: the runtime detaches, lua_close unloads the module (which stays mapped), and the
    /// process exits cleanly every time.
    func testClosingWithWorkInFlight() throws {
        for _ in 0..<5 {
            let r = try StockLua.script("""
                local dispatch = require("dispatch")
                local q = dispatch.queue("c", {concurrent = true})
                for i = 1, 8 do q:async(function() dispatch.sleep(0.02 * i) end) end
                local s = dispatch.source.timer{deadline = 0.01, interval = 0.01, queue = q}
                s:set_event_handler(function() end)
                s:resume()
                dispatch.sleep(0.03)
                print("closing")
                """)
            XCTAssertEqual(r.stdout, "closing\n", r.stderr)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
    }

    /// One Ctrl-C ends `dispatch.run` with lua5.4's "interrupted!", like any running chunk.
    func testOneInterruptEndsRun() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            local function again() dispatch.main:after(0.02, again) end
            again()
            print("running") io.stdout:flush()
            print(pcall(dispatch.run))
            """, timeout: 30) { p in
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { kill(p.processIdentifier, SIGINT) }
            }
        XCTAssertEqual(r.stdout, "running\nfalse\tinterrupted!\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// One Ctrl-C also ends a blocking wait on the main thread (no Lua instruction runs there
    /// for lua.c's hook to fire).
    func testOneInterruptEndsAWait() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            print("waiting") io.stdout:flush()
            print(pcall(dispatch.semaphore(0).wait, dispatch.semaphore(0), 30))
            print(pcall(dispatch.sleep, 0.01))
            """, timeout: 30) { p in
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { kill(p.processIdentifier, SIGINT) }
            }
        XCTAssertEqual(r.stdout, "waiting\nfalse\tinterrupted!\ntrue\n", r.stderr)
        XCTAssertEqual(r.status, 0)

        // Loaded by `-l` in an earlier chunk, before lua.c installed its handler for the script.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("module-\(UUID().uuidString).lua")
        try """
            print("waiting") io.stdout:flush()
            dispatch.sleep(30)
            """.write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let l = try StockLua.run(["-e", StockLua.cpath, "-l", "dispatch", file.path], timeout: 30) { p in
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) { kill(p.processIdentifier, SIGINT) }
        }
        XCTAssertEqual(l.stdout, "waiting\n")
        XCTAssertTrue(l.stderr.contains("interrupted!"), l.stderr)
        XCTAssertEqual(l.status, 1)
    }
}
