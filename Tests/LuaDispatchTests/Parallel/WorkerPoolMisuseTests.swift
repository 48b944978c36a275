import CLua
import CLuaShim
import Foundation
import XCTest
@testable import LuaDispatch

/// Pools and jobs: bad input, waits (timeouts, tasks, interruption), handles collected with work
/// pending, errors nobody retrieves, and the bytecode cache.
final class WorkerPoolMisuseTests: XCTestCase {
    func testBadInputRaisesClearErrors() {
        let run = runLua("""
            local function err(f, ...)
              local ok, e = pcall(f, ...)
              assert(not ok, "no error")
              t.record(e)
            end
            local pool = dispatch.workers{count = 1}
            local q = dispatch.queue("q")
            err(pool.submit, pool, 42)
            err(pool.submit, pool, print)
            err(pool.submit, pool, function() return q end)
            err(pool.submit, pool, function() end, 1, {list = {1, coroutine.create(print)}})
            err(pool.submit, pool, function() end, q)
            err(dispatch.workers, {count = 0})
            err(dispatch.workers, {count = 1.5})
            err(dispatch.workers, {init = 5})
            err(dispatch.workers, {init = print})
            err(dispatch.workers, {init = function() return q end})
            err(dispatch.workers, {size = 2})
            err(dispatch.workers, 4)
            local job = pool:submit(function() return 1 end)
            err(job.wait, job, -1)
            err(job.wait, job, "soon")
            err(job.notify, job, "q", function() end)
            err(job.notify, job, q, nil)
            err(pool.submit, {}, function() end)
            pool:close()
            err(pool.submit, pool, function() end)
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.strings, [
            "bad argument #2 to 'submit' (function expected, got number)",
            "bad argument #2 to 'submit' (Lua function expected, got C function)",
            "bad argument #2 to 'submit' (upvalue 'q' of function holds a userdata (dispatch.queue) that cannot be copied to a worker)",
            "bad argument #4 to 'submit' (a coroutine cannot be copied to a worker (at value.list[2]))",
            "bad argument #3 to 'submit' (a userdata (dispatch.queue) cannot be copied to a worker)",
            "bad argument #1 to 'workers' (option 'count' must be between 1 and 1024, got 0)",
            "bad argument #1 to 'workers' (option 'count': integer expected, got number)",
            "bad argument #1 to 'workers' (option 'init': function expected, got number)",
            "bad argument #1 to 'workers' (option 'init': Lua function expected, got C function)",
            "bad argument #1 to 'workers' (option 'init': upvalue 'q' of function holds a userdata (dispatch.queue) that cannot be copied to a worker)",
            "bad argument #1 to 'workers' (unknown option 'size')",
            "bad argument #1 to 'workers' (table expected, got number)",
            "bad argument #2 to 'wait' (timeout must be >= 0, got -1)",
            "bad argument #2 to 'wait' (number, dispatch.time or dispatch.walltime expected, got string)",
            "bad argument #2 to 'notify' (dispatch.queue expected, got string)",
            "bad argument #3 to 'notify' (function expected, got nil)",
            "bad argument #1 to 'submit' (dispatch.pool expected, got table)",
            "submit on a closed pool (pool #\(run.strings.last?.split(separator: "#").last?.dropLast() ?? ""))",
        ])
    }

    func testWaitTimesOutAndTasksSuspendInsteadOfBlocking() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local gate = dispatch.channel{}
            local blocked = pool:submit(function(g) return g:receive() end, gate)
            t.record(blocked:wait(0.05))
            local function threads()
              local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
              return tonumber(s:match("Threads:%s*(%d+)"))
            end
            local before = threads()
            local tasks = {}
            for i = 1, 200 do tasks[i] = dispatch.task(function() return blocked:wait() end) end
            dispatch.sleep(0.3)                    -- every task is suspended on the job
            local during = threads()
            gate:send("open")
            local all = true
            for i = 1, 200 do
              local ok, ok2, v = tasks[i]:wait()
              all = all and ok and ok2 and v == "open"
            end
            t.record(all, during - before < 16)
            pool:close()
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], [false, "timeout"])
        XCTAssertEqual(run.records[1], [true, true])
    }

    /// `job:wait` on the main thread parks there, so that Ctrl-C (`interruptMainThreadWait`)
    /// ends it.
    func testAMainThreadWaitIsInterruptible() {
        assertMainThreadWaitIsInterrupted("""
            local pool = dispatch.workers{count = 1}
            local gate = dispatch.channel{}
            local ok, err = pcall(function() return pool:submit(function(g) return g:receive() end, gate):wait() end)
            gate:send(1)
            pool:close()
            error(err, 0)
            """, in: "wait")
    }

    /// Handles collected while their jobs are queued: the jobs still run, notify still gets the
    /// results, and the workers go once the queue is empty.
    func testHandlesCollectedWithWorkPendingLoseNothing() {
        let run = runLua("""
            local q = dispatch.queue("collect")
            local got, lock = {}, dispatch.queue("got")
            local gate = dispatch.channel{}
            local kept
            do
              local pool = dispatch.workers{count = 2}
              pool:submit(function(g) g:receive() end, gate)
              pool:submit(function(g) g:receive() end, gate)
              for i = 1, 50 do
                pool:submit(function(x) return x * x end, i):notify(q, function(ok, v) lock:sync(function() got[#got + 1] = v end) end)
              end
              kept = pool:submit(function() return "kept" end)
            end
            collectgarbage(); collectgarbage()
            gate:send(1); gate:send(2)
            t.record(kept:wait())
            local g = dispatch.group()
            g:enter()
            q:async(function() g:leave() end)      -- after the notifies submitted before it
            g:wait()
            dispatch.sleep(0.05)
            lock:sync(function() local sum = 0; for _, v in ipairs(got) do sum = sum + v end; t.record(#got, sum) end)
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, "kept"])
        XCTAssertEqual(run.records[1], [50, 42925])
    }

    /// A failed job whose handle is collected before anyone retrieved the error reports it as
    /// an uncaught error, with the worker's traceback; one retrieved by `wait` does not.
    func testAnErrorNobodyRetrievesIsReported() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            do pool:submit(function() error("nobody waits for me") end) end
            local seen = pool:submit(function() error("waited for") end)
            pcall(seen.wait, seen)
            seen = nil
            pool:submit(function() end):wait()
            collectgarbage(); collectgarbage()
            pool:close()
            """, timeout: 30)
        XCTAssertTrue(run.ok)
        XCTAssertEqual(run.errors.map(\.message), ["test:3: nobody waits for me"])
        XCTAssertTrue(run.errors.first?.traceback.contains("stack traceback:") ?? false)
    }

    /// Submitting one function again neither dumps it (same cache number) nor, for a function
    /// whose upvalues are only globals and libraries, loads it again in the worker.
    func testTheSameFunctionIsDumpedAndLoadedOnce() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local function plain() return tostring(debug.getinfo(1, "f").func) end
            local a = select(2, pool:submit(plain):wait())
            local b = select(2, pool:submit(plain):wait())
            local n = 0
            local function counting() n = n + 1; return tostring(debug.getinfo(1, "f").func), n end
            local _, c, nc = pool:submit(counting):wait()
            local _, d, nd = pool:submit(counting):wait()
            t.record(a == b, c ~= d, nc, nd)
            pool:close()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, true, 1, 1])

        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.acquire()
        defer { rt.release() }
        let L = rt.L
        let code = "local k = 1; return function() return 1 end, function() return k end"
        XCTAssertEqual(ld_loadbuffer(L, code, code.utf8.count, "=test"), LUA_OK)
        XCTAssertEqual(ld_pcall(L, 0, 2, 0), LUA_OK)
        func id(_ i: Int32) -> Int {
            var copier = ValueCopier(L, cacheBytecode: true)
            defer { copier.finish(); lua_settop(L, 2) }
            XCTAssertNoThrow(try copier.root(i))
            guard case .function(_, _, _, let id)? = copier.graph.nodes.first else { return -1 }
            return id
        }
        let first = id(1)
        XCTAssertGreaterThan(first, 0)
        XCTAssertEqual(id(1), first)
        XCTAssertNotEqual(id(2), first)
        lua_settop(L, 0)
    }
}

extension WorkerPoolMisuseTests {
    /// The interpreter finds the code of the function it last submitted by the function's
    /// address, so it keeps that function alive until another one is submitted: a new closure
    /// at a collected one's address would otherwise be sent with the collected one's code. The
    /// last function outlives every other reference to it; new closures each get their own code.
    func testTheLastSubmittedFunctionStaysAliveAndNewOnesGetTheirOwnCode() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local weak = setmetatable({}, {__mode = "v"})
            local wrong = {}
            for k = 1, 100 do
              local f = load("return function(x) return x + " .. k .. " end")()
              weak[k] = f
              local _, r = pool:submit(f, 1000):wait(10)
              if r ~= 1000 + k then wrong[#wrong + 1] = k .. ":" .. tostring(r) end
              f = nil
              collectgarbage(); collectgarbage()
            end
            local alive = {}
            for k = 1, 100 do if weak[k] then alive[#alive + 1] = k end end
            t.record(#wrong, table.concat(alive, " "))
            pool:close()
            """, timeout: 60)
        assertClean(run)
        XCTAssertEqual(run.records.first, [0, "100"])
    }

    /// An object's `__gc` is a C function that releases the Swift object; reached through
    /// `debug.getmetatable`, it must leave alone whatever is not an object of its own type (a file
    /// handle is a userdata of the same size), and an object it was called on before.
    func testAnObjectsGcLeavesOtherUserdataAlone() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local job = pool:submit(function() return 7 end)
            local q = dispatch.queue("kept")
            local jobGc, queueGc = debug.getmetatable(job).__gc, debug.getmetatable(q).__gc
            jobGc(io.stdout); jobGc(q); jobGc(42); queueGc(io.stdout); queueGc({})
            local ran = false
            q:sync(function() ran = true end)
            io.stdout:write("")
            t.record(ran, select(2, job:wait()), io.type(io.stdout))
            pool:close()
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records.first, [true, 7, "file"])
    }
}

/// Runs `code` (with `dispatch` required) in a runtime whose main-thread waits park, while
/// another thread interrupts the main thread's wait (what Ctrl-C does); the run must end with
/// "interrupted (in 'CALL')".
func assertMainThreadWaitIsInterrupted(_ code: String, in call: String, file: StaticString = #filePath, line: UInt = #line) {
    let rt = TestRuntimes.make()
    defer { rt.close() }
    rt.control.parksMainThreadWaits.store(true, ordering: .relaxed)
    let interrupter = Thread {
        while !rt.interruptMainThreadWait() { Thread.sleep(forTimeInterval: 0.01) }
    }
    interrupter.start()
    do {
        try rt.run(string: "local dispatch = require('dispatch')\n" + code)
        XCTFail("no error", file: file, line: line)
    } catch {
        XCTAssertTrue("\(error)".contains("interrupted (in '\(call)')"), "\(error)", file: file, line: line)
    }
}
