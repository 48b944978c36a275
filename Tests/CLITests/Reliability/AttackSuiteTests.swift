import Foundation
import XCTest

/// The attack suite (Tests/lua/attacks/attacks.lua): scripts an attacker would try against
/// `luadispatch --sandbox --memory-limit 64M --time-limit 2` (without `--sandbox` where they
/// need the debug library or `dispatch.io`): crashes from inside the sandbox, numbers at the
/// edge of range, metamethods and `__gc` of every type through the debug library, C functions
/// that run long, code Lua runs with hooks off, deep nesting, Swift loops in bindings, and
/// memory held outside Lua. Each runs in a child forked by Tests/lua/attacks/launch.py (so that
/// `ru_maxrss` is the child's own peak) and must end as its header says: no exit by a signal,
/// no hang, a time-limit end within the limit + 0.5 s (besides the start-up a trivial script
/// takes) with the limit's message, a memory end with Lua's memory error and a peak resident
/// memory under the limit + 32 MiB.
final class AttackSuiteTests: XCTestCase {
    static var file: URL { CLI.packageRoot.appendingPathComponent("Tests/lua/attacks/attacks.lua") }
    static var launcher: URL { CLI.packageRoot.appendingPathComponent("Tests/lua/attacks/launch.py") }
    static let limitMiB = 64, limitSeconds = 2.0

    struct Attempt {
        let name: String, expect: String, options: [String], code: String
    }

    /// Parses the attempts: a `-- @@ name | expect | options` line starts each.
    static func attempts() throws -> [Attempt] {
        let text = try String(contentsOf: file, encoding: .utf8)
        var preludes: [String: String] = [:], parsed: [(String, String)] = []
        for block in text.components(separatedBy: "\n-- @@ ").dropFirst() {
            let head = String(block.prefix { $0 != "\n" })
            let code = String(block.dropFirst(head.count))
            if head.hasPrefix("prelude ") {
                preludes[String(head.dropFirst("prelude ".count))] = code
            } else {
                parsed.append((head, code))
            }
        }
        return parsed.map { head, code in
            let parts = head.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let options = parts.count > 2 ? parts[2].split(separator: " ").map(String.init) : []
            let prelude = options.first { $0.hasPrefix("uses=") }.flatMap { preludes[String($0.dropFirst(5))] } ?? ""
            return Attempt(name: parts[0], expect: parts.count > 1 ? parts[1] : "", options: options, code: prelude + code)
        }
    }

    struct Outcome {
        var status = -1, signal = 0, maxRSSKiB = 0, took = 0.0, hang = false
        var stderr = ""
    }

    static func python() -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map { "\($0)/python3" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Memory attacks run under a longer time limit: making a million objects takes seconds in
    /// a debug or AddressSanitizer build on a loaded machine, and the memory limit is the point.
    static let memoryAttackSeconds = 10

    static func run(_ code: String, sandboxed: Bool, seconds: Int, python: String) throws -> Outcome {
        let arguments = [launcher.path, "30", CLI.binary.path] + (sandboxed ? ["--sandbox"] : [])
            + ["--memory-limit", "\(limitMiB)M", "--time-limit", "\(seconds)", "-e", code]
        let r = try CLI.run(arguments, timeout: 60, executable: URL(fileURLWithPath: python))
        var o = Outcome(stderr: r.stderr)
        guard let line = r.stdout.split(separator: "\n").last(where: { $0.hasPrefix("ATTACK-END ") }) else { return o }
        for field in line.split(separator: " ").dropFirst() {
            let kv = field.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { continue }
            switch kv[0] {
            case "status": o.status = Int(kv[1]) ?? -1
            case "signal": o.signal = Int(kv[1]) ?? 0
            case "maxrss": o.maxRSSKiB = Int(kv[1]) ?? 0
            case "took": o.took = Double(kv[1]) ?? 0
            case "hang": o.hang = kv[1] == "1"
            default: break
            }
        }
        return o
    }

    /// What is wrong with `o` for `a`, or nil.
    static func verdict(_ a: Attempt, _ o: Outcome, startup: Double) -> String? {
        let said = String(o.stderr.suffix(400))
        if o.hang { return "hang: killed after 30 s" }
        if o.signal != 0 { return "ended by signal \(o.signal): \(said)" }
        if o.stderr.contains("PANIC") || o.stderr.contains("AddressSanitizer") { return "PANIC or sanitizer report: \(said)" }
        if o.stderr.contains("cannot interrupt") { return "ended by the backstop after \(o.took) s: \(said)" }
        let sanitized = StockLua.sanitizerRuntime != nil
        let memoryBound = (limitMiB + 32) * 1024
        // Under AddressSanitizer the resident size says nothing (its allocator and shadow memory).
        if !sanitized && o.maxRSSKiB > memoryBound { return "peak RSS \(o.maxRSSKiB) KiB over \(memoryBound) KiB" }
        let timeBound = (a.expect == "memory" ? Double(memoryAttackSeconds) : limitSeconds) + 0.5 + startup
        if o.stderr.contains("time limit exceeded") && o.took > timeBound {
            return "the time limit ended it after \(o.took) s (bound \(timeBound) s)"
        }
        switch a.expect {
        case "time":
            guard o.status == 1, o.stderr.contains("time limit exceeded") else { return "no time-limit end: status \(o.status): \(said)" }
        case "memory":
            guard o.status == 1, o.stderr.contains("not enough memory") else { return "no memory error: status \(o.status): \(said)" }
        case "limit":
            guard o.status == 1, o.stderr.contains("not enough memory") || o.stderr.contains("time limit exceeded")
            else { return "no limit's end: status \(o.status): \(said)" }
        case "ok":
            guard o.status == 0 else { return "status \(o.status): \(said)" }
        case "survive":
            guard o.status == 0 || o.status == 1 else { return "status \(o.status): \(said)" }
        case let e where e.hasPrefix("error:"):
            let wanted = e.dropFirst("error:".count).trimmingCharacters(in: .whitespaces)
            guard o.status == 1, o.stderr.contains(wanted) else { return "no error containing '\(wanted)': status \(o.status): \(said)" }
        default:
            return "unknown expectation '\(a.expect)'"
        }
        return nil
    }

    func testEveryAttackIsHeld() throws {
        guard let python = Self.python() else { return XCTFail("python3 is not on PATH (scripts/setup --tests installs it)") }
        let attempts = try Self.attempts()
        XCTAssertGreaterThanOrEqual(attempts.count, 85)
        // The start-up and exit of a trivial script, which the time bound does not count.
        let startup = try (0..<3).map { _ in
            try Self.run("local x = 1", sandboxed: true, seconds: Int(Self.limitSeconds), python: python).took
        }.max() ?? 0
        let results = Results()
        let started = Date()
        let lanes = 4
        // The slowest kinds (time-limit ends) first, so that the lanes finish together.
        let order = attempts.indices.sorted { (attempts[$0].expect == "time" ? 0 : 1, $0) < (attempts[$1].expect == "time" ? 0 : 1, $1) }
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            for index in order.enumerated().filter({ $0.offset % lanes == lane }).map(\.element) {
                let a = attempts[index]
                do {
                    let seconds = a.expect == "memory" ? Self.memoryAttackSeconds : Int(Self.limitSeconds)
                    let o = try Self.run(a.code, sandboxed: !a.options.contains("nosandbox"), seconds: seconds, python: python)
                    results.add(index, o, Self.verdict(a, o, startup: startup))
                } catch {
                    results.add(index, Outcome(), "\(error)")
                }
            }
        }
        let all = results.all
        var held = 0, maxRSS = 0, maxOver = 0.0, gaps: [String] = []
        for (index, a) in attempts.enumerated() {
            guard let (o, failure) = all[index] else { XCTFail("\(a.name): not run"); continue }
            // A known gap: no signal, no hang, no sanitizer report; what it misses is reported.
            if a.options.contains("gap") {
                if o.hang || o.signal != 0 || o.stderr.contains("AddressSanitizer") {
                    XCTFail("\(a.name): \(failure ?? "")")
                } else if let failure {
                    gaps.append("\(a.name): \(failure.prefix(120))")
                } else {
                    held += 1
                }
                continue
            }
            maxRSS = max(maxRSS, o.maxRSSKiB)
            if o.stderr.contains("time limit exceeded") && a.expect != "memory" {
                maxOver = max(maxOver, o.took - startup - Self.limitSeconds)
            }
            if let failure {
                XCTFail("\(a.name): \(failure)")
            } else {
                held += 1
            }
        }
        print("attack suite: \(held) of \(attempts.count) held in " + String(format: "%.1f s", Date().timeIntervalSince(started))
              + "; peak RSS \(maxRSS / 1024) MiB at most; time-limit ends at most "
              + String(format: "%.2f s", maxOver) + " past the limit (start-up " + String(format: "%.2f s", startup) + ")"
              + (gaps.isEmpty ? "" : "; known gaps:\n  " + gaps.joined(separator: "\n  ")))
    }
}

private final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int: (AttackSuiteTests.Outcome, String?)] = [:]
    func add(_ i: Int, _ o: AttackSuiteTests.Outcome, _ failure: String?) { lock.withLock { values[i] = (o, failure) } }
    var all: [Int: (AttackSuiteTests.Outcome, String?)] { lock.withLock { values } }
}
