import Dispatch
import Foundation
import LuaDispatch
import Synchronization

/// The embedding API (docs/embedding.md): calls across the boundary in an interpreter in this
/// process, each against the closest native Swift equivalent measured in the same run.
enum EmbedRows {
    static let rows: [Row] = [callLua, callLuaAsync, typedHostCall, methodCall]

    /// The Swift side of the native baselines: called through a closure the optimiser cannot
    /// see into, as a host function is.
    final class Adder: LuaUserData, @unchecked Sendable {
        var total = 0
        @inline(never) func add(_ n: Int) -> Int {
            total &+= n
            return total
        }
        static let luaType = LuaType<Adder>("Adder") { t in
            t.method("add") { (a: Adder, n: Int) in a.add(n) }
        }
    }

    actor Counter {
        var n = 0
        func add(_ x: Int) -> Int {
            n &+= x
            return n
        }
    }

    nonisolated(unsafe) static var sink = 0
    nonisolated(unsafe) static var opaque: [@Sendable (Int) -> Int] = [{ $0 &+ 1 }]
    nonisolated(unsafe) static var opaqueAdd: [@Sendable (Int, Int) -> Int] = [{ $0 &+ $1 }]

    /// Nanoseconds per iteration of `body` run `n` times.
    static func perCall(_ n: Int, _ body: (Int) throws -> Void) rethrows -> Double {
        let t = try timed { for i in 0..<n { try body(i) } }
        return t / Double(n) * 1e9
    }

    /// `LuaFunction.call` from Swift: a stored Lua function `function(x) return x + 1 end`,
    /// called with one integer and its result read as `Int`; against a Swift closure call.
    static let callLua = Row(
        name: "embed_call_lua", unit: "ns/call", baselineName: "Swift closure call", better: .lower,
        target: "< 2 us", meets: { lua, _, _ in lua < 2000 }
    ) { scale in
        let n = max(1000, Int(300_000 * scale))
        let rt = Runtime()
        defer { rt.close() }
        let f = try rt.load("return function(x) return x + 1 end").call(returning: LuaFunction.self)
        var sum = 0
        let lua = try perCall(n) { i in sum &+= try f.call(i, returning: Int.self) }
        let untyped = try perCall(n / 2) { i in if case .integer(let r) = try f.call(arguments: [.integer(i)])[0] { sum &+= r } }
        let g = opaque[0]
        let native = perCall(n) { i in sum &+= g(i) }
        sink = sum
        return Measurement(lua: lua, baseline: native,
                           notes: String(format: "untyped call(arguments:) %.0f ns", untyped))
    }

    /// The async form, awaited from a Swift task: the call waits for the interpreter on the
    /// runtime's own threads; against awaiting an actor's method from a task (a hop to another
    /// executor and back).
    static let callLuaAsync = Row(
        name: "embed_call_lua_async", unit: "ns/call", baselineName: "await actor method", better: .lower,
        target: "report", meets: { _, _, _ in true }
    ) { scale in
        let n = max(500, Int(50_000 * scale))
        let rt = Runtime()
        defer { rt.close() }
        let f = try rt.load("return function(x) return x + 1 end").call(returning: LuaFunction.self)
        let counter = Counter()
        let result = Mutex<(Double, Double)>((0, 0))
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            var sum = 0
            var t0 = DispatchTime.now().uptimeNanoseconds
            for i in 0..<n { sum &+= (try? await f.call(i, returning: Int.self)) ?? 0 }
            let lua = Double(DispatchTime.now().uptimeNanoseconds - t0) / Double(n)
            t0 = DispatchTime.now().uptimeNanoseconds
            for i in 0..<n { sum &+= await counter.add(i) }
            let native = Double(DispatchTime.now().uptimeNanoseconds - t0) / Double(n)
            result.withLock { $0 = (lua, native) }
            EmbedRows.sink = sum
            done.signal()
        }
        done.wait()
        let (lua, native) = result.withLock { $0 }
        return Measurement(lua: lua, baseline: native)
    }

    /// A typed host function `(Int, Int) -> Int` called from a Lua loop, against the same
    /// closure called from a Swift loop; the second ratio is against an untyped `HostFunction`
    /// doing the same, called from the same Lua loop.
    static let typedHostCall = Row(
        name: "embed_typed_host_call", unit: "ns/call", baselineName: "Swift closure call", better: .lower,
        target: "typed <= 1.5x untyped", meets: { _, _, _ in true },
        auxName: "typed/untyped", auxMeets: { $0 <= 1.5 }
    ) { scale in
        let n = max(1000, Int(300_000 * scale))
        let add = opaqueAdd[0]
        let figures = try LuaBench.run("""
            local dispatch, bench, host = require("dispatch"), require("bench"), require("embedhost")
            local typed, untyped, s = host.add, host.add_untyped, 0
            local function loop(f)
              local t0 = dispatch.now()
              for i = 1, \(n) do s = s + f(i, 1) end
              return (dispatch.now() - t0) / \(n) * 1e9
            end
            local empty = loop(function(a, b) return a + b end)
            bench.report(loop(typed), loop(untyped), empty)
            """, setup: { rt in
                rt.register(module: "embedhost") { m in
                    m.function("add") { (a: Int, b: Int) -> Int in add(a, b) }
                    m.function("add_untyped") { args in [.integer(add(args[0].intValue ?? 0, args[1].intValue ?? 0))] }
                }
            })
        guard figures.count == 3 else { throw BenchError("expected 3 figures, got \(figures)") }
        var sum = 0
        let native = perCall(n) { i in sum &+= add(i, 1) }
        sink = sum
        return Measurement(lua: figures[0], baseline: native, aux: figures[0] / figures[1],
                           notes: String(format: "untyped %.0f ns; a Lua function in the same loop %.0f ns", figures[1], figures[2]))
    }

    /// `obj:add(1)` on a Swift object from a Lua loop, against `obj.add(1)` from a Swift loop.
    static let methodCall = Row(
        name: "embed_method_call", unit: "ns/call", baselineName: "Swift method call", better: .lower,
        target: "report", meets: { _, _, _ in true }
    ) { scale in
        let n = max(1000, Int(300_000 * scale))
        let adder = Adder()
        let lua = try LuaBench.run("""
            local dispatch, bench, obj = require("dispatch"), require("bench"), require("embedhost").adder
            local t0 = dispatch.now()
            for i = 1, \(n) do obj:add(1) end
            bench.report((dispatch.now() - t0) / \(n) * 1e9)
            """, setup: { rt in rt.register(module: "embedhost") { m in m.value("adder", adder) } })[0]
        let other = Adder()
        let native = perCall(n) { _ in _ = other.add(1) }
        precondition(adder.total == n && other.total == n)
        return Measurement(lua: lua, baseline: native)
    }
}
