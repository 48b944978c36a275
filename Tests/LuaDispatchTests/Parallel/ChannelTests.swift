import Foundation
import XCTest
@testable import LuaDispatch

/// `dispatch.channel`: a queue of copied values shared by every interpreter.
final class ChannelTests: XCTestCase {
    func testValuesComeOutInOrderAsCopies() {
        let run = runLua("""
            local ch = dispatch.channel{}
            t.record(tostring(ch):match("^dispatch%.channel #%d+ %(0 queued%)$") ~= nil, #ch)
            local shared = {1}
            local tbl = {a = shared, b = shared, f = function(x) return x + 1 end}
            tbl.self = tbl
            for _, v in ipairs({1, 2.5, "three", true, false}) do assert(ch:send(v)) end
            ch:send(tbl)
            t.record(#ch, tostring(ch):match("%((%d+) queued"))
            for i = 1, 5 do t.record(ch:receive()) end
            local copy = ch:receive()
            t.record(copy ~= tbl, copy.a == copy.b, copy.self == copy, copy.f(1), math.type(2.5))
            t.record(ch:receive(0))
            t.record(ch:close(), ch:close(), tostring(ch):match("closed") ~= nil)
            t.record(ch:send(1))
            t.record(ch:receive())
            """, timeout: 10)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, 0])
        XCTAssertEqual(run.records[1], [6, "6"])
        XCTAssertEqual(run.records[2...6].map { $0 }, [[1], [2.5], ["three"], [true], [false]])
        XCTAssertEqual(run.records[7], [true, true, true, 2, "float"])
        XCTAssertEqual(run.records[8], [.nil, "timeout"])
        XCTAssertEqual(run.records[9], [true, false, true])
        XCTAssertEqual(run.records[10], [false, "closed"])
        XCTAssertEqual(run.records[11], [.nil, "closed"])
    }

    /// A bounded channel makes senders wait for room; capacity 0 hands each value to a receiver;
    /// close ends the waits of senders and receivers; values sent before close are received.
    func testCapacityTimeoutsAndClose() {
        let run = runLua("""
            local ch = dispatch.channel{capacity = 2}
            t.record(ch:send(1), ch:send(2), ch:send(3, 0.05))
            local q = dispatch.queue("taker", {concurrent = true})
            local t0 = dispatch.now()
            q:after(0.1, function() ch:receive() end)
            t.record(ch:send(3), dispatch.now() - t0 >= 0.05, #ch)
            local zero = dispatch.channel{capacity = 0}
            t.record(zero:send("x", 0.02))
            q:after(0.05, function() t.record("got", zero:receive()) end)
            t.record(zero:send("handed"), #zero)
            -- close wakes a waiting receiver and a waiting sender
            local empty, full = dispatch.channel{}, dispatch.channel{capacity = 0}
            local g = dispatch.group()
            g:enter(); q:async(function() t.record("receiver", empty:receive()); g:leave() end)
            g:enter(); q:async(function() t.record("sender", full:send(1)); g:leave() end)
            dispatch.sleep(0.1)
            empty:close(); full:close()
            g:wait()
            ch:close()
            t.record(ch:receive(), ch:receive(), ch:receive())
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, true, false, "timeout"])
        XCTAssertEqual(run.records[1], [true, true, 2])
        XCTAssertEqual(run.records[2], [false, "timeout"])
        XCTAssertEqual(Set(run.records[3...4].map { "\($0)" }), ["[\"got\", \"handed\"]", "[true, 0]"])
        XCTAssertEqual(Set(run.records[5...6].map { "\($0)" }), ["[\"receiver\", nil, \"closed\"]", "[\"sender\", false, \"closed\"]"])
        XCTAssertEqual(run.records[7], [2, 3, .nil, "closed"])
    }

    /// A channel passed to a worker (argument or upvalue) or a `concurrent_map` body arrives as
    /// the same channel; one made in a worker comes back as a channel; round trips give the
    /// same userdata.
    func testAChannelIsTheSameInEveryInterpreter() {
        let run = runLua("""
            local pool = dispatch.workers{count = 2}
            local ch = dispatch.channel{}
            local job = pool:submit(function(a, b)
              a:send("from worker")
              return a == b, a == ch, ch, dispatch.channel{capacity = 3}
            end, ch, ch)
            local ok, same, upvalue, back, made = job:wait()
            t.record(same, upvalue, back == ch, ch:receive(), tostring(made):match("capacity 3") ~= nil)
            made:send("into the made one")
            t.record(select(2, pool:submit(function(m) return m:receive() end, made):wait()))
            dispatch.concurrent_map(4, function(i) ch:send(i * 10) end)
            local sum = 0
            for i = 1, 4 do sum = sum + ch:receive() end
            t.record(sum)
            pool:close()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, true, true, "from worker", true])
        XCTAssertEqual(run.records[1], ["into the made one"])
        XCTAssertEqual(run.records[2], [100])
    }

    /// Waits inside a worker block only that worker: another worker of the pool keeps running
    /// jobs, and `dispatch.sleep` works there too. A pipeline of workers connected by channels.
    func testWorkersWaitOnChannelsWithoutBlockingOthers() {
        let run = runLua("""
            local pool = dispatch.workers{count = 3}
            local source, squares = dispatch.channel{capacity = 4}, dispatch.channel{capacity = 4}
            local producer = pool:submit(function(out)
              for i = 1, 100 do out:send(i) end
              out:close()
            end, source)
            local stage = pool:submit(function(input, out)
              while true do
                local v = input:receive()
                if v == nil then break end
                out:send(v * v)
              end
              out:close()
            end, source, squares)
            local sum = 0
            for v in function() return squares:receive() end do sum = sum + v end
            producer:wait(); stage:wait()
            -- one worker blocked in receive; the others still run jobs
            local idle = dispatch.channel{}
            local blocked = pool:submit(function(c) return c:receive() end, idle)
            local slept = pool:submit(function() dispatch.sleep(0.05); return "slept" end)
            t.record(sum, select(2, slept:wait()), blocked:wait(0.01))
            idle:close()
            t.record(blocked:wait())
            pool:close()
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], [338350, "slept", false, "timeout"])
        XCTAssertEqual(run.records[1], [true, .nil, "closed"])
    }

    /// In a task, `send` and `receive` suspend the task instead of holding a thread.
    func testTasksSuspendOnChannels() {
        let run = runLua("""
            local function threads()
              local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
              return tonumber(s:match("Threads:%s*(%d+)"))
            end
            local before = threads()
            local inbox, outbox = dispatch.channel{}, dispatch.channel{capacity = 0}
            local tasks = {}
            for i = 1, 300 do
              tasks[i] = dispatch.task(function()
                local v = inbox:receive()
                assert(dispatch.in_task())
                outbox:send(v + 1)
              end)
            end
            dispatch.sleep(0.3)
            local during = threads()
            for i = 1, 300 do inbox:send(i) end
            local sum = 0
            for i = 1, 300 do sum = sum + outbox:receive() end
            for i = 1, 300 do tasks[i]:wait() end
            t.record(sum, during - before < 16)
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records[0], [45450, true])
    }

    /// Timeouts racing with hand-offs: every value sent is received exactly once, by workers
    /// and tasks receiving with tiny timeouts from a channel of capacity 1 whose senders time
    /// out too (and send again).
    func testTimeoutsNeverLoseOrDuplicateAValue() {
        let run = runLua("""
            local pool = dispatch.workers{count = 3}
            local ch = dispatch.channel{capacity = 1}
            local function consume(c)
              local count, sum = 0, 0
              while true do
                local v, why = c:receive(0.0002)
                if why == "closed" then break end
                if v then count, sum = count + 1, sum + v end
              end
              return count, sum
            end
            local jobs = {}
            for i = 1, 3 do jobs[i] = pool:submit(consume, ch) end
            local task = dispatch.task(function() return consume(ch) end)
            local n = 5000
            for i = 1, n do
              while not ch:send(i, 0.0001) do end
            end
            ch:close()
            local count, sum = 0, 0
            for i = 1, 3 do
              local _, c, s = jobs[i]:wait()
              count, sum = count + c, sum + s
            end
            local _, c, s = task:wait()
            t.record(count + c, sum + s == n * (n + 1) // 2)
            pool:close()
            """, timeout: 60)
        assertClean(run)
        XCTAssertEqual(run.records.first, [5000, true])
    }

    func testBadInputRaisesClearErrors() {
        let run = runLua("""
            local function err(f, ...)
              local ok, e = pcall(f, ...)
              assert(not ok, "no error")
              t.record(e)
            end
            local ch = dispatch.channel{}
            err(ch.send, ch, nil)
            err(ch.send, ch)
            err(ch.send, ch, 1, -0.5)
            err(ch.receive, ch, -1)
            err(ch.send, ch, {co = coroutine.create(print)})
            err(ch.send, ch, dispatch.queue("q"))
            err(dispatch.channel, {capacity = -1})
            err(dispatch.channel, {capacity = "big"})
            err(dispatch.channel, {size = 1})
            err(dispatch.channel, 3)
            err(ch.receive, {})
            t.record(#ch)
            """, timeout: 10)
        assertClean(run)
        XCTAssertEqual(run.strings, [
            "bad argument #2 to 'send' (nil cannot be sent on a channel)",
            "bad argument #2 to 'send' (value expected)",
            "bad argument #3 to 'send' (timeout must be >= 0, got -0.5)",
            "bad argument #2 to 'receive' (timeout must be >= 0, got -1)",
            "bad argument #2 to 'send' (a coroutine cannot be copied to a channel (at value.co))",
            "bad argument #2 to 'send' (a userdata (dispatch.queue) cannot be copied to a channel)",
            "bad argument #1 to 'channel' (option 'capacity' must be >= 0, got -1)",
            "bad argument #1 to 'channel' (option 'capacity': integer expected, got string)",
            "bad argument #1 to 'channel' (unknown option 'size')",
            "bad argument #1 to 'channel' (table expected, got number)",
            "bad argument #1 to 'receive' (dispatch.channel expected, got table)",
        ])
        XCTAssertEqual(run.records.last, [0])
    }

    /// A channel collected with values queued, or while a worker still holds it, loses nothing
    /// anyone waits for; `<close>` closes it.
    func testCollectedChannelsAndScopedOnes() {
        let run = runLua("""
            do
              local lost = dispatch.channel{}
              for i = 1, 100 do lost:send({i}) end
            end
            collectgarbage(); collectgarbage()
            local pool = dispatch.workers{count = 1}
            local job
            do
              local ch = dispatch.channel{}
              job = pool:submit(function(c) dispatch.sleep(0.1); return c:receive() end, ch)
              ch:send("still there")
            end
            collectgarbage(); collectgarbage()
            t.record(job:wait())
            local outer
            do
              local scoped <close> = dispatch.channel{}
              outer = scoped
            end
            t.record(outer:send(1))
            pool:close()
            """, timeout: 20)
        assertClean(run)
        XCTAssertEqual(run.records[0], [true, "still there"])
        XCTAssertEqual(run.records[1], [false, "closed"])
    }

    /// `ch:receive` on the main thread parks there, so that Ctrl-C ends it.
    func testAMainThreadReceiveIsInterruptible() {
        assertMainThreadWaitIsInterrupted("dispatch.channel{}:receive()", in: "receive")
    }
}
