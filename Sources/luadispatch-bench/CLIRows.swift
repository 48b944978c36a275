import Foundation

/// The rows a user would measure: each Lua side is a script run by the release `luadispatch`
/// CLI (`luadispatch run scripts/benchmarks/...`), each native side a standalone program built
/// with -O (`luadispatch-native`, which links only Dispatch and Foundation). Every call of
/// `measure` runs one pair, the side that runs first alternating (`inTurn`).
enum CLIRows {
    static let rows: [Row] = [asyncSerial, asyncConcurrent, syncRoundTrip, performOverhead, pendingMemory]

    /// The native baseline program next to this one.
    static var native: String {
        URL(fileURLWithPath: ProcessRows.selfPath).deletingLastPathComponent().appendingPathComponent("luadispatch-native").path
    }

    /// The numbers a program printed on standard output.
    static func output(_ argv: [String]) throws -> [Double] {
        let out = NSTemporaryDirectory() + "luadispatch-bench-\(getpid()).out"
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try ProcessRows.measure(argv, stdout: out, sample: false)
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let xs = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
            .compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ",:;"))) }
        guard !xs.isEmpty else { throw BenchError("\(argv.joined(separator: " ")) printed no figure: \(text)") }
        return xs
    }

    /// Which side of a pair runs first alternates from one pair to the next: the program that
    /// runs second in a pair was measured faster, by up to 10%, than the same program run first
    /// (`trace_off`, the same program on both sides, showed it), so a fixed order biases every
    /// ratio.
    nonisolated(unsafe) static var luaFirst = false

    /// Runs one pair's two sides, which first alternating from one call to the next.
    static func inTurn<A, B>(lua: () throws -> A, native: () throws -> B) throws -> (lua: A, native: B) {
        luaFirst.toggle()
        if luaFirst {
            let a = try lua()
            return (a, try native())
        }
        let b = try native()
        return (try lua(), b)
    }

    /// One pair: `core.lua MODE N` through the CLI and `luadispatch-native MODE N`, in turn.
    static func pair(_ mode: String, _ n: Int) throws -> (lua: [Double], native: [Double]) {
        try inTurn(lua: { try core(ProcessRows.cli, mode, n) }, native: { try output([Self.native, mode, "\(n)"]) })
    }

    /// `cli run core.lua MODE N`'s figures.
    static func core(_ cli: String, _ mode: String, _ n: Int) throws -> [Double] {
        try output([cli, "run", try Locations.repositoryFile("scripts/benchmarks/core.lua"), mode, "\(n)"])
    }

    static func row(_ mode: String, unit: String, better: Row.Better, target: String, size: Int,
                    meets: @escaping @Sendable (Double, Double, Double) -> Bool) -> Row {
        Row(name: mode, unit: unit, baselineName: "native -O", better: better, target: target, meets: meets) { scale in
            let r = try pair(mode, max(1000, Int(Double(size) * scale)))
            return Measurement(lua: r.lua[0], baseline: r.native[0])
        }
    }

    static let asyncSerial = row("async_serial", unit: "blocks/s", better: .higher, target: ">= 0.9x native",
                                 size: 1_000_000) { _, _, r in r >= 0.9 }
    static let asyncConcurrent = row("async_concurrent", unit: "blocks/s", better: .higher, target: ">= 0.7x native",
                                     size: 1_000_000) { _, _, r in r >= 0.7 }
    static let syncRoundTrip = row("sync_round_trip", unit: "ns/call", better: .lower, target: "<= 3x native",
                                   size: 200_000) { _, _, r in r <= 3 }
    static let performOverhead = row("perform_overhead", unit: "ns/iteration", better: .lower, target: "report",
                                     size: 200_000) { _, _, _ in true }

    /// Resident memory per pending block: both programs count the pages their process grew by.
    static let pendingMemory = Row(
        name: "pending_block_memory", unit: "bytes/block", baselineName: "native -O", better: .lower,
        target: "<= 200 B (Lua)", meets: { lua, _, _ in lua <= 200 }
    ) { scale in
        let n = max(10_000, Int(500_000 * scale))
        let r = try pair("pending_block_memory", n)
        guard r.lua.count == 2, r.native.count == 2 else { throw BenchError("unexpected output: \(r)") }
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        return Measurement(lua: r.lua[0] * page / r.lua[1], baseline: r.native[0] * page / r.native[1],
                           notes: "\(n) blocks; resident memory grown")
    }
}
