import Dispatch
import Foundation

/// Rows for sources and DispatchIO: timer lateness and combining two large files.
enum IORows {
    static let rows: [Row] = [timerLateness, fileCombine]

    /// Mean lateness of a 10 ms repeating timer over 1 s, against start + n * interval:
    /// `luadispatch run scripts/benchmarks/timer.lua 0.01 1` against `luadispatch-native timer 1`.
    static let timerLateness = Row(
        name: "timer_lateness", unit: "us mean", baselineName: "native -O", better: .lower,
        target: "<= 2x native", meets: { _, _, r in r <= 2 }
    ) { scale in
        let duration = max(0.2, scale)
        let script = try Locations.repositoryFile("scripts/benchmarks/timer.lua")
        let (lua, native) = try CLIRows.inTurn(lua: { try CLIRows.output([ProcessRows.cli, "run", script, "0.01", "\(duration)"]) },
                                               native: { try CLIRows.output([CLIRows.native, "timer", "\(duration)"]) })
        // timer.lua prints "timer 10 ms x N: mean lateness M us, max X us".
        guard lua.count >= 4 else { throw BenchError("unexpected timer.lua output: \(lua)") }
        return Measurement(lua: lua[2], baseline: native[0])
    }

    /// Two files combined into one with stream channels (highWater 1 MiB), each chunk written
    /// as it is read: `luadispatch run scripts/benchmarks/combine.lua` against the same program
    /// in native Swift (`luadispatch-native combine`) and against `cat`. Separate processes, so
    /// that peak RSS is each program's own.
    static let fileCombine = Row(
        name: "file_combine", unit: "s", baselineName: "native -O", better: .lower,
        target: "<= 1.1x time, <= 1.3x RSS", meets: { _, _, r in r <= 1.1 },
        auxName: "peak RSS ratio", auxMeets: { $0 <= 1.3 }
    ) { scale in
        let size = max(1 << 20, Int(Double(256 << 20) * scale))
        let dir = NSTemporaryDirectory() + "luadispatch-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = dir + "/a", b = dir + "/b"
        try makeFile(a, size: size, seed: 1)
        try makeFile(b, size: size, seed: 2)
        let script = try Locations.repositoryFile("scripts/benchmarks/combine.lua")
        let (lua, native) = try CLIRows.inTurn(lua: { try ProcessRows.measure([ProcessRows.cli, "run", script, a, b, dir + "/lua.out"]) },
                                               native: { try ProcessRows.measure([CLIRows.native, "combine", a, b, dir + "/native.out"]) })
        let cat = try ProcessRows.measure(["/bin/cat", a, b], stdout: dir + "/cat.out")
        for out in ["lua.out", "native.out"] where !FileManager.default.contentsEqual(atPath: dir + "/" + out, andPath: dir + "/cat.out") {
            throw BenchError("\(out) differs from `cat a b`")
        }
        let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1048576) }
        return Measurement(
            lua: lua.seconds, baseline: native.seconds,
            aux: Double(lua.peakRSS) / Double(native.peakRSS),
            notes: "2 x \(size >> 20) MiB; peak RSS lua \(mib(lua.peakRSS)), native \(mib(native.peakRSS)) "
                + String(format: "(%.2fx)", Double(lua.peakRSS) / Double(native.peakRSS))
                + "; cat \(String(format: "%.3f", cat.seconds)) s, \(mib(cat.peakRSS)); outputs identical to cat")
    }

    static func makeFile(_ path: String, size: Int, seed: UInt64) throws {
        guard let f = fopen(path, "w") else { throw BenchError("cannot create \(path)") }
        defer { fclose(f) }
        var x = seed &* 0x9E37_79B9_7F4A_7C15
        var chunk = [UInt64](repeating: 0, count: 1 << 17)
        var left = size
        while left > 0 {
            for i in chunk.indices {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17
                chunk[i] = x
            }
            let n = min(left, chunk.count * 8)
            _ = chunk.withUnsafeBytes { fwrite($0.baseAddress, 1, n, f) }
            left -= n
        }
    }

}

enum Locations {
    /// A file of the repository, found from the current directory or from this binary's path.
    static func repositoryFile(_ relative: String) throws -> String {
        var candidates = [FileManager.default.currentDirectoryPath]
        var dir = URL(fileURLWithPath: ProcessRows.selfPath).deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(dir.path)
            dir.deleteLastPathComponent()
        }
        for c in candidates where FileManager.default.fileExists(atPath: c + "/" + relative) { return c + "/" + relative }
        throw BenchError("cannot find \(relative); run from the repository")
    }
}
