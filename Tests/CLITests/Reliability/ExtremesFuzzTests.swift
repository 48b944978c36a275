import Foundation
import XCTest

/// The numeric-extremes fuzzer (Tests/lua/extremes.lua): every function and method the module
/// exports, found at run time, and every metamethod of every object type, called with each
/// argument position given math.maxinteger, math.mininteger, 2^53, 2^63, -2^63, ±1e308, ±inf,
/// nan, -0.0, 0, -1, a 1 MiB string, "", a table, a function, nil, true, each object type, and
/// options tables with each numeric option set to each numeric extreme. The calls run in child
/// `luadispatch` processes, a batch of callables each, so that a crash is seen (the last call
/// the child named) rather than ending the test; each call is protected by pcall and each child
/// runs under a time limit. No child may end by a signal, hang, or stop before its last call.
///
/// Not called: `dispatch.exit` (ends the process), `dispatch.run` (serves the main queue until the
/// program's work ends, which the fuzzer's live timers and suspended queues never do),
/// `dispatch.sleep` longer than 10 ms and `concurrent_perform` of more than 1,000 iterations
/// (they do as long as they are asked; the time limit ends them).
final class ExtremesFuzzTests: XCTestCase {
    static var driver: URL { CLI.packageRoot.appendingPathComponent("Tests/lua/extremes.lua") }

    /// Callables per child process.
    private let batch = 12

    func testEveryExportWithNumericExtremes() throws {
        try fuzz(sandboxed: false)
    }

    /// The same under `--sandbox`, where the module is the sandbox's (its functions only: the
    /// sandbox has no debug library to reach the metatables).
    func testEveryExportWithNumericExtremesInTheSandbox() throws {
        try fuzz(sandboxed: true)
    }

    private func fuzz(sandboxed: Bool) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("extremes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let options = (sandboxed ? ["--sandbox"] : []) + ["--time-limit", "120"]
        let listed = try CLI.run(options + [Self.driver.path, "list"], timeout: 60, directory: dir)
        let count = listed.stdout.split(separator: "\n").count
        XCTAssertTrue(listed.stderr.contains("FUZZ-DONE listed \(count)"), listed.stderr.suffix(2000).description)
        XCTAssertGreaterThan(count, sandboxed ? 25 : 140, "callables found")
        let ranges = stride(from: 1, through: count, by: batch).map { ($0, min($0 + batch - 1, count)) }
        let totals = Totals()
        let started = Date()
        // Two children at a time.
        DispatchQueue.concurrentPerform(iterations: 2) { lane in
            for (first, last) in ranges.enumerated().filter({ $0.offset % 2 == lane }).map(\.element) {
                do {
                    let r = try CLI.run(options + [Self.driver.path, "run", "\(first)", "\(last)"], timeout: 300, directory: dir)
                    let named = (sandboxed ? r.stdout : r.stderr).split(separator: "\n")
                        .filter { $0.range(of: #"^\S+ #\d+/\d+ "#, options: .regularExpression) != nil }
                    let done = r.stderr.range(of: #"FUZZ-DONE (\d+) calls (\d+) skipped"#, options: .regularExpression)
                    guard r.status == 1, let done else {
                        XCTFail("callables \(first)-\(last): status \(r.status), last call: \(named.last ?? "none")\n\(r.stderr.suffix(3000))")
                        continue
                    }
                    let numbers = r.stderr[done].split(separator: " ").compactMap { Int($0) }
                    totals.add(calls: numbers[0], skipped: numbers[1])
                } catch {
                    XCTFail("callables \(first)-\(last): \(error)")
                }
            }
        }
        let (calls, skipped) = totals.value
        print("extremes fuzzer\(sandboxed ? " (sandbox)" : ""): \(count) callables, \(calls) calls, \(skipped) skipped, "
              + String(format: "%.1f s", Date().timeIntervalSince(started)))
        XCTAssertGreaterThan(calls, count * 500)
    }
}

private final class Totals: @unchecked Sendable {
    private let lock = NSLock()
    private var calls = 0, skipped = 0
    func add(calls c: Int, skipped s: Int) { lock.withLock { calls += c; skipped += s } }
    var value: (Int, Int) { lock.withLock { (calls, skipped) } }
}
