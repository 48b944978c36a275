import CLua
import CLuaShim
import Dispatch
import Foundation
import XCTest

@testable import LuaDispatch

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.concurrent_map`: results, copy rules, errors, isolation and worker lifetime.
final class ConcurrentMapTests: XCTestCase {
    /// Lua helpers available to every test script.
    private static let prelude = """
        local dispatch = require("dispatch")
        local function raises(text, f, ...)
            local ok, err = pcall(f, ...)
            assert(not ok, "expected an error containing: " .. text)
            assert(string.find(tostring(err), text, 1, true), "error '" .. tostring(err) .. "' lacks '" .. text .. "'")
        end
        """

    /// Runs `code` in a new runtime and fails the test with the Lua error, if any.
    private func lua(_ code: String, file: StaticString = #filePath, line: UInt = #line) {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        do { try rt.run(string: Self.prelude + "\n" + code) } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    func testResultsComeBackInOrder() {
        lua("""
            for _, options in ipairs({ {}, {chunk = 1}, {chunk = 7}, {chunk = 5000} }) do
                local r = dispatch.concurrent_map(1000, function(i) return i * i end, options)
                assert(#r == 1000)
                for i = 1, 1000 do assert(r[i] == i * i, i) end
            end
            -- only the first result; nil results leave holes
            local r = dispatch.concurrent_map(6, function(i) if i % 2 == 0 then return i, "extra" end end)
            for i = 1, 6 do assert(r[i] == (i % 2 == 0 and i or nil), i) end
            assert(next(dispatch.concurrent_map(0, function() error("never") end)) == nil)
            """)
    }

    func testFunctionsAndUpvaluesAreCopied() {
        lua("""
            local function sq(x) return x * x end
            local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end
            local shared = {10}
            local cfg = {a = shared, b = shared, name = "n\\0\\255", half = 0.5, big = math.maxinteger}
            cfg.self = cfg
            local Point = {}
            Point.__index = Point
            function Point:sum() return self.x + self.y end
            local p = setmetatable({x = 1, y = 2}, Point)
            local count = 0
            local function bump() count = count + 1 end
            local function read() return count end
            local r = dispatch.concurrent_map(8, function(i)
                bump(); bump()
                return {
                    sq = sq(i), fib = fib(i),
                    sameTable = cfg.a == cfg.b and cfg.self == cfg,
                    name = cfg.name, half = math.type(cfg.half), big = cfg.big,
                    method = p:sum(), joined = read(),
                }
            end, {chunk = 1})
            for i = 1, 8 do
                local t = r[i]
                assert(t.sq == i * i and t.fib == ({1, 1, 2, 3, 5, 8, 13, 21})[i], i)
                assert(t.sameTable and t.name == "n\\0\\255" and t.half == "float" and t.big == math.maxinteger)
                assert(t.method == 3)
                assert(t.joined == 2, "bump and read share one variable, fresh per task: " .. t.joined)
            end
            assert(count == 0)
            -- library tables and the dispatch module are rebound, not copied
            local m, s = math, string
            local r2 = dispatch.concurrent_map(2, function(i)
                return s.format("%d", m.floor(i + 0.5)) .. type(dispatch.thread().number)
            end)
            assert(r2[1] == "1number" and r2[2] == "2number")
            -- distinct closures of one prototype keep their own upvalues (the cache is per closure)
            for k = 1, 3 do
                local r3 = dispatch.concurrent_map(2, function(i) return i * k end)
                assert(r3[2] == 2 * k)
            end
            """)
    }

    func testResultsAreCopiedBack() {
        lua("""
            local r = dispatch.concurrent_map(4, function(i)
                local shared = {i}
                local t = {a = shared, b = shared, f = function(x) return x + i end}
                t.self = t
                return t
            end)
            for i = 1, 4 do
                local t = r[i]
                assert(t.a == t.b and t.a[1] == i and t.self == t and t.f(10) == 10 + i)
            end
            -- sharing is kept among the results of one task, not across tasks
            local shared = {}
            local s = dispatch.concurrent_map(4, function() return shared end, {chunk = 2})
            assert(s[1] == s[2] and s[3] == s[4] and s[1] ~= s[3] and s[1] ~= shared)
            local g = dispatch.concurrent_map(1, function() return _G end)
            assert(g[1] == _G, "the worker's globals come back as the caller's")
            """)
    }

    func testValuesThatCannotBeCopiedNameTheUpvalue() {
        lua("""
            local q = dispatch.queue("q")
            raises("concurrent_map: upvalue 'q' of function holds a userdata (dispatch.queue) that cannot be copied to a worker",
                dispatch.concurrent_map, 2, function() return q end)
            local p = print
            raises("upvalue 'p' of function holds a C function", dispatch.concurrent_map, 2, function() p() end)
            local co = coroutine.create(function() end)
            raises("upvalue 'co' of function holds a coroutine", dispatch.concurrent_map, 2, function() return co end)
            local cfg = {inner = {list = {1, q}}}
            raises("upvalue 'cfg' of function holds a userdata (dispatch.queue) that cannot be copied to a worker (at cfg.inner.list[2])",
                dispatch.concurrent_map, 2, function() return cfg end)
            local function helper() return co end
            raises("upvalue 'helper' of function holds a coroutine that cannot be copied to a worker (at upvalue 'co' of helper)",
                dispatch.concurrent_map, 2, function() return helper() end)
            raises("bad argument #2 to 'concurrent_map' (Lua function expected, got C function)",
                dispatch.concurrent_map, 2, print)
            raises("concurrent_map: iteration 2: result holds a userdata (dispatch.time) that cannot be copied back (at result.t)",
                dispatch.concurrent_map, 3, function(i) return {t = i > 1 and dispatch.now() or nil} end)
            raises("dispatch.queue is not available in a worker interpreter",
                dispatch.concurrent_map, 1, function() return dispatch.queue("x") end)
            """)
    }

    func testAnErrorNamesItsIterationAfterAllFinish() {
        lua("""
            raises("concurrent_map: iteration 7: ", dispatch.concurrent_map, 10, function(i)
                if i == 7 then error("boom") end
                return i
            end)
            raises("boom", dispatch.concurrent_map, 10, function(i) if i == 7 then error("boom") end end)
            for _, options in ipairs({ {}, {chunk = 1}, {chunk = 3} }) do
                raises("concurrent_map: iteration 4: ", dispatch.concurrent_map, 20, function(i)
                    if i % 4 == 0 then error("multiple of four") end
                end, options)
            end
            raises("concurrent_map: iteration 1: (error object is a table value)",
                dispatch.concurrent_map, 1, function() error({}) end)
            """)
    }

    func testBadArguments() {
        lua("""
            raises("bad argument #1 to 'concurrent_map' (iteration count must be >= 0, got -1)",
                dispatch.concurrent_map, -1, function() end)
            raises("bad argument #1 to 'concurrent_map' (number has no integer representation)",
                dispatch.concurrent_map, 2.5, function() end)
            raises("bad argument #1 to 'concurrent_map' (number expected, got string)",
                dispatch.concurrent_map, "x", function() end)
            raises("bad argument #2 to 'concurrent_map' (function expected, got number)", dispatch.concurrent_map, 1, 3)
            raises("bad argument #3 to 'concurrent_map' (unknown option 'chunks')",
                dispatch.concurrent_map, 1, function() end, {chunks = 2})
            raises("bad argument #3 to 'concurrent_map' (option 'chunk' must be >= 1, got 0)",
                dispatch.concurrent_map, 1, function() end, {chunk = 0})
            raises("bad argument #3 to 'concurrent_map' (option 'chunk': integer expected, got string)",
                dispatch.concurrent_map, 1, function() end, {chunk = "2"})
            raises("bad argument #3 to 'concurrent_map' (table expected, got number)",
                dispatch.concurrent_map, 1, function() end, 5)
            """)
    }

    func testNoStateLeaksBetweenCallerAndWorkers() {
        lua("""
            local t = {x = 1}
            local r = dispatch.concurrent_map(8, function(i) t.x = i; t[i] = true; leaked = i; return t.x end)
            assert(r[8] == 8 and t.x == 1 and t[1] == nil, "worker changes to copies are not seen")
            assert(leaked == nil, "worker globals are not the caller's")
            callerGlobal = 42
            local seen = dispatch.concurrent_map(2, function() return callerGlobal end)
            assert(seen[1] == nil, "caller globals are not copied")
            -- each task starts with fresh globals; iterations of one task share them
            local prev = dispatch.concurrent_map(8, function(i) local p = last; last = i; return p end, {chunk = 1})
            for i = 1, 8 do assert(prev[i] == nil) end
            prev = dispatch.concurrent_map(8, function(i) local p = last; last = i; return p end, {chunk = 2})
            for i = 1, 8, 2 do assert(prev[i] == nil and prev[i + 1] == i) end
            local again = dispatch.concurrent_map(8, function() return last end, {chunk = 1})
            assert(next(again) == nil, "nothing survives into the next call")
            local viaLoad = dispatch.concurrent_map(4, function(i)
                local before = loadedGlobal
                load("loadedGlobal = ...")(i)
                return before == nil and loadedGlobal == i
            end, {chunk = 1})
            for i = 1, 4 do assert(viaLoad[i]) end
            """)
    }

    func testTheLockIsReleasedWhileWorkersRun() {
        lua("""
            local q = dispatch.queue("side")
            local ran = false
            q:async(function() ran = true end)
            local t0 = dispatch.now()
            dispatch.concurrent_map(2, function() dispatch.sleep(0.5) end, {chunk = 1})
            local elapsed = dispatch.now() - t0
            assert(ran, "a block ran on the shared interpreter meanwhile")
            assert(elapsed < 0.95, "two 0.5 s iterations overlapped (took " .. elapsed .. " s)")
            """)
    }

    private final class WeakWorkers: @unchecked Sendable {
        let lock = NSLock()
        var workers: [() -> WorkerInterpreter?] = []
        var values: [Int] = []
        let started = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        var fn = CopiedGraph()
    }

    func testWorkerInterpretersAreClosedWhenTheirThreadsExit() {
        // The graph of `function(i) return i * 2 end`, copied as concurrent_map does.
        let rt = TestRuntimes.make()
        rt.acquire()
        let L = rt.L
        let code = "return function(i) return i * 2 end"
        XCTAssertEqual(ld_loadbuffer(L, code, code.utf8.count, "=test"), LUA_OK)
        XCTAssertEqual(ld_pcall(L, 0, 1, 0), LUA_OK)
        var copier = ValueCopier(L, cacheBytecode: true)
        XCTAssertNoThrow(try copier.root(1))
        let shared = WeakWorkers()
        shared.fn = copier.graph
        lua_settop(L, 0)
        rt.release()

        let count = 3
        var threads: [pthread_t] = []
        for _ in 0..<count {
            var thread = pthread_t()
            let context = Unmanaged.passRetained(shared).toOpaque()
            XCTAssertEqual(pthread_create(&thread, nil, { context in
                let shared = Unmanaged<WeakWorkers>.fromOpaque(context!).takeRetainedValue()
                let worker = WorkerInterpreter.current(libraries: .all)
                let result = worker.run(shared.fn, 1...2)
                shared.lock.lock()
                shared.workers.append { [weak worker] in worker }
                if case .integer(let v) = result.values.roots[1] { shared.values.append(Int(v)) }
                shared.lock.unlock()
                shared.started.signal()
                shared.finish.wait()
                return nil
            }, context), 0)
            threads.append(thread)
        }
        for _ in 0..<count { shared.started.wait() }
        let during = WorkerInterpreter.live.load(ordering: .relaxed)
        XCTAssertEqual(shared.values, Array(repeating: 4, count: count))
        XCTAssertEqual(shared.workers.compactMap { $0() }.count, count)
        for _ in 0..<count { shared.finish.signal() }
        for thread in threads { pthread_join(thread, nil) }
        XCTAssertEqual(shared.workers.compactMap { $0() }.count, 0, "every worker was released at thread exit")
        XCTAssertGreaterThanOrEqual(during - WorkerInterpreter.live.load(ordering: .relaxed), count)
    }

    /// Dispatch's pool threads exit after about 5 s idle; their workers must go with them.
    func testDispatchPoolWorkersAreClosedAfterTheirThreadsIdleOut() throws {
        lua("""
            dispatch.concurrent_map(16, function()
                local s = 0
                for k = 1, 1e6 do s = s + k end
                return s
            end, {chunk = 1})
            """)
        let after = WorkerInterpreter.live.load(ordering: .relaxed)
        // The calling thread keeps its worker; with one in all, no pool thread took a task.
        try XCTSkipIf(after <= 1, "no Dispatch pool thread ran a task")
        let deadline = DispatchTime.now() + 60
        while WorkerInterpreter.live.load(ordering: .relaxed) >= after && DispatchTime.now() < deadline {
            usleep(100_000)
        }
        XCTAssertLessThan(WorkerInterpreter.live.load(ordering: .relaxed), after)
    }
}
