import Dispatch
import Foundation
import XCTest
import Synchronization
@testable import LuaDispatch

/// What one Lua run left behind: values passed to `t.record(...)`, uncaught errors.
struct LuaRun {
    struct Failure {
        let message: String
        let traceback: String
        let label: String?
    }

    let ok: Bool
    let records: Records
    let errors: [Failure]
    let runtime: Runtime

    /// The first value of each record.
    var values: [LuaValue] { records.map { $0.first ?? .nil } }
    var strings: [String] { values.compactMap(\.stringValue) }
    var ints: [Int] { values.compactMap(\.intValue) }
}

final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var records: [[LuaValue]] = []
    private var errors: [LuaRun.Failure] = []

    func record(_ values: [LuaValue]) { lock.withLock { records.append(values) } }
    func fail(_ f: LuaRun.Failure) { lock.withLock { errors.append(f) } }
    var snapshot: ([[LuaValue]], [LuaRun.Failure]) { lock.withLock { (records, errors) } }
}

/// Runs `code` in a new interpreter on the main thread, then services the main queue until the
/// runtime is idle (as the CLI does). `require("t").record(...)` records values for the test.
/// With `timeout`, the main queue is serviced for at most that many seconds, and work still
/// left then fails the test (instead of hanging it).
@discardableResult
func runLua(_ code: String, drive: Bool = true, timeout: Double? = nil, setup: (Runtime) -> Void = { _ in },
            file: StaticString = #filePath, line: UInt = #line) -> LuaRun {
    let runtime = TestRuntimes.make()
    setup(runtime)
    let recorder = Recorder()
    recorder.attach(to: runtime)
    let ok = runScript(code, in: runtime, recorder: recorder, prelude: "local dispatch = require('dispatch'); local t = require('t')\n",
                       name: "=test", drive: drive, timeout: timeout, file: file, line: line)
    let (records, errors) = recorder.snapshot
    return LuaRun(ok: ok, records: Records(records), errors: errors, runtime: runtime)
}

/// The records of a run. A record the script did not make reads as empty and fails the test
/// that asked for it, rather than trapping (which would end every later test of the process).
struct Records: RandomAccessCollection, Equatable, ExpressibleByArrayLiteral, CustomStringConvertible {
    let all: [[LuaValue]]
    init(_ all: [[LuaValue]]) { self.all = all }
    init(arrayLiteral elements: [LuaValue]...) { all = elements }
    var startIndex: Int { 0 }
    var endIndex: Int { all.count }
    var description: String { all.description }
    subscript(i: Int) -> [LuaValue] {
        guard all.indices.contains(i) else {
            XCTFail("no record #\(i): the script made \(all.count): \(all)")
            return []
        }
        return all[i]
    }
}

extension Recorder {
    /// Makes `runtime`'s module `t` record here (`t.record(...)`, and `t.emit(...)`, its alias
    /// for `IOHarness`), and its uncaught errors.
    func attach(to runtime: Runtime) {
        let record: @Sendable ([LuaValue]) throws -> [LuaValue] = { [self] args in
            self.record(args)
            return []
        }
        runtime.register(module: "t", functions: ["record": record, "emit": record])
        runtime.uncaughtErrorHandler = { [self] error in
            fail(.init(message: error.message, traceback: error.traceback, label: error.label))
        }
    }
}

/// The one way the tests run a script: `prelude` + `code` in `runtime` on this (main) thread,
/// a failing main chunk recorded in `recorder`; then, with `drive` (and the chunk ran, or
/// `driveAfterFailure`), the main queue is serviced until the runtime is idle: for at most
/// `timeout` seconds if given (work left then fails the test). With `watchdog`, a hang past
/// that many seconds ends the process with a report naming `who`, so that a hang fails instead
/// of stalling the suite. Returns whether the main chunk ran.
@discardableResult
func runScript(_ code: String, in runtime: Runtime, recorder: Recorder, prelude: String, name: String,
               drive: Bool = true, driveAfterFailure: Bool = false, timeout: Double? = nil,
               watchdog: (seconds: Double, who: String)? = nil,
               file: StaticString = #filePath, line: UInt = #line) -> Bool {
    let dog = watchdog.map { watchdog in
        DispatchWorkItem { [runtime, recorder] in
            // What the script had done and what keeps the runtime busy (read from counters, so
            // this works while Lua code is stuck), so that a hang seen once in CI says why.
            let threads = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))?
                .split(separator: "\n").first { $0.hasPrefix("Threads:") }.map(String.init) ?? "Threads: ?"
            let (records, errors) = recorder.snapshot
            let report = """
                \(watchdog.who): test at line \(line) hung for \(Int(watchdog.seconds)) s
                  emitted: \(records.map(Recorder.render))
                  uncaught: \(errors.map(Recorder.render))
                  outstanding: \(runtime.outstandingWork() ?? "nothing")
                  process: \(threads)

                """
            FileHandle.standardError.write(report.data(using: .utf8)!)
            exit(99)
        }
    }
    if let dog, let watchdog { DispatchQueue.global().asyncAfter(deadline: .now() + watchdog.seconds, execute: dog) }
    defer { dog?.cancel() }
    var ok = true
    do {
        try runtime.run(string: prelude + code, name: name)
    } catch {
        ok = false
        recorder.fail(.init(message: error.message, traceback: error.traceback, label: nil))
    }
    if drive && (ok || driveAfterFailure) {
        if let timeout {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while runtime.pendingWork > 0 && Date() < deadline {
                _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.01))
            }
            XCTAssertEqual(runtime.pendingWork, 0, "work left after \(timeout) s", file: file, line: line)
        } else {
            runtime.runUntilIdle()
        }
    }
    return ok
}

extension Recorder {
    /// A record as one line: its values separated by spaces, integral numbers without ".0".
    static func render(_ values: [LuaValue]) -> String { values.map(render).joined(separator: " ") }

    static func render(_ v: LuaValue) -> String {
        switch v {
        case .string(let s): s
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: String(Int(d))
        default: v.description
        }
    }

    /// An uncaught error as "label: message" ("-" without a label).
    static func render(_ f: LuaRun.Failure) -> String { "\(f.label ?? "-"): \(f.message)" }
}

/// Asserts the run finished without any uncaught error.
func assertClean(_ run: LuaRun, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertTrue(run.ok, "main chunk failed: \(run.errors.map(\.message))", file: file, line: line)
    XCTAssertTrue(run.errors.isEmpty, "uncaught errors: \(run.errors.map(\.message))", file: file, line: line)
}

/// Runs `code`, which must raise; returns the error message (from `pcall` inside Lua).
func luaError(_ code: String, file: StaticString = #filePath, line: UInt = #line) -> String {
    let run = runLua("""
        local ok, err = pcall(function()
        \(code)
        end)
        t.record(ok, tostring(err))
        """)
    assertClean(run, file: file, line: line)
    guard let r = run.records.first, r.count == 2 else {
        XCTFail("nothing recorded", file: file, line: line)
        return ""
    }
    XCTAssertEqual(r[0], .boolean(false), "expected an error, got success", file: file, line: line)
    return r[1].stringValue ?? ""
}

/// The interpreters the tests make. A runtime that nobody closes is never freed (its Lua objects
/// and it reference each other), so at exit, before LeakSanitizer looks, every one is closed that
/// has no block running Lua (closing waits for those, and a test may leave one parked for ever);
/// the list keeps the rest reachable. `scripts/sanitize/asan` relies on this.
enum TestRuntimes {
    nonisolated(unsafe) private static var all: [Runtime] = []
    private static let lock = NSLock()
    private static let installExitHook: Void = { atexit { TestRuntimes.closeAll() } }()

    /// A runtime made as `Runtime(...)` with the same arguments, closed at exit if still open.
    static func make(libraries: LuaLibraries = .all, ignoreEnvironment: Bool = false, tracing: Bool? = nil,
                     traceLimit: Int? = nil, switchInterval: Double? = nil, limits: Runtime.Limits = .none) -> Runtime {
        _ = installExitHook
        let rt = untracked(libraries: libraries, ignoreEnvironment: ignoreEnvironment, tracing: tracing,
                           traceLimit: traceLimit, switchInterval: switchInterval, limits: limits)
        lock.withLock { all.append(rt) }
        return rt
    }

    /// A runtime the list does not hold, for tests that check a runtime is freed (the list would
    /// keep it alive) or that close each of many and bound memory (the list would keep them all).
    /// The test must close it itself.
    static func untracked(libraries: LuaLibraries = .all, ignoreEnvironment: Bool = false, tracing: Bool? = nil,
                          traceLimit: Int? = nil, switchInterval: Double? = nil, limits: Runtime.Limits = .none) -> Runtime {
        Runtime(libraries: libraries, ignoreEnvironment: ignoreEnvironment, tracing: tracing, traceLimit: traceLimit,
                switchInterval: switchInterval, limits: limits)
    }

    static func closeAll() {
        let runtimes = lock.withLock { all }
        for rt in runtimes where rt.ledger.running.load(ordering: .acquiring) == 0 { rt.close() }
    }
}

/// Whether this process runs under AddressSanitizer, whose quarantine keeps freed memory
/// resident (so resident-memory bounds hold only for the plain build).
let underAddressSanitizer: Bool = dlsym(dlopen(nil, RTLD_NOW), "__asan_init") != nil
