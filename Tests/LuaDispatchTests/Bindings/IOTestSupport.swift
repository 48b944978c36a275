import Dispatch
import Foundation
import Synchronization
import XCTest
@testable import LuaDispatch

/// Runs Lua through a fresh `Runtime` on the test's (main) thread and drives the main queue
/// until idle, as the CLI does. `t.emit(...)` records a line; uncaught errors are recorded too.
/// A watchdog ends the process if a test hangs, so a hang fails instead of stalling the suite.
final class IOHarness: @unchecked Sendable {
    let runtime = TestRuntimes.make()
    private let lines = Lines()
    private let uncaught = Lines()

    final class Lines: Sendable {
        private let m = Mutex<[String]>([])
        func append(_ line: String) { m.withLock { $0.append(line) } }
        var all: [String] { m.withLock { $0 } }
    }

    init() {
        runtime.register(module: "t", functions: [
            "emit": { [lines] args in
                lines.append(args.map(IOHarness.render).joined(separator: " "))
                return []
            },
        ])
        runtime.uncaughtErrorHandler = { [uncaught] error in
            uncaught.append("\(error.label ?? "-"): \(error.message)")
        }
    }

    static func render(_ v: LuaValue) -> String {
        switch v {
        case .string(let s): s
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: String(Int(d))
        default: v.description
        }
    }

    /// Runs `code` (with `dispatch` and `t` already required) and waits until no work is left.
    @discardableResult
    func run(_ code: String, expectErrors: Bool = false, file: StaticString = #filePath, line: UInt = #line) -> [String] {
        let watchdog = DispatchWorkItem { [runtime, lines, uncaught] in
            // What the script had done and what keeps the runtime busy (read from counters, so
            // this works while Lua code is stuck), so that a hang seen once in CI says why.
            let threads = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))?
                .split(separator: "\n").first { $0.hasPrefix("Threads:") }.map(String.init) ?? "Threads: ?"
            let report = """
                IOHarness: test at line \(line) hung for 60 s
                  emitted: \(lines.all)
                  uncaught: \(uncaught.all)
                  outstanding: \(runtime.outstandingWork() ?? "nothing")
                  process: \(threads)

                """
            FileHandle.standardError.write(report.data(using: .utf8)!)
            exit(99)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
        var ok = true
        do {
            try runtime.run(string: "local dispatch = require('dispatch')\nlocal t = require('t')\n" + code)
        } catch {
            ok = false
            uncaught.append("-: \(error.message)")
        }
        runtime.runUntilIdle()
        watchdog.cancel()
        XCTAssertTrue(ok, "script failed to run: \(errors)", file: file, line: line)
        if !expectErrors { XCTAssertEqual(errors, [], "uncaught Lua errors", file: file, line: line) }
        return output
    }

    var output: [String] { lines.all }
    var errors: [String] { uncaught.all }

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
