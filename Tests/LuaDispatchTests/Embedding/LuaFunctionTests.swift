import Dispatch
import Foundation
import XCTest
@testable import LuaDispatch

/// Lua functions held by Swift: stored, called later from any thread and from async code,
/// released when Swift drops them, errors with their traceback.
final class LuaFunctionTests: XCTestCase {
    /// A runtime with `host.keep(fn)` storing its argument in `box`.
    private func runtime(_ box: FunctionBox) -> Runtime {
        let rt = TestRuntimes.make()
        rt.register(module: "host") { m in
            m.function("keep") { (f: LuaFunction) in box.set(f) }
        }
        return rt
    }

    func testACallbackStoredByAHostFunctionIsCalledLaterWithTypedResults() throws {
        let box = FunctionBox()
        let rt = runtime(box)
        defer { rt.close() }
        try rt.run(string: "require('host').keep(function(a, b, t) return a .. b .. #t, #t end)")
        let f = try XCTUnwrap(box.value)
        XCTAssertEqual(try f.call("x", 1, [true, false]), ["x12", 2])
        XCTAssertEqual(try f.call("y", 2, [Int](), returning: String.self), "y20")
        XCTAssertEqual(try f.call(arguments: ["z", 3, .array([])]), ["z30", 0])
        XCTAssertThrowsError(try f.call("y", 2, [Int](), returning: Int.self)) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "result #1: number expected, got string")
        }
        let g = try rt.load("return nil")
        XCTAssertNil(try g.call(returning: Int?.self))
    }

    /// 10,000 calls of one stored callback from other threads, and 10,000 from concurrent
    /// Swift tasks: every call returns its own result.
    func testTenThousandCallsFromOtherThreadsAndConcurrentTasks() async throws {
        let box = FunctionBox()
        let rt = runtime(box)
        defer { rt.close() }
        // Pure: calls that may run at the same time share no Lua state.
        try rt.run(string: "require('host').keep(function(i) return i * 2, dispatch == nil end)")
        let f = try XCTUnwrap(box.value)
        let sum = CallCounter()
        DispatchQueue.concurrentPerform(iterations: 10_000) { i in
            sum.add(try! f.call(i, returning: Int.self))
        }
        XCTAssertEqual(sum.value, 10_000 * 9_999)
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<10_000 { group.addTask { try await f.call(i, returning: Int.self) } }
            return try await group.reduce(0, +)
        }
        XCTAssertEqual(total, 10_000 * 9_999)
    }

    /// From async code the call does not hold the caller's thread: a Swift task that calls a
    /// function while Lua holds the interpreter (a block computing) gets its result once the
    /// block lets go, and other tasks run on the cooperative threads meanwhile.
    func testAnAsyncCallDoesNotBlockSwiftConcurrencyThreads() async throws {
        let box = FunctionBox()
        let rt = runtime(box)
        defer { rt.close() }
        try rt.run(string: "require('host').keep(function(x) return x + 1 end)")
        let f = try XCTUnwrap(box.value)
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        rt.register(module: "gate") { m in
            m.function("hold") { () in
                entered.signal()
                release.wait()
            }
        }
        try rt.run(string: "require('dispatch').queue('busy'):async(function() require('gate').hold() end)")
        entered.wait()  // a block holds the interpreter now
        let t0 = Date()
        // More concurrent calls than there are cooperative threads: if each blocked its thread
        // waiting for the interpreter, the task that releases the block could never run.
        let results = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<32 { group.addTask { try await f.call(i, returning: Int.self) } }
                return try await group.reduce(0, +)
            }
        }
        let other = Task { () -> Int in 42 }
        let otherValue = await other.value
        XCTAssertEqual(otherValue, 42)
        XCTAssertLessThan(Date().timeIntervalSince(t0), 5, "Swift tasks were held back while Lua was busy")
        release.signal()
        let sum = try await results.value
        XCTAssertEqual(sum, (0..<32).reduce(0, +) + 32)
    }

    func testErrorsCarryTheMessageAndTraceback() throws {
        let box = FunctionBox()
        let rt = runtime(box)
        defer { rt.close() }
        try rt.run(string: """
            local function inner(x) error("bad input " .. x) end
            require('host').keep(function(x) inner(x) end)
            """, name: "=callbacks")
        let f = try XCTUnwrap(box.value)
        XCTAssertThrowsError(try f.call(7)) { e in
            let error = e as! LuaScriptError
            XCTAssertEqual(error.message, "callbacks:1: bad input 7")
            XCTAssertTrue(error.traceback.hasPrefix("stack traceback:"), error.traceback)
            XCTAssertTrue(error.traceback.contains("in upvalue 'inner'") || error.traceback.contains("inner"), error.traceback)
        }
    }

    /// A host function may call a Lua function it was given at once (nested in the call), and
    /// the error of such a call reaches Lua with the host function's name.
    func testNestedCallsFromInsideAHostFunction() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host") { m in
            m.function("map") { (list: [Int], f: LuaFunction) throws -> [Int] in
                try list.map { try f.call($0, returning: Int.self) }
            }
        }
        XCTAssertEqual(try rt.run(string: """
            local host = require('host')
            local doubled = host.map({1, 2, 3}, function(x) return x * 2 end)
            local nested = host.map({1, 2}, function(x) return host.map({x}, function(y) return y + 10 end)[1] end)
            local ok, err = pcall(host.map, {1}, function() error('inside') end)
            return table.concat(doubled, ','), table.concat(nested, ','), err
            """, name: "=t"), ["2,4,6", "11,12", "map: t:4: inside"])
    }

    /// Swift drops the function while Lua still holds it: Lua's copy works and is collected
    /// once Lua drops it too.
    func testReleasedInSwiftWhileLuaStillHoldsIt() throws {
        let box = FunctionBox()
        let rt = runtime(box)
        defer { rt.close() }
        try rt.run(string: """
            weak = setmetatable({}, {__mode = 'v'})
            local f = function() return 'still here' end
            weak[1], held = f, f
            require('host').keep(f)
            """)
        XCTAssertEqual(try box.value?.call(), ["still here"])
        box.set(nil)
        XCTAssertEqual(try rt.run(string: "collectgarbage(); collectgarbage(); return held()"), ["still here"])
        XCTAssertEqual(try rt.run(string: "held = nil; collectgarbage(); collectgarbage(); return weak[1] == nil"), [true])
    }

    /// Lua drops the function while Swift holds it: it stays alive for Swift, and is collected
    /// once Swift drops it too.
    func testCollectedOnlyOnceSwiftDropsIt() throws {
        let box = FunctionBox()
        let rt = runtime(box)
        defer { rt.close() }
        try rt.run(string: """
            weak = setmetatable({}, {__mode = 'v'})
            local f = function(x) return x .. '!' end
            weak[1] = f
            require('host').keep(f)
            """)
        XCTAssertEqual(try rt.run(string: "collectgarbage(); collectgarbage(); return weak[1] ~= nil"), [true])
        XCTAssertEqual(try box.value?.call("kept", returning: String.self), "kept!")
        // Dropped on another thread: the reference is released the next time Lua runs.
        let check = try rt.load("collectgarbage(); collectgarbage(); return weak[1] == nil")
        XCTAssertEqual(try check.call(), [false])
        let dropped = DispatchSemaphore(value: 0)
        Thread { box.set(nil); dropped.signal() }.start()
        dropped.wait()
        XCTAssertEqual(try check.call(), [true])
    }

    func testIdentityAndEquality() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let results = try rt.run(string: "local f = function() end; return f, f, function() end")
        XCTAssertEqual(results[0], results[1])
        XCTAssertNotEqual(results[0], results[2])
        XCTAssertEqual(Set([results[0], results[1], results[2]]).count, 2)
    }

    func testCallsAfterCloseThrow() throws {
        let rt = TestRuntimes.make()
        let f = try rt.load("return 1")
        XCTAssertEqual(try f.call(), [1])
        rt.close()
        XCTAssertThrowsError(try f.call()) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "the interpreter is closed")
        }
    }

    func testAFunctionOfAnotherInterpreterIsRefused() throws {
        let a = TestRuntimes.make(), b = TestRuntimes.make()
        defer { a.close(); b.close() }
        let f = try a.load("return 1")
        let g = try b.load("local f = ...; return type(f)")
        XCTAssertThrowsError(try g.call(f)) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "argument #1: a Lua value of another interpreter cannot be used here")
        }
        XCTAssertThrowsError(try b.call("print", [.function(f)])) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message,
                           "call(\"print\"): argument #1: a Lua value of another interpreter cannot be used here")
        }
    }
}

/// A function slot shared with host closures.
final class FunctionBox: @unchecked Sendable {
    private let lock = NSLock()
    private var f: LuaFunction?
    func set(_ f: LuaFunction?) { lock.withLock { self.f = f } }
    var value: LuaFunction? { lock.withLock { f } }
}
