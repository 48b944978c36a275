import XCTest
@testable import LuaDispatch

/// `dispatch.workers`: pools of long-lived worker interpreters, jobs and their results.
final class WorkerPoolTests: XCTestCase {
    func testJobsRunInWorkersAndTheirResultsComeBack() {
        let run = runLua("""
            local pool = dispatch.workers{count = 2}
            t.record(pool.count, tostring(pool):match("^dispatch%.pool #%d+ %(2 workers") ~= nil)
            local job = pool:submit(function(a, b, t) return a + b, nil, t.name, #t.list end, 1, 2, {name = "n", list = {1, 2, 3}})
            t.record(job:wait())
            t.record(tostring(job):match("^dispatch%.job #%d+ %((%a+)"))
            -- the main interpreter's thread is not the worker's
            local main = dispatch.thread().number
            t.record(select(2, pool:submit(function() return dispatch.thread().number end):wait()) ~= main)
            -- sharing and cycles survive both ways; functions come back callable
            local shared = {}
            local cfg = {a = shared, b = shared}
            cfg.self = cfg
            local ok, r = pool:submit(function(c)
              local out = {same = c.a == c.b and c.self == c, f = function(x) return x * 3 end}
              out.me = out
              return out
            end, cfg):wait()
            t.record(r.same, r.me == r, r.f(5), r == cfg)
            pool:close()
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], [2, true])
        XCTAssertEqual(run.records[1], [true, 3, .nil, "n", 3])
        XCTAssertEqual(run.records[2], ["done"])
        XCTAssertEqual(run.records[3], [true])
        XCTAssertEqual(run.records[4], [true, true, 15, false])
    }

    /// Identity and shared upvalue variables survive across the function and its arguments,
    /// however many tables they hold.
    func testSharingAcrossTheFunctionAndItsArguments() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local n = 5
            local function step(get) n = n + 1; return get() end
            local function get() return n end
            local function same(a, b) return a == b, a() end
            local many = {}
            for i = 1, 20 do many[i] = {i} end
            many.again = many[3]
            local function big(t) return #t, t.again == t[3], t[20][1] end
            t.record(select(2, pool:submit(step, get):wait()))
            t.record(select(2, pool:submit(same, get, get):wait()))
            t.record(select(2, pool:submit(big, many):wait()))
            t.record(n)
            pool:close()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records, [[6], [true, 5], [20, true, 20], [5]])
    }

    /// Jobs of every shape give the same results: plain ones (a function whose only upvalue
    /// is the globals, with nil, boolean and number arguments) and the rest.
    func testEveryShapeOfJobGivesItsResults() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local function all(...) return select("#", ...), ... end
            local function types(...)
              local out = {}
              for i = 1, select("#", ...) do out[i] = math.type((select(i, ...))) or type((select(i, ...))) end
              return table.concat(out, ",")
            end
            t.record(select(2, pool:submit(all, 1, 2.5, true, nil, 5, false):wait()))
            t.record(select(2, pool:submit(types, 1, 2.0, 3, nil):wait()))
            t.record(select(2, pool:submit(all, "text", 1):wait()))
            t.record(select(2, pool:submit(function(x) return {x}, "s" .. x end, 7):wait())[1])
            t.record(select(3, pool:submit(function(x) return {x}, "s" .. x end, 7):wait()))
            local k = 3
            t.record(select(2, pool:submit(function(x) return x * k end, 5):wait()))
            t.record(pcall(function() return pool:submit(function(x) return x.field end, 1):wait() end))
            pool:close()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [6, 1, 2.5, true, .nil, 5, false])
        XCTAssertEqual(run.records[1], ["integer,float,integer,nil"])
        XCTAssertEqual(run.records[2], [2, "text", 1])
        XCTAssertEqual(run.records[3], [7])
        XCTAssertEqual(run.records[4], ["s7"])
        XCTAssertEqual(run.records[5], [15])
        XCTAssertEqual(run.records[6].first, false)
        XCTAssertTrue(run.records[6][1].stringValue?.contains("attempt to index a number value") ?? false, "\(run.records[6])")
    }

    func testTheDefaultCountIsTheNumberOfActiveProcessors() {
        let run = runLua("local p = dispatch.workers(); t.record(p.count); p:close()", timeout: 10)
        assertClean(run)
        XCTAssertEqual(run.ints, [ProcessInfo.processInfo.activeProcessorCount])
    }

    /// A worker keeps its globals and loaded modules between jobs; `init` runs once per worker.
    func testWorkersKeepTheirStateAndRunInitOnce() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1, init = function()
              inits = (inits or 0) + 1
              package.preload.counter = function() loads = (loads or 0) + 1; return {n = 0} end
            end}
            local last
            for i = 1, 5 do
              last = pool:submit(function()
                local c = require("counter")
                c.n = c.n + 1
                seen = (seen or 0) + 1
                return inits, loads, c.n, seen
              end)
            end
            t.record(select(2, last:wait()))
            -- two workers: init runs in each, once
            local two = dispatch.workers{count = 2, init = function() mark = dispatch.thread().number end}
            local gate = dispatch.channel{}
            local a = two:submit(function(g) g:receive(); return inits, mark ~= nil end, gate)
            local b = two:submit(function(g) g:receive(); return inits, mark ~= nil end, gate)
            gate:send(1); gate:send(2)
            t.record(select(2, a:wait())); t.record(select(2, b:wait()))
            pool:close(); two:close()
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], [1, 1, 5, 5])
        XCTAssertEqual(run.records[1], [.nil, true])
        XCTAssertEqual(run.records[2], [.nil, true])
    }

    /// Errors come back with the worker's traceback; an error in `init` fails every job of
    /// that worker with that error.
    func testErrorsCarryTheWorkersTraceback() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local function deep() error("boom in worker") end
            local job = pool:submit(function() deep() end)
            local ok, err = pcall(job.wait, job)
            t.record(ok, err:match("boom in worker") ~= nil, err:match("stack traceback:") ~= nil,
                     err:match("in upvalue 'deep'") ~= nil or err:match("in function 'deep'") ~= nil or err:match("in local 'deep'") ~= nil)
            local q = dispatch.queue("notified")
            local g = dispatch.group(); g:enter()
            pool:submit(function() error({}) end):notify(q, function(...) t.record(...); g:leave() end)
            g:wait()
            local broken = dispatch.workers{count = 1, init = function() error("init failed here") end}
            for i = 1, 2 do
              local ok2, err2 = pcall(function() return broken:submit(function() return "never" end):wait() end)
              t.record(ok2, err2:match("init failed here") ~= nil)
            end
            pool:close(); broken:close()
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], [false, true, true, true])
        XCTAssertEqual(run.records[1].first, false)
        XCTAssertEqual(run.records[1][1].stringValue, "(error object is a table value)")
        XCTAssertEqual(run.records[2], [false, true])
        XCTAssertEqual(run.records[3], [false, true])
    }

    func testNotifyRunsOnTheQueueWithTheOutcome() {
        let run = runLua("""
            local pool = dispatch.workers{count = 2}
            local q = dispatch.queue("results")
            local g = dispatch.group()
            local function expect(job)
              g:enter()
              job:notify(q, function(...) t.record(dispatch.current_label(), ...); g:leave() end)
            end
            local gate = dispatch.channel{}
            expect(pool:submit(function(x) return x * 2, "two" end, 21))
            g:wait()
            expect(pool:submit(function() error("bad job", 0) end))
            g:wait()
            -- a notify added after the job ended still runs, with the same results
            local done = pool:submit(function() return "late" end)
            done:wait()
            expect(done)
            g:wait()
            pool:close()
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["results", true, 42, "two"])
        XCTAssertEqual(Array(run.records[1].prefix(3)), ["results", false, "bad job"])
        XCTAssertEqual(run.records[2], ["results", true, "late"])
    }

    /// A job that has not started never runs once cancelled; one that runs is not stopped.
    func testCancelStopsOnlyJobsThatHaveNotStarted() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local gate, ran, started = dispatch.channel{}, dispatch.channel{}, dispatch.channel{}
            local first = pool:submit(function(g, s) s:send(true); g:receive(); return "first" end, gate, started)
            local second = pool:submit(function(r) r:send("second ran"); return "second" end, ran)
            started:receive()                      -- the only worker runs `first` now
            t.record(second:cancel(), second:cancel(), first:cancel())
            local q = dispatch.queue("n")
            local g = dispatch.group(); g:enter()
            second:notify(q, function(...) t.record("notify", ...); g:leave() end)
            gate:send(true)
            t.record(first:wait())
            local ok, err = pcall(second.wait, second)
            t.record(ok, err:match("cancelled") ~= nil, tostring(second):match("%((%a+)"))
            g:wait()
            t.record(#ran, ran:receive(0))
            pool:close()
            """, timeout: 30)
        assertClean(run)
        let notified = run.records.filter { $0.first == "notify" }
        let main = run.records.filter { $0.first != "notify" }
        XCTAssertEqual(notified, [["notify", false, "job cancelled before it started"]])
        XCTAssertEqual(main, [[true, false, false], [true, "first"], [false, true, "cancelled"], [0, .nil, "timeout"]])
    }

    /// `close` lets queued and running jobs finish; `submit` afterwards is an error; `<close>`
    /// closes too.
    func testCloseFinishesQueuedJobsThenRefusesNewOnes() {
        let run = runLua("""
            local pool = dispatch.workers{count = 1}
            local gate = dispatch.channel{}
            local jobs = {pool:submit(function(g) return g:receive() end, gate)}
            for i = 2, 4 do jobs[i] = pool:submit(function(x) return x end, i) end
            pool:close()
            gate:send(1)
            for i = 1, 4 do t.record(jobs[i]:wait()) end
            local ok, err = pcall(pool.submit, pool, function() end)
            t.record(ok, err)
            t.record(tostring(pool):match("closed") ~= nil)
            do
              local scoped <close> = dispatch.workers{count = 1}
              t.record(select(2, scoped:submit(function() return "scoped" end):wait()))
              held = scoped
            end
            t.record(pcall(held.submit, held, function() end))
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0..<4].map { $0 }, [[true, 1], [true, 2], [true, 3], [true, 4]])
        XCTAssertEqual(run.records[4][0], false)
        XCTAssertTrue(run.records[4][1].stringValue?.contains("submit on a closed pool") ?? false, "\(run.records[4])")
        XCTAssertEqual(run.records[5], [true])
        XCTAssertEqual(run.records[6], ["scoped"])
        XCTAssertEqual(run.records[7].first, false)
    }

    /// Two CPU-bound jobs on two workers overlap in time, while the main queue keeps running:
    /// workers never hold the main interpreter.
    func testJobsRunInParallelWithoutTheMainInterpreter() {
        let run = runLua("""
            local pool = dispatch.workers{count = 2}
            local function spin(seconds)
              local t0 = dispatch.now()
              local x = 0
              while dispatch.now() - t0 < seconds do x = x + 1 end
              return t0.seconds, dispatch.now().seconds
            end
            local ticks, spans = 0, {}
            local timer = dispatch.source.timer{interval = 0.01, queue = dispatch.main,
                                                handler = function() ticks = ticks + 1 end}
            timer:resume()
            for i = 1, 2 do
              pool:submit(spin, 0.4):notify(dispatch.main, function(ok, t0, t1)
                spans[#spans + 1] = {t0, t1}
                if #spans == 2 then
                  timer:cancel()
                  t.record(spans[1][1] < spans[2][2] and spans[2][1] < spans[1][2], ticks)
                  pool:close()
                end
              end)
            end
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records.first?.first, true, "the two jobs did not overlap: \(run.records)")
        XCTAssertGreaterThan(run.records.first?[1].intValue ?? 0, 5, "the main queue stalled while workers computed")
    }

    /// A worker that finds no job looks again for a while before it sleeps, and only jobs the
    /// looking workers will not take wake another. Jobs submitted in bursts with pauses around
    /// that while (0 to 200 µs), or while the only awake worker is blocked in a job, still all
    /// run: a job queued as a worker stops looking, or while it runs, is never left behind.
    func testNoJobIsLeftBehindAsWorkersLookAndSleep() {
        let run = runLua("""
            local pool = dispatch.workers{count = 2}
            local sum, expected = 0, 0
            local rounds = 400
            for r = 1, rounds do
              local jobs = {}
              for k = 1, r % 4 + 1 do
                jobs[k] = pool:submit(function(x) return x + 1 end, r * 10 + k)
                expected = expected + r * 10 + k + 1
              end
              for _, j in ipairs(jobs) do sum = sum + select(2, j:wait(10)) end
              if r % 3 == 0 then dispatch.sleep((r % 5) * 0.00005) end
            end
            -- One job blocks the worker that took it until a second job, which only the other
            -- worker can run, answers it.
            local ping, pong = dispatch.channel{}, dispatch.channel{}
            local started = dispatch.channel{}
            local blocked = pool:submit(function(a, b, s) s:send(true); a:send("ping"); return b:receive() end, ping, pong, started)
            started:receive()
            local answer = pool:submit(function(a, b) b:send(a:receive() .. "/pong"); return true end, ping, pong)
            t.record(sum == expected, select(2, blocked:wait(10)), select(2, answer:wait(10)))
            pool:close()
            """, timeout: 60)
        assertClean(run)
        XCTAssertEqual(run.records.first, [true, "ping/pong", true])
    }
}
