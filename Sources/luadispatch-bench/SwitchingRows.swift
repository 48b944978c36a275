import Foundation

/// Switching between blocks (docs/execution-model.md): what it gives (a main queue that stays
/// responsive, CPU-bound blocks that share the interpreter) and what it costs (pure Lua under
/// `luadispatch` against stock `lua5.4`). Scripts run by the release CLI, sides in turn.
enum SwitchingRows {
    static let rows: [Row] = [responsiveness, fairness, pureLua, ioLines]

    static let interval = 0.005

    /// The main queue's 10 ms timer while a block computes for 2 s, against the same timer with
    /// nothing else running: median lateness, and every run's longest gap within
    /// 2 x interval + 10 ms.
    static let responsiveness = Row(
        name: "responsiveness", unit: "us median lateness", baselineName: "timer alone", better: .lower,
        target: "<= 1.5x; gap <= 20 ms", meets: { _, _, ratio in ratio <= 1.5 }
    ) { scale in
        let script = try Locations.repositoryFile("scripts/benchmarks/responsive.lua")
        let duration = String(max(0.2, 2 * scale))
        let (busy, idle) = try CLIRows.inTurn(lua: { try CLIRows.output([ProcessRows.cli, "run", script, "busy", duration]) },
                                              native: { try CLIRows.output([ProcessRows.cli, "run", script, "idle", duration]) })
        let bound = (2 * interval + 0.010) * 1000
        return Measurement(lua: busy[0], baseline: idle[0],
                           notes: String(format: "longest gap %.1f ms (alone %.1f ms)", busy[1], idle[1]), meets: busy[1] <= bound)
    }

    /// Two equal CPU-bound blocks on a concurrent queue: when the first finishes, against one
    /// block's time alone (>= 1.8x: they took turns; 1.0x: one ran after the other).
    static let fairness = Row(
        name: "fairness", unit: "s to the first finish", baselineName: "one block alone", better: .higher,
        target: ">= 1.8x", meets: { _, _, ratio in ratio >= 1.8 }
    ) { scale in
        let script = try Locations.repositoryFile("scripts/benchmarks/fairness.lua")
        let r = try CLIRows.output([ProcessRows.cli, "run", script, String(max(1_000_000, Int(3e7 * scale)))])
        guard r.count >= 3 else { throw BenchError("fairness printed \(r)") }
        return Measurement(lua: r[1], baseline: r[0], notes: String(format: "second at %.2fx", r[2] / r[0]))
    }

    /// A pure-Lua script (no dispatch calls) through `luadispatch` against stock `lua5.4`: wall
    /// time, and (second ratio, reported) the processes' CPU time, which a busy machine moves less.
    static let pureLua = Row(
        name: "pure_lua", unit: "s", baselineName: "lua5.4", better: .lower,
        target: "<= 1.03x lua5.4", meets: { _, _, ratio in ratio <= 1.03 }, auxName: "CPU time"
    ) { scale in
        let script = try Locations.repositoryFile("scripts/benchmarks/pure_lua.lua")
        let s = String(max(0.05, scale))
        let (ours, theirs) = try CLIRows.inTurn(lua: { try ProcessRows.times([ProcessRows.cli, script, s]) },
                                                native: { try ProcessRows.times(["/usr/bin/lua5.4", script, s]) })
        return Measurement(lua: ours.wall, baseline: theirs.wall, aux: ours.cpu / theirs.cpu,
                           notes: String(format: "CPU %.3f s vs %.3f s", ours.cpu, theirs.cpu))
    }

    /// io.lines over a file and io.write of each line (to /dev/null, a character device: the
    /// runtime's checks for a descriptor that can block run) against stock `lua5.4`.
    static let ioLines = Row(
        name: "io_lines", unit: "s", baselineName: "lua5.4", better: .lower,
        target: "<= 1.03x lua5.4", meets: { _, _, ratio in ratio <= 1.03 }, auxName: "CPU time"
    ) { scale in
        let script = try Locations.repositoryFile("scripts/benchmarks/io_lines.lua")
        let file = NSTemporaryDirectory() + "luadispatch-bench-lines-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let line = "a line of text of some sixty bytes, like a log's or a CSV's\n"
        try String(repeating: line, count: max(20_000, Int(1e6 * scale))).write(toFile: file, atomically: false, encoding: .utf8)
        let (ours, theirs) = try CLIRows.inTurn(lua: { try ProcessRows.times([ProcessRows.cli, script, file]) },
                                                native: { try ProcessRows.times(["/usr/bin/lua5.4", script, file]) })
        return Measurement(lua: ours.wall, baseline: theirs.wall, aux: ours.cpu / theirs.cpu,
                           notes: String(format: "CPU %.3f s vs %.3f s", ours.cpu, theirs.cpu))
    }
}
