import Foundation

/// `--before PATH`: the queue rows and concurrent_map_primes measured with this build's CLI and
/// with another `luadispatch` binary (an earlier release build, say), the same scripts in turn,
/// to show what a change of the runtime costs them. Listed only when a binary is given.
enum BeforeRows {
    nonisolated(unsafe) static var cli: String?

    static var rows: [Row] {
        cli == nil ? [] : [queueRow("async_serial", unit: "blocks/s", better: .higher, size: 1_000_000),
                           queueRow("async_concurrent", unit: "blocks/s", better: .higher, size: 1_000_000),
                           queueRow("sync_round_trip", unit: "ns/call", better: .lower, size: 200_000),
                           primes]
    }

    /// Within 3% of the other binary's figure, whichever way is better.
    static func within3(_ better: Row.Better) -> @Sendable (Double, Double, Double) -> Bool {
        { _, _, ratio in better == .higher ? ratio >= 0.97 : ratio <= 1.03 }
    }

    static func queueRow(_ mode: String, unit: String, better: Row.Better, size: Int) -> Row {
        Row(name: "before_" + mode, unit: unit, baselineName: "before", better: better,
            target: better == .higher ? ">= 0.97x before" : "<= 1.03x before", meets: within3(better)) { scale in
            let n = max(1000, Int(Double(size) * scale))
            let r = try CLIRows.inTurn(lua: { try CLIRows.core(ProcessRows.cli, mode, n) },
                                       native: { try CLIRows.core(cli!, mode, n) })
            return Measurement(lua: r.lua[0], baseline: r.native[0])
        }
    }

    /// The speedup, and concurrent_map's own time (aux: this build's over the other's).
    static let primes = Row(
        name: "before_concurrent_map_primes", unit: "x speedup", baselineName: "before", better: .higher,
        target: ">= 0.97x before", meets: within3(.higher),
        auxName: "concurrent_map time", auxMeets: { $0 <= 1.03 }
    ) { scale in
        let limit = max(20_000, Int(2_000_000 * scale))
        let r = try CLIRows.inTurn(lua: { try ParallelRows.run(ProcessRows.cli, limit: limit) },
                                   native: { try ParallelRows.run(cli!, limit: limit) })
        return Measurement(lua: r.lua.serial / r.lua.parallel, baseline: r.native.serial / r.native.parallel,
                           aux: r.lua.parallel / r.native.parallel,
                           notes: String(format: "serial %.0f ms vs %.0f ms, concurrent_map %.0f ms vs %.0f ms",
                                         r.lua.serial, r.native.serial, r.lua.parallel, r.native.parallel))
    }
}
