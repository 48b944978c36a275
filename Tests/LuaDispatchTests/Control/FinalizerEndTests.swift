import Dispatch
import Foundation
import XCTest
@testable import LuaDispatch

/// An end leaves the collection whose finalizer it ended (control/finalizers.c): Lua 5.4 turns
/// a finalizer's error into a warning and goes on with the next, so finalizers that make more
/// finalizers kept one `collectgarbage` call going for ever in a Swift host, and a hundred
/// looping ones each waited for a signal of their own.
final class FinalizerEndTests: XCTestCase {
    static let chain = """
        local function mk() setmetatable({}, {__gc = function() if not stop then mk() mk() end end}) end
        mk()
        while true do collectgarbage() end
        """

    private final class Box<T: Sendable>: @unchecked Sendable {
        let lock = NSLock()
        var value: T
        init(_ value: T) { self.value = value }
        func get() -> T { lock.withLock { value } }
        func set(_ v: T) { lock.withLock { value = v } }
    }

    /// `body` on another thread; nil if it did not return within `seconds` (a leaked lock).
    private func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let result = Box<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            result.set(body())
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return result.get()
    }

    private func seconds(since t: DispatchTime) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t.uptimeNanoseconds) / 1e9 }

    func testAFinalizerChainEndsAtTheTimeLimitAndTheRuntimeGoesOn() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let started = DispatchTime.now()
        let ended: LuaScriptError? = within(30) { () -> LuaScriptError? in
            do {
                _ = try rt.run(string: Self.chain, timeLimit: 0.5)
                return nil
            } catch {
                return error as? LuaScriptError
            }
        } ?? nil
        let took = seconds(since: started)
        XCTAssertEqual(ended?.kind, .timeLimit, "\(String(describing: ended))")
        XCTAssertTrue(ended?.message.contains("time limit exceeded") ?? false, "\(String(describing: ended))")
        // 0.5 s of limit; the collections it must wait for (marking and sweeping a heap of
        // finalizers doubled each time) and a loaded machine take the rest. It ran for ever.
        XCTAssertLessThan(took, 3.0)
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        // The same runtime runs the next script: the interpreter was given back, its state whole.
        let next = within(20) { try? rt.run(string: "stop = true collectgarbage() return ('x'):rep(3)") }
        XCTAssertEqual(next ?? nil, [.string("xxx")])
    }

    /// The first finalizer the end reaches leaves the collection: the run ends there, and the
    /// others start only in the end's clean-up (each ended), not in the run (each started and
    /// waited for its own signal before: a hundred for a hundred), nor in the next script.
    func testAHundredLoopingFinalizersEndAtTheFirst() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let count = Box(0)
        rt.register(function: "started") { (_: [LuaValue]) -> [LuaValue] in
            count.set(count.get() + 1)
            return []
        }
        let started = DispatchTime.now()
        XCTAssertThrowsError(try rt.run(string: """
            for i = 1, 100 do setmetatable({}, {__gc = function() started() while true do end end}) end
            collectgarbage()
            """, timeLimit: 0.5)) { XCTAssertEqual(($0 as? LuaScriptError)?.kind, .timeLimit, "\($0)") }
        // Read at once: the clean-up, which now has the interpreter, starts one a millisecond.
        let inTheRun = count.get()
        XCTAssertLessThan(seconds(since: started), 2.0)
        XCTAssertLessThan(inTheRun, 50)
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        XCTAssertEqual(count.get(), 100)
        let next = within(20) { try? rt.run(string: "collectgarbage() return 1 + 1") }
        XCTAssertEqual(next ?? nil, [.integer(2)])
    }

    /// Finalizers that a binding's allocation runs (Swift frames between them and the script's
    /// protected call) keep Lua's warnings: the end must not be raised through those frames.
    /// Each is ended by a signal of its own, and the run ends once the binding has returned.
    func testFinalizersRunInsideABindingAreNotLeftByRaising() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let stop = Box(false)
        rt.register(function: "stopped") { (_: [LuaValue]) -> [LuaValue] in [.boolean(stop.get())] }
        let started = DispatchTime.now()
        let ended: LuaScriptError? = within(30) { () -> LuaScriptError? in
            do {
                _ = try rt.run(string: """
                    local d = require("dispatch")
                    for i = 1, 20 do setmetatable({}, {__gc = function() while not stopped() do end end}) end
                    while true do d.now() end
                    """, timeLimit: 0.5)
                return nil
            } catch {
                return error as? LuaScriptError
            }
        } ?? nil
        XCTAssertEqual(ended?.kind, .timeLimit, "\(String(describing: ended))")
        XCTAssertLessThan(seconds(since: started), 3.0)
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        stop.set(true)
        let next = within(20) { try? rt.run(string: "collectgarbage() return 1 + 1") }
        XCTAssertEqual(next ?? nil, [.integer(2)])
    }
}
