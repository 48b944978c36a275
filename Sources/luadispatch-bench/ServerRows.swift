import Foundation

/// Request/response servers under clients nobody here wrote: the Redis-protocol and HTTP
/// servers of scripts/examples on `dispatch.net` (release CLI) against their luv twins under
/// `lua5.4` (scripts/benchmarks/*-luv.lua, the same protocol code), loaded by `redis-benchmark`
/// (redis-tools), `wrk` and `ab` (apache2-utils) on loopback, in bounded runs
/// (`scripts/setup --bench` installs the clients). Each measurement starts a fresh server for
/// each side, the side that goes first alternating. Besides requests/s, the notes hold each
/// side's p99 latency, most threads during the load, resident memory after it and CPU time
/// per request, against the limits the servers are held to.
enum ServerRows {
    /// The rows, when the load generators are installed; otherwise none, and a note on
    /// standard error (they are a bench-only install, which CI and the smoke test may lack).
    static var rows: [Row] {
        let missing = ["redis-benchmark", "wrk", "ab"].filter { tool(tool: $0) == nil }
        guard missing.isEmpty else {
            FileHandle.standardError.write(Data("net_redis, net_http and net_reset_recovery rows skipped: \(missing.joined(separator: ", ")) missing (scripts/setup --bench)\n".utf8))
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
        http("net_http_wrk", ["wrk", "--latency", "-t1", "-c64", "-d{s}s", "{url}"]),
        http("net_http_wrk_p16", ["wrk", "--latency", "-t1", "-c64", "-d{s}s", "-s", "{pipeline}", "{url}"]),
        http("net_http_ab_k", ["ab", "-q", "-k", "-c32", "-n{n}", "{url}"]),
        http("net_http_ab", ["ab", "-q", "-c32", "-n{n}", "{url}"]),
        ResetRow.row,
    ]

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

    /// What a load reports: requests/s, requests made, p99 latency (ms).
    typealias Load = (Int) throws -> (rps: Double, requests: Double, p99: Double)

    /// Runs `load(port)` against a fresh server, its threads sampled during the load and its
    /// resident memory read after it, just before it is stopped.
    static func run(_ server: [String], _ load: Load) throws -> ServerFigures {
        let s = try ServerProcess(server)
        defer { s.stop() }
        let before = s.cpuSeconds
        s.startSampling()
        let r = try load(s.port)
        let threads = s.stopSampling()
        let cpu = (s.cpuSeconds - before) * 1e6 / max(r.requests, 1)
        return ServerFigures(rps: r.rps, cpu: cpu, p99: r.p99, threads: threads, rss: s.rssMiB)
    }

    static func sides(_ example: String, _ luv: String) throws -> (lua: [String], luv: [String]) {
        (([ProcessRows.cli, "run", try Locations.repositoryFile("scripts/examples/" + example)]),
         ["/usr/bin/lua5.4", try Locations.repositoryFile("scripts/benchmarks/" + luv)])
    }

    /// redis-benchmark's PING, SET, GET and INCR figures by test: requests/s and p99 (ms).
    static func redisBenchmark(_ port: Int, n: Int, pipeline: Int) throws -> [String: (rps: Double, p99: Double)] {
        let text = try client(["redis-benchmark", "-p", "\(port)", "-c", "50", "-n", "\(n)", "-P", "\(pipeline)",
                               "-t", "ping,set,get,incr", "--csv"])
        var tests: [String: (rps: Double, p99: Double)] = [:]
        var p99Column: Int?
        for line in text.split(separator: "\n") {
            let f = line.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            if let c = f.firstIndex(of: "p99_latency_ms") { p99Column = c }
            if f.count >= 2, let v = Double(f[1]) {
                tests[f[0]] = (v, p99Column.flatMap { $0 < f.count ? Double(f[$0]) : nil } ?? .nan)
            }
        }
        guard tests.count >= 4 else { throw BenchError("redis-benchmark printed: \(text)") }
        return tests
    }

    /// One server under redis-benchmark: every test's figures, and the server's (p99: the
    /// highest test's).
    static func redisSide(_ argv: [String], n: Int, pipeline: Int) throws -> (tests: [String: (rps: Double, p99: Double)], server: ServerFigures) {
        var tests: [String: (rps: Double, p99: Double)] = [:]
        let server = try run(argv) { port in
            tests = try redisBenchmark(port, n: n, pipeline: pipeline)
            return (0, Double(n * tests.count), tests.values.map(\.p99).max() ?? .nan)
        }
        return (tests, server)
    }

    /// The ceiling columns: the same server in Swift (-O, no Lua) in both native designs
    /// (`luadispatch-native serve PROTOCOL source|epoll`).
    static func ceilings(_ proto: String) -> [(name: String, argv: [String])] {
        [("native source per connection", [CLIRows.native, "serve", proto, "source"]),
         ("native epoll set", [CLIRows.native, "serve", proto, "epoll"])]
    }

    static func ceilingNote(_ name: String, _ rps: Double, _ luv: Double, cpu: Double, _ detail: String = "") -> String {
        "\(name) " + String(format: "%.0f req/s, %.2fx luv, %.1f us/req", rps, rps / luv, cpu) + detail
    }

    /// Every test's requests/s go to the harness, which judges each test's median over the
    /// runs (the worst test decides); `lua` and `baseline` are this run's worst test's.
    static func redis(_ name: String, pipeline: Int, target: Double) -> Row {
        Row(name: name, unit: "req/s", baselineName: "luv, lua5.4", better: .higher,
            target: ">= \(target)x luv", meets: { _, _, r in r >= target }) { scale in
            let n = max(10_000, Int(100_000 * scale * Double(pipeline > 1 ? 4 : 1)))
            let (lua, luv) = try sides("redis-server.lua", "redis-luv.lua")
            let (a, b) = try CLIRows.inTurn(lua: { try redisSide(lua, n: n, pipeline: pipeline) },
                                            native: { try redisSide(luv, n: n, pipeline: pipeline) })
            let tests = a.tests.keys.filter { b.tests[$0] != nil }.sorted()
            func ratio(_ t: String) -> Double { a.tests[t]!.rps / b.tests[t]!.rps }
            guard let worst = tests.min(by: { ratio($0) < ratio($1) }) else { throw BenchError("no common tests") }
            let ratios = tests.map { "\($0) \(String(format: "%.2f", ratio($0)))x" }.joined(separator: ", ")
            // The ceilings' worst test against luv's same test.
            let native = try ceilings("redis").map { c -> String in
                let side = try redisSide(c.argv, n: n, pipeline: pipeline)
                let r = side.tests
                let t = tests.filter { r[$0] != nil }.min(by: { r[$0]!.rps / b.tests[$0]!.rps < r[$1]!.rps / b.tests[$1]!.rps }) ?? worst
                return ceilingNote(c.name, r[t]?.rps ?? .nan, b.tests[t]!.rps, cpu: side.server.cpu, " (worst \(t))")
            }
            return Measurement(lua: a.tests[worst]!.rps, baseline: b.tests[worst]!.rps,
                               notes: "-c50 -P\(pipeline) -n \(n): worst \(worst); \(ratios); (the highest test's) "
                                   + a.server.limits(against: b.server) + "; ceilings: " + native.joined(separator: ", "),
                               tests: Dictionary(uniqueKeysWithValues: tests.map { ($0, (a.tests[$0]!.rps, b.tests[$0]!.rps)) }))
        }
    }

    /// The 99th percentile latency in wrk's `--latency` table ("99%    8.94ms") or ab's
    /// ("99%      3", ms), in ms; NaN when the client printed none.
    static func p99(_ text: String) -> Double {
        guard let line = text.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("99%") }),
              let value = line.split(separator: " ").dropFirst().first else { return .nan }
        let digits = value.prefix(while: { $0.isNumber || $0 == "." })
        // wrk prints 0.00us for the upper percentiles in some pipelined runs: not a figure.
        guard let x = Double(digits), x > 0 else { return .nan }
        switch value.dropFirst(digits.count) {
        case "us": return x / 1000
        case "s": return x * 1000
        default: return x  // "ms", or ab's bare milliseconds
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
            let fill = { (port: Int, arg: String) in
                arg.replacingOccurrences(of: "{url}", with: "http://127.0.0.1:\(port)/")
                    .replacingOccurrences(of: "{s}", with: "\(seconds)")
                    .replacingOccurrences(of: "{n}", with: "\(n)")
                    .replacingOccurrences(of: "{pipeline}", with: pipeline)
            }
            let load: Load = { port in
                let argv = template.map { fill(port, $0) }
                let text = try client(argv)
                guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") || $0.hasPrefix("Requests per second:") }),
                      let rps = line.split(separator: " ").compactMap({ Double($0) }).first else {
                    throw BenchError("\(argv[0]) printed: \(text)")
                }
                let total = text.split(separator: "\n").first(where: { $0.contains("requests in") })?
                    .split(separator: " ").compactMap({ Double($0) }).first ?? (argv[0] == "ab" ? Double(n) : rps * Double(seconds))
                return (rps, total, p99(text))
            }
            let (a, b) = try CLIRows.inTurn(lua: { try run(lua, load) }, native: { try run(luv, load) })
            let native = try ceilings("http").map { c in
                let r = try run(c.argv, load)
                return ceilingNote(c.name, r.rps, b.rps, cpu: r.cpu)
            }
            return Measurement(lua: a.rps, baseline: b.rps,
                               notes: "\(template.dropLast().map { fill(0, $0.replacingOccurrences(of: "{pipeline}", with: "wrk-pipeline.lua")) }.joined(separator: " ")); " + a.limits(against: b)
                                   + "; ceilings: " + native.joined(separator: ", "))
        }
    }
}
