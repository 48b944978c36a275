import Dispatch
import Foundation
import Synchronization

/// Diagnostics: the queue rows measured inside this process, the Lua side in a `Runtime` (the
/// library path, without the CLI) and the native side as closures in this same process. The
/// rows a user would measure are in `CLIRows`; comparing the two shows what the CLI path and a
/// standalone program change.
enum CoreRows {
    static let rows: [Row] = [asyncSerial, asyncConcurrent, syncRoundTrip, performOverhead, pendingMemory]

    final class Counter: @unchecked Sendable { var n = 0 }

    /// 1,000,000 closures onto a serial queue, then one sync.
    static let asyncSerial = Row(
        name: "inproc_async_serial", unit: "blocks/s", baselineName: "native in process", better: .higher,
        target: "diagnostic", meets: { _, _, _ in true }
    ) { scale in
        let n = max(1000, Int(1_000_000 * scale))
        let lua = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local q, n = dispatch.queue("bench.serial"), 0
            local t0 = dispatch.now()
            for i = 1, \(n) do q:async(function() n = n + 1 end) end
            q:sync(function() end)
            local t = dispatch.now() - t0
            assert(n == \(n))
            bench.report(\(n) / t)
            """)[0]
        let q = DispatchQueue(label: "bench.serial.native")
        let c = Counter()
        let t = timed {
            for _ in 0..<n { q.async { c.n += 1 } }
            q.sync {}
        }
        precondition(c.n == n)
        return Measurement(lua: lua, baseline: Double(n) / t)
    }

    /// The same onto a concurrent queue, then a barrier sync.
    static let asyncConcurrent = Row(
        name: "inproc_async_concurrent", unit: "blocks/s", baselineName: "native in process", better: .higher,
        target: "diagnostic", meets: { _, _, _ in true }
    ) { scale in
        let n = max(1000, Int(1_000_000 * scale))
        let lua = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local q, n = dispatch.queue{label = "bench.concurrent", concurrent = true}, 0
            local t0 = dispatch.now()
            for i = 1, \(n) do q:async(function() n = n + 1 end) end
            q:barrier_sync(function() end)
            local t = dispatch.now() - t0
            assert(n <= \(n))   -- blocks may interleave: a switch inside n = n + 1 loses one (core.lua)
            bench.report(\(n) / t)
            """)[0]
        let q = DispatchQueue(label: "bench.concurrent.native", attributes: .concurrent)
        let count = Atomic<Int>(0)
        let t = timed {
            for _ in 0..<n { q.async { count.wrappingAdd(1, ordering: .relaxed) } }
            q.sync(flags: .barrier) {}
        }
        precondition(count.load(ordering: .relaxed) == n)
        return Measurement(lua: lua, baseline: Double(n) / t)
    }

    /// An uncontended `sync` of an empty block on a serial queue.
    static let syncRoundTrip = Row(
        name: "inproc_sync_round_trip", unit: "ns/call", baselineName: "native in process", better: .lower,
        target: "diagnostic", meets: { _, _, _ in true }
    ) { scale in
        let n = max(1000, Int(200_000 * scale))
        let lua = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local q = dispatch.queue("bench.sync")
            local f = function() end
            local t0 = dispatch.now()
            for i = 1, \(n) do q:sync(f) end
            bench.report((dispatch.now() - t0) / \(n) * 1e9)
            """)[0]
        let q = DispatchQueue(label: "bench.sync.native")
        let c = Counter()
        let t = timed { for _ in 0..<n { q.sync { c.n += 1 } } }
        return Measurement(lua: lua, baseline: t / Double(n) * 1e9)
    }

    /// `concurrent_perform` of an empty body: cost per iteration.
    static let performOverhead = Row(
        name: "inproc_perform_overhead", unit: "ns/iteration", baselineName: "native in process", better: .lower,
        target: "diagnostic", meets: { _, _, _ in true }
    ) { scale in
        let n = max(1000, Int(200_000 * scale))
        let lua = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local sum = 0
            local t0 = dispatch.now()
            dispatch.concurrent_perform(\(n), function(i) sum = sum + i end)
            bench.report((dispatch.now() - t0) / \(n) * 1e9)
            """)[0]
        let sum = Atomic<Int>(0)
        let t = timed { DispatchQueue.concurrentPerform(iterations: n) { sum.wrappingAdd($0, ordering: .relaxed) } }
        return Measurement(lua: lua, baseline: t / Double(n) * 1e9)
    }

    /// Resident memory per block pending on a suspended queue.
    static let pendingMemory = Row(
        name: "inproc_pending_block_memory", unit: "bytes/block", baselineName: "native in process", better: .lower,
        target: "diagnostic", meets: { _, _, _ in true }
    ) { scale in
        let n = max(10_000, Int(500_000 * scale))
        let lua = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local q, n = dispatch.queue("bench.pending"), 0
            q:suspend()
            collectgarbage(); collectgarbage()
            local before = bench.heap()
            for i = 1, \(n) do q:async(function() n = n + 1 end) end
            collectgarbage(); collectgarbage()
            bench.report((bench.heap() - before) / \(n))
            q:resume()
            """)[0]
        let q = DispatchQueue(label: "bench.pending.native")
        let c = Counter()
        q.suspend()
        let before = Memory.heap()
        for _ in 0..<n { q.async { c.n += 1 } }
        let native = Double(Memory.heap() - before) / Double(n)
        q.resume()
        q.sync {}
        return Measurement(lua: lua, baseline: native)
    }
}

enum Rows {
    static var all: [Row] {
        CLIRows.rows + ParallelRows.rows + WorkerRows.rows + IORows.rows + NetRows.rows + ServerRows.rows + ProcessRows.rows + TaskRows.rows + CoreRows.rows + EmbedRows.rows
            + TraceRows.rows + SwitchingRows.rows + BeforeRows.rows + LimitsRows.rows
    }
}
