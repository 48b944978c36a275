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
    let records: [[LuaValue]]
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
    runtime.register(module: "t", functions: [
        "record": { args in
            recorder.record(args)
            return []
        },
    ])
    runtime.uncaughtErrorHandler = { error in
        recorder.fail(.init(message: error.message, traceback: error.traceback, label: error.label))
    }
    var ok = true
    do {
        try runtime.run(string: "local dispatch = require('dispatch'); local t = require('t')\n" + code, name: "=test")
    } catch {
        ok = false
        recorder.fail(.init(message: error.message, traceback: error.traceback, label: nil))
    }
    if ok && drive {
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
    let (records, errors) = recorder.snapshot
    return LuaRun(ok: ok, records: records, errors: errors, runtime: runtime)
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
        for rt in runtimes where rt.running.load(ordering: .acquiring) == 0 { rt.close() }
    }
}

/// Whether this process runs under AddressSanitizer, whose quarantine keeps freed memory
/// resident (so resident-memory bounds hold only for the plain build).
let underAddressSanitizer: Bool = dlsym(dlopen(nil, RTLD_NOW), "__asan_init") != nil
