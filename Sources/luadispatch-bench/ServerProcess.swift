import Foundation

/// A server process of the request/response rows, its port, and what it costs: CPU time, the
/// most threads it had while sampled, its resident memory.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    let port: Int
    private let lock = NSLock()
    private var sampling = false
    private var peakThreads = 0

    init(_ argv: [String]) throws {
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(10) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        guard let port = Int(String(decoding: line.prefix(while: { $0 != 10 }), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw BenchError("\(argv.joined(separator: " ")) printed no port")
        }
        self.port = port
    }

    var pid: Int32 { process.processIdentifier }

    /// User + system CPU seconds so far.
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let f = stat[stat.index(after: close)...].split(separator: " ")
        return ((Double(f[11]) ?? 0) + (Double(f[12]) ?? 0)) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A field of /proc/PID/status as a number (VmRSS in kB, Threads).
    func status(_ field: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().compactMap { Double($0) }.first
    }

    /// Resident memory now, MiB.
    var rssMiB: Double { (status("VmRSS") ?? 0) / 1024 }

    /// Samples the thread count every 50 ms until `stopSampling`.
    func startSampling() {
        lock.withLock { sampling = true; peakThreads = max(peakThreads, Int(status("Threads") ?? 0)) }
        let t = Thread { [self] in
            while lock.withLock({ sampling }) {
                let n = Int(status("Threads") ?? 0)
                lock.withLock { peakThreads = max(peakThreads, n) }
                usleep(50_000)
            }
        }
        t.start()
    }

    /// Stops sampling: the most threads seen.
    func stopSampling() -> Int {
        let n = Int(status("Threads") ?? 0)
        return lock.withLock {
            sampling = false
            peakThreads = max(peakThreads, n)
            return peakThreads
        }
    }

    func stop() {
        lock.withLock { sampling = false }
        process.terminate()
        process.waitUntilExit()
    }
}

/// What one server did under one load.
struct ServerFigures {
    var rps: Double
    /// Server CPU µs per request.
    var cpu: Double
    /// The client's 99th percentile latency, ms.
    var p99: Double
    /// The most threads the server had during the load.
    var threads: Int
    /// Resident memory after the load, MiB.
    var rss: Double

    /// The limits the request/response servers are held to, against `luv`'s figures: a
    /// sentence for the notes.
    func limits(against luv: ServerFigures) -> String {
        let maxThreads = 2 * ProcessInfo.processInfo.activeProcessorCount + 4
        func yn(_ b: Bool) -> String { b ? "yes" : "NO" }
        let p99ratio = p99 / luv.p99
        return (p99ratio.isFinite
                ? "p99 " + String(format: "%.2f vs %.2f ms (%.2fx", p99, luv.p99, p99ratio) + ", <= 1.5x \(yn(p99ratio <= 1.5)))"
                : "p99 " + String(format: "%.2f vs %.2f ms", p99, luv.p99) + " (the client printed none: not judged)")
            + "; threads \(threads) vs \(luv.threads) (<= \(maxThreads) \(yn(threads <= maxThreads)))"
            + "; RSS after " + String(format: "%.1f vs %.1f MiB", rss, luv.rss) + " (<= 16 \(yn(rss <= 16)))"
            + "; server CPU " + String(format: "%.1f vs %.1f us/req", cpu, luv.cpu)
    }
}
