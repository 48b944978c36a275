import Foundation

/// Request/response servers under clients nobody here wrote: the Redis-protocol and HTTP
/// servers of scripts/examples on `dispatch.net` (release CLI) against their luv twins under
/// `lua5.4` (scripts/benchmarks/*-luv.lua, the same protocol code), loaded by `redis-benchmark`
/// (redis-tools), `wrk` and `ab` (apache2-utils) on loopback, in bounded runs
/// (`scripts/setup --bench` installs the clients). Each measurement starts a fresh server for
/// each side, the side that goes first alternating.
enum ServerRows {
    /// The rows, when the load generators are installed; otherwise none, and a note on
    /// standard error (they are a bench-only install, which CI and the smoke test may lack).
    static var rows: [Row] {
        let missing = ["redis-benchmark", "wrk", "ab"].filter { tool(tool: $0) == nil }
        guard missing.isEmpty else {
            FileHandle.standardError.write(Data("net_redis and net_http rows skipped: \(missing.joined(separator: ", ")) missing (scripts/setup --bench)\n".utf8))
            return []
        }
        return all
    }

    static func tool(tool name: String) -> String? {
        ["/usr/bin/" + name, "/usr/local/bin/" + name].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let all: [Row] = [
        redis("net_redis", pipeline: 1, target: 0.9),
        redis("net_redis_p16", pipeline: 16, target: 1.0),
        http("net_http_wrk", ["wrk", "-t1", "-c64", "-d{s}s", "{url}"]),
        http("net_http_wrk_p16", ["wrk", "-t1", "-c64", "-d{s}s", "-s", "{pipeline}", "{url}"]),
        http("net_http_ab_k", ["ab", "-q", "-k", "-c32", "-n{n}", "{url}"]),
        http("net_http_ab", ["ab", "-q", "-c32", "-n{n}", "{url}"]),
    ]

    /// A server process, its port, and its CPU time (user + system, seconds) so far.
    final class Server {
        let process = Process()
        let port: Int

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
            guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                process.terminate()
                throw BenchError("\(argv.joined(separator: " ")) printed no port")
            }
            self.port = port
        }

        var cpuSeconds: Double {
            guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return 0 }
            let f = stat[stat.index(after: close)...].split(separator: " ")
            return ((Double(f[11]) ?? 0) + (Double(f[12]) ?? 0)) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    static func client(_ argv: [String]) throws -> String {
        guard let path = tool(tool: argv[0]) else {
            throw BenchError("\(argv[0]) is missing (scripts/setup --bench)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = Array(argv.dropFirst())
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs `load(port)` against a fresh server: (requests/s, server CPU µs per request).
    static func run(_ server: [String], _ load: (Int) throws -> (rps: Double, requests: Double)) throws -> (rps: Double, cpu: Double) {
        let s = try Server(server)
        defer { s.stop() }
        let before = s.cpuSeconds
        let r = try load(s.port)
        return (r.rps, (s.cpuSeconds - before) * 1e6 / max(r.requests, 1))
    }

    static func sides(_ example: String, _ luv: String) throws -> (lua: [String], luv: [String]) {
        (([ProcessRows.cli, "run", try Locations.repositoryFile("scripts/examples/" + example)]),
         ["/usr/bin/lua5.4", try Locations.repositoryFile("scripts/benchmarks/" + luv)])
    }

    /// redis-benchmark's PING, SET, GET and INCR figures (requests/s, by test).
    static func redisBenchmark(_ port: Int, n: Int, pipeline: Int) throws -> [String: Double] {
        let text = try client(["redis-benchmark", "-p", "\(port)", "-c", "50", "-n", "\(n)", "-P", "\(pipeline)",
                               "-t", "ping,set,get,incr", "--csv"])
        var rps: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let f = line.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            if f.count >= 2, let v = Double(f[1]) { rps[f[0]] = v }
        }
        guard rps.count >= 4 else { throw BenchError("redis-benchmark printed: \(text)") }
        return rps
    }

    /// The worst test's ratio decides: `lua` and `baseline` are that test's requests/s.
    static func redis(_ name: String, pipeline: Int, target: Double) -> Row {
        Row(name: name, unit: "req/s", baselineName: "luv, lua5.4", better: .higher,
            target: ">= \(target)x luv", meets: { _, _, r in r >= target }) { scale in
            let n = max(10_000, Int(100_000 * scale * Double(pipeline > 1 ? 4 : 1)))
            let (lua, luv) = try sides("redis-server.lua", "redis-luv.lua")
            var cpu = (lua: 0.0, luv: 0.0)
            let (a, b) = try CLIRows.inTurn(lua: { () throws -> [String: Double] in
                var figures: [String: Double] = [:]
                let r = try run(lua) { port in
                    figures = try redisBenchmark(port, n: n, pipeline: pipeline)
                    return (0, Double(n * figures.count))
                }
                cpu.lua = r.cpu
                return figures
            }, native: { () throws -> [String: Double] in
                var figures: [String: Double] = [:]
                let r = try run(luv) { port in
                    figures = try redisBenchmark(port, n: n, pipeline: pipeline)
                    return (0, Double(n * figures.count))
                }
                cpu.luv = r.cpu
                return figures
            })
            let tests = a.keys.filter { b[$0] != nil }.sorted()
            guard let worst = tests.min(by: { a[$0]! / b[$0]! < a[$1]! / b[$1]! }) else { throw BenchError("no common tests") }
            let ratios = tests.map { "\($0) \(String(format: "%.2f", a[$0]! / b[$0]!))x" }.joined(separator: ", ")
            return Measurement(lua: a[worst]!, baseline: b[worst]!,
                               notes: "-c50 -P\(pipeline) -n \(n): worst \(worst); \(ratios); server CPU \(String(format: "%.1f", cpu.lua)) vs \(String(format: "%.1f", cpu.luv)) us/req")
        }
    }

    /// wrk's or ab's requests/s against the HTTP servers. `{url}`, `{s}` (seconds), `{n}`
    /// (requests) and `{pipeline}` (the wrk script) are filled in.
    static func http(_ name: String, _ template: [String]) -> Row {
        Row(name: name, unit: "req/s", baselineName: "luv, lua5.4", better: .higher,
            target: ">= 1.0x luv", meets: { _, _, r in r >= 1.0 }) { scale in
            let seconds = max(1, Int((5 * scale).rounded()))
            let n = max(5_000, Int(50_000 * scale))
            let (lua, luv) = try sides("http-server.lua", "http-luv.lua")
            let pipeline = try Locations.repositoryFile("scripts/benchmarks/wrk-pipeline.lua")
            let load = { (port: Int) throws -> (rps: Double, requests: Double) in
                let argv = template.map {
                    $0.replacingOccurrences(of: "{url}", with: "http://127.0.0.1:\(port)/")
                        .replacingOccurrences(of: "{s}", with: "\(seconds)")
                        .replacingOccurrences(of: "{n}", with: "\(n)")
                        .replacingOccurrences(of: "{pipeline}", with: pipeline)
                }
                let text = try client(argv)
                guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") || $0.hasPrefix("Requests per second:") }),
                      let rps = line.split(separator: " ").compactMap({ Double($0) }).first else {
                    throw BenchError("\(argv[0]) printed: \(text)")
                }
                let total = text.split(separator: "\n").first(where: { $0.contains("requests in") })?
                    .split(separator: " ").compactMap({ Double($0) }).first ?? (argv[0] == "ab" ? Double(n) : rps * Double(seconds))
                return (rps, total)
            }
            let (a, b) = try CLIRows.inTurn(lua: { try run(lua, load) }, native: { try run(luv, load) })
            return Measurement(lua: a.rps, baseline: b.rps,
                               notes: "\(template.dropLast().joined(separator: " ")); server CPU \(String(format: "%.1f", a.cpu)) vs \(String(format: "%.1f", b.cpu)) us/req")
        }
    }
}
