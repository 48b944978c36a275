import Foundation

/// Parallel CPU-bound Lua with `concurrent_map` against the same work in a serial Lua loop.
enum ParallelRows {
    static let rows: [Row] = [primes, inprocPrimes]

    /// `luadispatch run scripts/benchmarks/primes.lua LIMIT 8 1 16`: one serial loop and one
    /// concurrent_map in the same process, through the CLI; 8 parts of 16 interleaved slices
    /// each, so that the parts cost about the same (docs/performance.md).
    static let primes = Row(
        name: "concurrent_map_primes", unit: "x speedup (serial/parallel)", baselineName: "serial Lua loop",
        better: .higher, target: ">= 1.9x (limit: cores)",
        meets: { speedup, _, _ in speedup >= 1.9 }
    ) { scale in
        let limit = max(20_000, Int(2_000_000 * scale))
        let script = try Locations.repositoryFile("scripts/benchmarks/primes.lua")
        let out = NSTemporaryDirectory() + "luadispatch-bench-\(getpid())-primes.out"
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try ProcessRows.measure([ProcessRows.cli, "run", script, "\(limit)", "8", "1", "16"], stdout: out, sample: false)
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        func ms(_ prefix: String) throws -> Double {
            guard let line = lines.first(where: { $0.hasPrefix(prefix) }),
                  let x = TaskRows.numbers(String(line)).first else { throw BenchError("primes.lua printed no '\(prefix)' line") }
            return x
        }
        let serial = try ms("serial:"), parallel = try ms("concurrent_map:")
        return Measurement(lua: serial / parallel, baseline: 1,
                           notes: String(format: "primes below %d in 8 interleaved parts: serial %.0f ms, concurrent_map %.0f ms; %d cores",
                                         limit, serial, parallel, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// Diagnostic: the same in an interpreter inside this process (the library path).
    static let inprocPrimes = Row(
        name: "inproc_concurrent_map_primes", unit: "x speedup (serial/parallel)", baselineName: "serial Lua loop",
        better: .higher, target: "diagnostic", meets: { _, _, _ in true }
    ) { scale in
        let limit = max(20_000, Int(2_000_000 * scale))
        let figures = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local limit, parts, slices = \(limit), 8, 16
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
            local function countPart(part)  -- as in scripts/benchmarks/primes.lua
              local n, all = 0, parts * slices
              local size = (limit - 1) // all + 1
              for s = part - 1, all - 1, parts do
                local lo = s * size
                if lo < limit then n = n + count(lo, math.min(lo + size - 1, limit - 1)) end
              end
              return n
            end
            local t0 = dispatch.now()
            local serial = 0
            for part = 1, parts do serial = serial + countPart(part) end
            local t1 = dispatch.now()
            local results = dispatch.concurrent_map(parts, function(part) return countPart(part) end, {chunk = 1})
            local t2 = dispatch.now()
            local parallel = 0
            for _, n in ipairs(results) do parallel = parallel + n end
            assert(serial == parallel)
            bench.report(t1 - t0, t2 - t1)
            """)
        let serial = figures[0], parallel = figures[1]
        return Measurement(lua: serial / parallel, baseline: 1,
                           notes: String(format: "primes below %d in 8 interleaved parts: serial %.0f ms, concurrent_map %.0f ms; %d cores",
                                         limit, serial * 1000, parallel * 1000, ProcessInfo.processInfo.activeProcessorCount))
    }
}
