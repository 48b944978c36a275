import Dispatch
import Foundation
import CLuaShim
import LuaDispatch

/// One comparison: a figure for the Lua runtime and one for its baseline, measured in the same
/// run, and how to read their ratio.
struct Measurement {
    var lua: Double
    var baseline: Double
    /// Extra columns, e.g. `cat`'s figure for the file combine.
    /// A second ratio with a target of its own (e.g. peak memory, besides time).
    var aux: Double? = nil
    var notes: String = ""
    /// For targets the two figures cannot express alone (e.g. a thread limit): whether this
    /// run met them. Every run must, besides the row's `meets`.
    var meets: Bool? = nil
    /// A row whose target holds for every test of a load (redis-benchmark's PING, SET, ...):
    /// each test's two figures in this run. The row is then judged on each test's median over
    /// the runs, its worst test deciding, rather than on the median of each run's worst test
    /// (a minimum of noisy ratios, below 1 for two identical servers).
    var tests: [String: (lua: Double, baseline: Double)] = [:]
}

struct Row: Sendable {
    enum Better: Sendable { case higher, lower }
    let name: String
    let unit: String
    let baselineName: String
    let better: Better
    /// The target as the issue states it, e.g. ">= 0.9x native".
    let target: String
    /// Whether the medians meet the target: (lua, baseline, ratio) -> Bool.
    let meets: @Sendable (Double, Double, Double) -> Bool
    /// The second ratio's name and target, if the row has one (see `Measurement.aux`).
    var auxName: String? = nil
    var auxMeets: (@Sendable (Double) -> Bool)? = nil
    /// Runs once at the given size factor (1 = full size; the smoke test uses a small one).
    let measure: @Sendable (_ scale: Double) throws -> Measurement
}

enum BenchMain {
    static func run(_ arguments: [String]) {
        var scale = 1.0, repeats = 5
        var only: Set<String> = []
        var args = arguments.dropFirst().makeIterator()
        while let a = args.next() {
            switch a {
            case "--quick": scale = 0.02; repeats = 1
            case "--scale": scale = Double(args.next() ?? "") ?? scale
            case "--repeat": repeats = Int(args.next() ?? "") ?? repeats
            case "--rows": only = Set((args.next() ?? "").split(separator: ",").map(String.init))
            case "--before": BeforeRows.cli = args.next()
            case "--list":
                for r in Rows.all { print(r.name) }
                return
            default:
                print("usage: luadispatch-bench [--quick] [--scale F] [--repeat N] [--rows a,b] [--before LUADISPATCH] [--list]")
                exit(2)
            }
        }
        let load = MachineLoad.busyFraction()
        print("luadispatch benchmark: \(ProcessInfo.processInfo.activeProcessorCount) cores, scale \(scale), \(repeats) repeats, medians")
        print(load > 0.25
              ? "warning: the machine was busy before measuring (\(Int(load * 100))% of CPU in use by others); figures may be pessimistic"
              : "machine idle before measuring (\(Int(load * 100))% CPU in use)")
        let table = Table(["row", "lua", "baseline", "unit", "ratio", "target", "ok", "notes"])
        var failures = 0
        for row in Rows.all where only.isEmpty || only.contains(row.name) {
            do {
                var runs: [Measurement] = []
                for _ in 0..<repeats { runs.append(try row.measure(scale)) }
                // Each run is one pair measured back to back: the ratio is the median of the
                // pairs' ratios, which cancels load that changes between pairs.
                var lua = median(runs.map(\.lua)), base = median(runs.map(\.baseline))
                var ratio = median(runs.map { $0.lua / $0.baseline })
                var notes = runs.last?.notes ?? ""
                if let byTest = perTest(runs) {
                    (lua, base, ratio) = (byTest.lua, byTest.baseline, byTest.ratio)
                    notes = byTest.notes + "; last run: " + notes
                }
                var ok = row.meets(lua, base, ratio) && runs.allSatisfy { $0.meets ?? true }
                if let auxName = row.auxName {
                    let aux = median(runs.compactMap(\.aux))
                    ok = ok && (row.auxMeets?(aux) ?? true)
                    notes = "\(auxName) " + String(format: "%.2fx (median); ", aux) + notes
                }
                table.add([row.name, fmt(lua), fmt(base), row.unit + " (vs \(row.baselineName))",
                           String(format: "%.2fx", ratio), row.target, ok ? "yes" : "NO", notes])
            } catch {
                failures += 1
                table.add([row.name, "-", "-", row.unit, "-", row.target, "error", "\(error)"])
            }
        }
        table.print()
        exit(failures == 0 ? 0 : 1)
    }

    /// For runs with per-test figures: each test's median ratio over the runs, and the worst
    /// test's (its ratio, and the medians of its two figures). Nil for other rows.
    static func perTest(_ runs: [Measurement]) -> (lua: Double, baseline: Double, ratio: Double, notes: String)? {
        guard let first = runs.first, !first.tests.isEmpty else { return nil }
        let names = first.tests.keys.filter { t in runs.allSatisfy { $0.tests[t] != nil } }.sorted()
        let ratios = Dictionary(uniqueKeysWithValues: names.map { t in
            (t, median(runs.map { $0.tests[t]!.lua / $0.tests[t]!.baseline }))
        })
        guard let worst = names.min(by: { ratios[$0]! < ratios[$1]! }) else { return nil }
        let list = names.map { "\($0) \(String(format: "%.2f", ratios[$0]!))x" }.joined(separator: ", ")
        return (median(runs.map { $0.tests[worst]!.lua }), median(runs.map { $0.tests[worst]!.baseline }),
                ratios[worst]!, "each test's median ratio over \(runs.count) runs: \(list); worst \(worst)")
    }

    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        return s.isEmpty ? .nan : s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    static func fmt(_ x: Double) -> String {
        if x.isNaN { return "-" }
        if abs(x) >= 1000 { return String(format: "%.0f", x) }
        if abs(x) >= 10 { return String(format: "%.1f", x) }
        return String(format: "%.3f", x)
    }
}

/// A plain-text table, columns padded to their widest cell.
final class Table {
    private var rows: [[String]]
    init(_ header: [String]) { rows = [header] }
    func add(_ row: [String]) { rows.append(row) }
    func print() {
        let widths = rows[0].indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        for r in rows {
            Swift.print(r.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
    }
}

/// How busy the machine is: the share of CPU time not idle over a short window.
enum MachineLoad {
    static func busyFraction(window: Double = 0.5) -> Double {
        func sample() -> (busy: Double, total: Double)? {
            guard let line = try? String(contentsOfFile: "/proc/stat", encoding: .utf8).split(separator: "\n").first
            else { return nil }
            let v = line.split(separator: " ").dropFirst().compactMap { Double($0) }
            guard v.count >= 5 else { return nil }
            let idle = v[3] + v[4]
            let total = v.reduce(0, +)
            return (total - idle, total)
        }
        guard let a = sample() else { return 0 }
        Thread.sleep(forTimeInterval: window)
        guard let b = sample(), b.total > a.total else { return 0 }
        return (b.busy - a.busy) / (b.total - a.total)
    }
}

/// Runs Lua code in a fresh interpreter; the code reports figures with `bench.report(x)`.
enum LuaBench {
    /// `tracing`: as `Runtime(tracing:traceLimit:)`.
    /// `setup` registers what the code needs besides `bench`.
    static func run(_ code: String, tracing: Bool? = nil, traceLimit: Int? = nil,
                    setup: (Runtime) -> Void = { _ in }) throws -> [Double] {
        let figures = Figures()
        let runtime = Runtime(tracing: tracing, traceLimit: traceLimit)
        setup(runtime)
        runtime.register(module: "bench", functions: [
            "report": { args in
                figures.append(args.compactMap(\.doubleValue))
                return []
            },
            "rss": { _ in [.integer(Memory.rss())] },
            "heap": { _ in [.integer(Memory.heap())] },
        ])
        do { try runtime.run(string: code, name: "=bench") } catch {
            throw BenchError("Lua benchmark failed: \(error)")
        }
        runtime.runUntilIdle()
        runtime.close()
        return figures.values
    }
}

final class Figures: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Double] = []
    func append(_ xs: [Double]) { lock.withLock { stored += xs } }
    var values: [Double] { lock.withLock { stored } }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

enum Memory {
    /// Bytes allocated with malloc and not freed (main arena, where the main thread allocates).
    static func heap() -> Int { Int(ld_heap_in_use()) }

    /// Resident set size in bytes.
    static func rss() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = s.split(separator: " ").compactMap { Int($0) }
        return pages.count > 1 ? pages[1] * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }
}

/// Seconds elapsed running `body`.
func timed(_ body: () throws -> Void) rethrows -> Double {
    let t0 = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
}
