import Foundation

/// Parallel CPU-bound Lua with `concurrent_map` against the same work in a serial Lua loop.
enum ParallelRows {
    static let rows: [Row] = [primes]

    static let primes = Row(
        name: "concurrent_map_primes", unit: "x speedup (serial/parallel)", baselineName: "serial Lua loop",
        better: .higher, target: ">= 1.85x (limit: cores)",
        meets: { speedup, _, _ in speedup >= 1.85 }
    ) { scale in
        let limit = max(20_000, Int(2_000_000 * scale))
        let figures = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local limit, parts = \(limit), 8
            local function count(lo, hi)
              local n = 0
              for k = math.max(lo, 2), hi do
                local prime, d = true, 2
                while d * d <= k do
                  if k % d == 0 then prime = false; break end
                  d = d + 1
                end
                if prime then n = n + 1 end
              end
              return n
            end
            local function range(part)
              local size = (limit - 1) // parts + 1
              local lo = (part - 1) * size
              return lo, math.min(lo + size - 1, limit - 1)
            end
            local t0 = dispatch.now()
            local serial = 0
            for part = 1, parts do serial = serial + count(range(part)) end
            local t1 = dispatch.now()
            local results = dispatch.concurrent_map(parts, function(part) return count(range(part)) end, {chunk = 1})
            local t2 = dispatch.now()
            local parallel = 0
            for _, n in ipairs(results) do parallel = parallel + n end
            assert(serial == parallel)
            bench.report(t1 - t0, t2 - t1)
            """)
        let serial = figures[0], parallel = figures[1]
        return Measurement(lua: serial / parallel, baseline: 1,
                           notes: String(format: "primes below %d in 8 chunks: serial %.0f ms, concurrent_map %.0f ms; %d cores",
                                         limit, serial * 1000, parallel * 1000, ProcessInfo.processInfo.activeProcessorCount))
    }
}
