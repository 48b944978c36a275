import Foundation

/// What the memory limit's accounting costs (docs/embedding.md, "Memory and time limits"): the
/// same script through the same CLI with `--memory-limit` (far above what it uses, so only the
/// counting differs) and without, sides in turn.
enum LimitsRows {
    static let rows: [Row] = [asyncSerial, pureLua]

    static let limit = ["--memory-limit", "4G"]

    /// `core.lua async_serial`: blocks per second with the limit against without it.
    static let asyncSerial = Row(
        name: "memory_limit_async_serial", unit: "blocks/s", baselineName: "no limit", better: .higher,
        target: ">= 0.97x", meets: { _, _, ratio in ratio >= 0.97 }
    ) { scale in
        let script = try Locations.repositoryFile("scripts/benchmarks/core.lua")
        let n = String(max(1000, Int(1_000_000 * scale)))
        let (limited, plain) = try CLIRows.inTurn(lua: { try CLIRows.output([ProcessRows.cli] + limit + [script, "async_serial", n]) },
                                                  native: { try CLIRows.output([ProcessRows.cli, script, "async_serial", n]) })
        return Measurement(lua: limited[0], baseline: plain[0])
    }

    /// `pure_lua.lua` (allocation-heavy as well as computing): seconds with the limit against without.
    static let pureLua = Row(
        name: "memory_limit_pure_lua", unit: "s", baselineName: "no limit", better: .lower,
        target: "<= 1.03x", meets: { _, _, ratio in ratio <= 1.03 }
    ) { scale in
        let script = try Locations.repositoryFile("scripts/benchmarks/pure_lua.lua")
        let s = String(max(0.05, scale))
        let (limited, plain) = try CLIRows.inTurn(lua: { try ProcessRows.time([ProcessRows.cli] + limit + [script, s]) },
                                                  native: { try ProcessRows.time([ProcessRows.cli, script, s]) })
        return Measurement(lua: limited, baseline: plain)
    }
}
