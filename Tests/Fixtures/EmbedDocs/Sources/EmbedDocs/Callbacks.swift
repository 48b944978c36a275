import Dispatch
import LuaDispatch
import Synchronization

/// The Lua functions a script registers, kept to be called later.
final class Listeners: Sendable {
    private let functions = Mutex<[LuaFunction]>([])
    func add(_ f: LuaFunction) { functions.withLock { $0.append(f) } }
    func notify(_ event: String) throws {
        for f in functions.withLock({ $0 }) { try f.call(event) }
    }
}

// Lua functions as Swift values: stored, called later from any thread, errors with tracebacks.
func callbacks() throws -> LuaFunction {
    let runtime = Runtime()
    let listeners = Listeners()
    runtime.register(module: "events") { m in
        m.function("on") { (f: LuaFunction) in listeners.add(f) }
    }
    try runtime.run(string: """
        local events = require("events")
        events.on(function(name) print("event: " .. name) end)
        """)
    // Later, from another thread:
    DispatchQueue.global().sync { try? listeners.notify("saved") }   // event: saved
    // A function a chunk returns, called with a typed result:
    let double = try runtime.load("return function(x) return 2 * x end").call(returning: LuaFunction.self)
    print(try double.call(21, returning: Int.self))                     // 42
    // An error comes back as a LuaScriptError, with Lua's traceback:
    let failing = try runtime.load("error('out of paper')", name: "=printer")
    do { try failing.call() } catch {
        print(error.message)                                             // printer:1: out of paper
        print(error.traceback.hasPrefix("stack traceback:"))             // true
    }
    return double   // keeps its interpreter alive (close it when done)
}

// From async code, the call waits for the interpreter off the caller's thread.
func asyncCalls(_ double: LuaFunction) async throws {
    let results = try await withThrowingTaskGroup(of: Int.self) { group in
        for i in 1...100 { group.addTask { try await double.call(i, returning: Int.self) } }
        return try await group.reduce(0, +)
    }
    print(results)   // 10100
    double.runtime.close()
}
