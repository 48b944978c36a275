import Dispatch
import Foundation

/// Rows for sources and DispatchIO: timer lateness and combining two large files.
enum IORows {
    static let rows: [Row] = [timerLateness, fileCombine]

    /// Mean lateness of a 10 ms repeating timer over 1 s, against start + n * interval.
    static let timerLateness = Row(
        name: "timer_lateness", unit: "us mean", baselineName: "native", better: .lower,
        target: "<= 2x native", meets: { _, _, r in r <= 2 }
    ) { scale in
        let duration = max(0.2, scale)
        let lua = try LuaBench.run("""
            local dispatch, bench = require("dispatch"), require("bench")
            local interval, fires = 0.01, math.floor(\(duration) / 0.01 + 0.5)
            local q = dispatch.queue("timer")
            local start = dispatch.now() + interval
            local n, sum = 0, 0
            local timer = dispatch.source.timer{deadline = start, interval = interval, leeway = 0, queue = q}
            timer:set_event_handler(function()
              n = n + timer.data
              sum = sum + (dispatch.now() - (start + (n - 1) * interval)) * 1e6
              if n >= fires then timer:cancel(); bench.report(sum / n) end
            end)
            timer:resume()
            """)[0]
        return Measurement(lua: lua, baseline: nativeTimer(duration: duration))
    }

    static func nativeTimer(duration: Double) -> Double {
        let interval = 0.01
        let fires = Int((duration / interval).rounded())
        let q = DispatchQueue(label: "timer.native")
        let timer = DispatchSource.makeTimerSource(queue: q)
        let start = DispatchTime.now() + interval
        let done = DispatchSemaphore(value: 0)
        final class State: @unchecked Sendable { var n = 0, sum = 0.0 }
        let s = State()
        timer.schedule(deadline: start, repeating: interval, leeway: .nanoseconds(0))
        timer.setEventHandler {
            s.n += Int(timer.data)
            let ideal = start.uptimeNanoseconds + UInt64(Double(s.n - 1) * interval * 1e9)
            s.sum += Double(Int64(DispatchTime.now().uptimeNanoseconds) - Int64(ideal)) / 1e3
            if s.n >= fires {
                timer.cancel()
                done.signal()
            }
        }
        timer.resume()
        done.wait()
        return s.sum / Double(s.n)
    }

    /// Two files combined into one with stream channels (highWater 1 MiB), each chunk written
    /// as it is read: `luadispatch run scripts/benchmarks/combine.lua` against the same program
    /// in native Swift (this binary with --combine) and against `cat`. Separate processes, so
    /// that peak RSS is each program's own.
    static let fileCombine = Row(
        name: "file_combine", unit: "s", baselineName: "native", better: .lower,
        target: "<= 1.1x time, <= 1.5x RSS", meets: { _, _, r in r <= 1.1 }
    ) { scale in
        let size = max(1 << 20, Int(Double(256 << 20) * scale))
        let dir = NSTemporaryDirectory() + "luadispatch-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = dir + "/a", b = dir + "/b"
        try makeFile(a, size: size, seed: 1)
        try makeFile(b, size: size, seed: 2)
        let script = try Locations.repositoryFile("scripts/benchmarks/combine.lua")
        let lua = try ProcessRows.measure([ProcessRows.cli, "run", script, a, b, dir + "/lua.out"])
        let native = try ProcessRows.measure([ProcessRows.selfPath, "--combine", a, b, dir + "/native.out"])
        let cat = try ProcessRows.measure(["/bin/cat", a, b], stdout: dir + "/cat.out")
        for out in ["lua.out", "native.out"] where !FileManager.default.contentsEqual(atPath: dir + "/" + out, andPath: dir + "/cat.out") {
            throw BenchError("\(out) differs from `cat a b`")
        }
        let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1048576) }
        return Measurement(
            lua: lua.seconds, baseline: native.seconds,
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

    /// The native Swift version of combine.lua (run as `luadispatch-bench --combine A B OUT`).
    static func nativeCombine(_ a: String, _ b: String, _ out: String) -> Never {
        let q = DispatchQueue(label: "combine.native")
        let done = DispatchSemaphore(value: 0)
        let output = DispatchIO(type: .stream, path: out, oflag: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644, queue: q) { _ in
            done.signal()
        }!
        @Sendable func copy(_ path: String, then next: @escaping @Sendable () -> Void) {
            let input = DispatchIO(type: .stream, path: path, oflag: O_RDONLY, mode: 0, queue: q) { _ in }!
            input.setLimit(highWater: 1 << 20)
            input.read(offset: 0, length: Int.max, queue: q) { finished, data, _ in
                if let data, !data.isEmpty { output.write(offset: 0, data: data, queue: q) { _, _, _ in } }
                if finished {
                    input.close()
                    next()
                }
            }
        }
        copy(a) { copy(b) { output.close() } }
        done.wait()
        exit(0)
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
