import Dispatch
import XCTest
@testable import LuaDispatch

/// The limits reach worker interpreters (API.md, "Untrusted scripts": "every Lua state of the
/// runtime counts (worker interpreters too)"): pool workers and `concurrent_map` interpreters
/// charge the runtime's memory limit, and a time limit or `interrupt()` ends their code too.
final class LimitsWorkersTests: XCTestCase {
    private func ended(_ kind: LuaScriptError.Kind, within seconds: Double = 15, _ body: () throws(LuaScriptError) -> Void,
                       file: StaticString = #filePath, line: UInt = #line) {
        let started = DispatchTime.now()
        do {
            try body()
            XCTFail("the script was not ended", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
        }
        XCTAssertLessThan(Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9, seconds,
                          file: file, line: line)
    }

    func testPoolWorkersChargeTheRuntimesMemoryLimit() throws {
        let rt = TestRuntimes.make(limits: .init(memory: 16 << 20))
        defer { rt.close() }
        let before = rt.memoryInUse
        // A worker keeps 6 MB in its globals: the runtime's count shows it.
        let kept = try rt.run(string: """
            local dispatch = require('dispatch')
            pool = dispatch.workers{count = 1}
            local ok, n = pool:submit(function() big = ('x'):rep(6 * 1024 * 1024) return #big end):wait()
            return n
            """)
        XCTAssertEqual(kept, [.integer(6 << 20)])
        XCTAssertGreaterThan(rt.memoryInUse - before, 6 << 20, "the worker's string counts")
        // A job allocating past the limit fails with Lua's message, in the job; the script goes on.
        let results = try rt.run(string: """
            local ok, err = pcall(function()
              return pool:submit(function() local t = {} for i = 1, 1e6 do t[i] = ('y'):rep(64) .. i end end):wait()
            end)
            return ok, tostring(err)
            """)
        XCTAssertEqual(results.first, .boolean(false))
        guard case .string(let message) = results.last else { return XCTFail("\(results)") }
        XCTAssertTrue(message.contains("not enough memory"), message)
        // Its memory is given back once the job's garbage is collected; the pool still works.
        XCTAssertEqual(try rt.run(string: """
            return select(2, pool:submit(function() big = nil collectgarbage() return 'freed' end):wait())
            """), [.string("freed")])
        XCTAssertLessThan(rt.memoryInUse - before, 4 << 20)
        try rt.run(string: "pool:close() pool = nil")
    }

    func testConcurrentMapBodiesChargeTheRuntimesMemoryLimit() throws {
        let rt = TestRuntimes.make(limits: .init(memory: 16 << 20))
        defer { rt.close() }
        let results = try rt.run(string: """
            local dispatch = require('dispatch')
            local ok, err = pcall(dispatch.concurrent_map, 4, function(i)
              local t = {} for k = 1, 1e6 do t[k] = ('z'):rep(64) .. k end
            end)
            local squares = dispatch.concurrent_map(4, function(i) return i * i end)
            return ok, tostring(err), squares[4]
            """)
        XCTAssertEqual(results.first, .boolean(false))
        guard case .string(let message) = results[1] else { return XCTFail("\(results)") }
        XCTAssertTrue(message.contains("not enough memory"), message)
        XCTAssertEqual(results.last, .integer(16))
    }

    func testTimeLimitEndsEndlessJobsAndMapBodiesAndTheRuntimeGoesOn() throws {
        let rt = TestRuntimes.make(limits: .init(time: 0.5))
        defer { rt.close() }
        ended(.timeLimit) { () throws(LuaScriptError) in
            try rt.run(string: """
                local dispatch = require('dispatch')
                pool = dispatch.workers{count = 2}
                local jobs = {}
                for i = 1, 4 do jobs[i] = pool:submit(function() while true do end end) end
                for i = 1, 4 do jobs[i]:wait() end
                """)
        }
        XCTAssertTrue(rt.waitUntilIdle(timeout: 15), "the ended jobs drained: \(rt.pendingWork) left")
        // The same pool runs the next script's jobs normally.
        XCTAssertEqual(try rt.run(string: "return select(2, pool:submit(function() return 6 * 7 end):wait())"), [.integer(42)])
        ended(.timeLimit) { () throws(LuaScriptError) in
            try rt.run(string: """
                require('dispatch').concurrent_map(2, function(i) while true do pcall(function() while true do end end) end end)
                """)
        }
        XCTAssertEqual(try rt.run(string: """
            return require('dispatch').concurrent_map(3, function(i) return i + 1 end)[3]
            """), [.integer(4)])
        try rt.run(string: "pool:close() pool = nil")
    }

    func testInterruptEndsAJobWaitingOnAChannel() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { rt.interrupt() }
        ended(.interrupted) { () throws(LuaScriptError) in
            try rt.run(string: """
                local dispatch = require('dispatch')
                local pool = dispatch.workers{count = 1}
                local ch = dispatch.channel()
                pool:submit(function(c) return c:receive() end, ch):wait()
                """)
        }
        XCTAssertTrue(rt.waitUntilIdle(timeout: 15), "work left: \(rt.pendingWork)")
        XCTAssertEqual(try rt.run(string: "return 'next'"), [.string("next")])
    }
}
