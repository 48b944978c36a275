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
        let (serial, parallel) = try run(ProcessRows.cli, limit: limit)
        return Measurement(lua: serial / parallel, baseline: 1,
                           notes: String(format: "primes below %d in 8 interleaved parts: serial %.0f ms, concurrent_map %.0f ms; %d cores",
                                         limit, serial, parallel, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// `cli run primes.lua LIMIT 8 1 16`: the serial loop's and concurrent_map's times (ms).
    static func run(_ cli: String, limit: Int) throws -> (serial: Double, parallel: Double) {
        let script = try Locations.repositoryFile("scripts/benchmarks/primes.lua")
        let out = NSTemporaryDirectory() + "luadispatch-bench-\(getpid())-primes.out"
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try ProcessRows.measure([cli, "run", script, "\(limit)", "8", "1", "16"], stdout: out, sample: false)
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        func ms(_ prefix: String) throws -> Double {
            guard let line = lines.first(where: { $0.hasPrefix(prefix) }),
                  let x = TaskRows.numbers(String(line)).first else { throw BenchError("primes.lua printed no '\(prefix)' line") }
            return x
        }
        return (try ms("serial:"), try ms("concurrent_map:"))
    }

    /// Diagnostic: the same in an interpreter inside this process (the library path).
    static let inprocPrimes = Row(
        name: "inproc_concurrent_map_primes", unit: "x speedup (serial/parallel)", baselineName: "serial Lua loop",
        better: .higher, target: "diagnostic", meets: { _, _, _ in true }
    ) { scale in
        let limit = max(20_000, Int(2_000_000 * scale))
        // scripts/benchmarks/primes.lua itself, as the CLI row runs it, with its printed
        // figures (best wall times in ms) collected instead of printed.
        let script = try Locations.repositoryFile("scripts/benchmarks/primes.lua")
        let figures = try LuaBench.run("""
            local bench, lines = require("bench"), {}
            print = function(line) lines[#lines + 1] = line end
            io.write = function() end
            arg = {[0] = [==[\(script)]==], "\(limit)", "8", "1", "16"}
            dofile(arg[0])
            local function ms(prefix)
              for _, line in ipairs(lines) do
                local x = line:match("^" .. prefix .. "%s+(%d+) ms")
                if x then return tonumber(x) end
              end
              error("primes.lua printed no '" .. prefix .. "' line")
            end
            bench.report(ms("serial:"), ms("concurrent_map:"))
            """)
        let serial = figures[0], parallel = figures[1]
        return Measurement(lua: serial / parallel, baseline: 1,
                           notes: String(format: "primes below %d in 8 interleaved parts: serial %.0f ms, concurrent_map %.0f ms; %d cores",
                                         limit, serial, parallel, ProcessInfo.processInfo.activeProcessorCount))
    }
}
