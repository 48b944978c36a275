import Dispatch
import Foundation
import Synchronization
import XCTest
@testable import LuaDispatch

/// Runs Lua through a fresh `Runtime` on the test's (main) thread and drives the main queue
/// until idle, as the CLI does (through `runScript`, as `runLua` does). `t.emit(...)` records a
/// line; uncaught errors are recorded too. A watchdog ends the process if a test hangs, so a
/// hang fails instead of stalling the suite.
final class IOHarness: @unchecked Sendable {
    let runtime: Runtime
    private let recorder = Recorder()

    /// Lines a test collects from its own host functions.
    final class Lines: Sendable {
        private let m = Mutex<[String]>([])
        func append(_ line: String) { m.withLock { $0.append(line) } }
        var all: [String] { m.withLock { $0 } }
    }

    init(limits: Runtime.Limits = .none) {
        runtime = TestRuntimes.make(limits: limits)
        recorder.attach(to: runtime)
    }

    static func render(_ v: LuaValue) -> String { Recorder.render(v) }

    /// Runs `code` (with `dispatch` and `t` already required) and waits until no work is left.
    @discardableResult
    func run(_ code: String, expectErrors: Bool = false, file: StaticString = #filePath, line: UInt = #line) -> [String] {
        let ok = runScript(code, in: runtime, recorder: recorder, prelude: "local dispatch = require('dispatch')\nlocal t = require('t')\n",
                           name: "=(command line)", driveAfterFailure: true, watchdog: (60, "IOHarness"), file: file, line: line)
        XCTAssertTrue(ok, "script failed to run: \(errors)", file: file, line: line)
        if !expectErrors { XCTAssertEqual(errors, [], "uncaught Lua errors", file: file, line: line) }
        return output
    }

    var output: [String] { recorder.snapshot.0.map(Recorder.render) }
    var errors: [String] { recorder.snapshot.1.map(Recorder.render) }

    /// A Lua string literal for `s`.
    static func lua(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "luadispatch-io-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Open descriptors of this process.
    static func openDescriptorCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }
}
