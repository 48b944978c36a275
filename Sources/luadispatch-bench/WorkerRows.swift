import Foundation

/// Worker pools and channels (scripts/benchmarks/workers.lua through the CLI) against what a
/// user would compare them with: luv's `uv.new_work` under stock lua5.4, the same pool running
/// the jobs one after the other, and a native Swift program passing the same values.
enum WorkerRows {
    static let rows: [Row] = [jobs, parallelJobs, channel]

    static func script() throws -> String { try Locations.repositoryFile("scripts/benchmarks/workers.lua") }

    /// N small jobs (`x * 2`), each result back through a callback: `pool:submit(...):notify`
    /// on a serial queue against `uv.new_work` under lua5.4 (Debian's lua-luv), in turn.
    static let jobs = Row(
        name: "jobs_small", unit: "jobs/s", baselineName: "luv uv.new_work, lua5.4", better: .higher,
        target: ">= 1.0x luv", meets: { _, _, r in r >= 1.0 }
    ) { scale in
        let n = max(5000, Int(100_000 * scale))
        let luv = try Locations.repositoryFile("scripts/benchmarks/luv_jobs.lua")
        let r = try CLIRows.inTurn(lua: { try CLIRows.output([ProcessRows.cli, "run", try script(), "jobs", "\(n)"]) },
                                   native: { try CLIRows.output(["/usr/bin/lua5.4", luv, "\(n)"]) })
        return Measurement(lua: r.lua[0], baseline: r.native[0],
                           notes: "\(n) jobs; default pool (\(ProcessInfo.processInfo.activeProcessorCount) workers) against luv's pool (4 threads)")
    }

    /// Two equal CPU-bound jobs on two workers against the same two one after the other, best
    /// of alternating rounds in one process.
    static let parallelJobs = Row(
        name: "jobs_parallel", unit: "x speedup (serial/parallel)", baselineName: "one after the other", better: .higher,
        target: ">= 1.8x (2 cores)", meets: { s, _, _ in s >= 1.8 }
    ) { scale in
        let limit = max(20_000, Int(600_000 * scale))
        let xs = try CLIRows.output([ProcessRows.cli, "run", try script(), "parallel", "\(limit)", "3"])
        guard xs.count == 2 else { throw BenchError("workers.lua parallel printed \(xs)") }
        return Measurement(lua: xs[0] / xs[1], baseline: 1,
                           notes: String(format: "two jobs counting primes below %d: one after the other %.0f ms, on two workers %.0f ms",
                                         limit, xs[0], xs[1]))
    }

    /// Integers from one worker to another through a channel, against a native program passing
    /// them through a buffer guarded by a serial DispatchQueue; reported.
    static let channel = Row(
        name: "channel_throughput", unit: "messages/s", baselineName: "native -O, DispatchQueue-guarded buffer",
        better: .higher, target: "report", meets: { _, _, _ in true }
    ) { scale in
        let n = max(10_000, Int(500_000 * scale))
        let r = try CLIRows.inTurn(lua: { try CLIRows.output([ProcessRows.cli, "run", try script(), "channel", "\(n)"]) },
                                   native: { try CLIRows.output([CLIRows.native, "channel", "\(n)"]) })
        return Measurement(lua: r.lua[0], baseline: r.native[0], notes: "\(n) integers between two workers")
    }
}
