import Foundation

/// Tracing's cost: async_serial recorded against the same run unrecorded. (Tracing off against
/// the runtime before tracing existed needs two builds: `scripts/bench-trace-off`.)
enum TraceRows {
    static let rows: [Row] = [traceOn]

    static func asyncSerial(_ n: Int, tracing: Bool) throws -> Double {
        try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local q, n = dispatch.queue("bench.serial"), 0
            local t0 = dispatch.now()
            for i = 1, \(n) do q:async(function() n = n + 1 end) end
            q:sync(function() end)
            local t = dispatch.now() - t0
            assert(n == \(n))
            bench.report(\(n) / t)
            """, tracing: tracing, traceLimit: 3 * n + 1000)[0]  // every event kept: nothing dropped
    }

    /// 200,000 closures onto a serial queue with every block, flow and lock wait recorded.
    static let traceOn = Row(
        name: "trace_on", unit: "blocks/s", baselineName: "untraced", better: .higher,
        target: ">= 0.5x untraced", meets: { _, _, r in r >= 0.5 }
    ) { scale in
        let n = max(1000, Int(200_000 * scale))
        let untraced = try asyncSerial(n, tracing: false)
        let traced = try asyncSerial(n, tracing: true)
        return Measurement(lua: traced, baseline: untraced)
    }
}
