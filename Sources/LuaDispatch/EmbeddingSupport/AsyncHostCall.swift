import CLua
import CLuaShim
import Dispatch
import Synchronization

/// One call of an async host function: the Swift `Task` that runs the function, and its
/// outcome. Lua waits for it as for any other blocking call (`Runtime.wait`): a task is
/// suspended, holding no thread; a plain block waits with the interpreter released. Ending the
/// wait any other way than by the outcome (the task cancelled, Ctrl-C, the interpreter closing)
/// cancels the Swift `Task`.
final class AsyncHostCall: @unchecked Sendable {
    /// What the function produced: a way to push its results (lock held), or its error.
    enum Outcome: Sendable {
        case value(@Sendable (LuaStack) throws(LuaConversionError) -> Int32)
        case failure(any Error)
    }

    private struct State {
        var outcome: Outcome?
        /// Where and how to end the wait once the outcome is in (armed, not ended yet).
        var delivery: (queue: DispatchQueue, block: @Sendable () -> Void)?
    }

    private let state = Mutex(State())
    private let run: @Sendable () async -> Outcome
    /// Set by `start`, read by `end`: both under the interpreter lock.
    private var task: Task<Void, Never>?

    init(_ run: @escaping @Sendable () async -> Outcome) { self.run = run }

    /// Starts the function in a Swift task. Lock held.
    func start() {
        task = Task.detached { [self, run] in finish(await run()) }
    }

    private func finish(_ outcome: Outcome) {
        let delivery = state.withLock { s in
            s.outcome = outcome
            defer { s.delivery = nil }
            return s.delivery
        }
        if let delivery { delivery.queue.async(execute: delivery.block) }
    }

    var isFinished: Bool { state.withLock { $0.outcome != nil } }

    /// Lock held.
    func arm(_ waiter: Waiter) {
        let delivery = waiter.delivery()
        let finished = state.withLock { s in
            if s.outcome == nil { s.delivery = delivery }
            return s.outcome != nil
        }
        if finished { waiter.finish(.done) }
    }

    /// Lock held.
    func end(_ outcome: WaitOutcome) {
        state.withLock { $0.delivery = nil }
        if outcome != .done { task?.cancel() }
    }

    /// Pushes the results, or raises the function's error. Lock held.
    func results(_ a: Args) throws(LuaError) -> Int32 {
        switch state.withLock({ $0.outcome }) {
        case .value(let push)?:
            do { return try push(LuaStack(a.L)) } catch { throw .message("\(a.name): result: \(error)") }
        case .failure(let error)?:
            throw a.failure(error)
        case nil:
            throw .message("\(a.name): internal error: no outcome")
        }
    }
}

struct AsyncHostWait: Waitable {
    let call: AsyncHostCall

    var kind: String { "async host function" }
    func begin() throws(LuaError) { call.start() }
    func poll() -> Bool { call.isFinished }
    func arm(_ waiter: Waiter) { call.arm(waiter) }
    func end(_ outcome: WaitOutcome) { call.end(outcome) }
    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 { try call.results(a) }
}

extension HostCallable {
    static func async<each A: LuaConvertible & Sendable, R: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) async throws -> R
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let arguments = (repeat try a.argument((each A).self, &i))
            let call = AsyncHostCall {
                do { return .value(pushing(try await body(repeat each arguments))) } catch { return .failure(error) }
            }
            return try a.runtime.wait(a, AsyncHostWait(call: call))
        }
    }

    static func async<each A: LuaConvertible & Sendable, each R: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) async throws -> (repeat each R)
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let arguments = (repeat try a.argument((each A).self, &i))
            let call = AsyncHostCall {
                do {
                    let results = try await body(repeat each arguments)
                    return .value(pushing(repeat each results))
                } catch { return .failure(error) }
            }
            return try a.runtime.wait(a, AsyncHostWait(call: call))
        }
    }

    static func async<each A: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) async throws -> Void
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let arguments = (repeat try a.argument((each A).self, &i))
            let call = AsyncHostCall {
                do {
                    try await body(repeat each arguments)
                    return .value { _ throws(LuaConversionError) in 0 }
                } catch { return .failure(error) }
            }
            return try a.runtime.wait(a, AsyncHostWait(call: call))
        }
    }

    static func asyncMethod<Object: LuaUserData, each A: LuaConvertible & Sendable, R: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (Object, repeat each A) async throws -> R
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let object = try a.argument(Object.self, &i)
            let arguments = (repeat try a.argument((each A).self, &i))
            let call = AsyncHostCall {
                do { return .value(pushing(try await body(object, repeat each arguments))) } catch { return .failure(error) }
            }
            return try a.runtime.wait(a, AsyncHostWait(call: call))
        }
    }
}

/// Pushes `value` as one result.
private func pushing<R: LuaConvertible & Sendable>(_ value: R) -> @Sendable (LuaStack) throws(LuaConversionError) -> Int32 {
    { stack throws(LuaConversionError) in
        let top = lua_gettop(stack.L)
        try value.push(to: LuaStack(stack.L, spreads: true))   // a LuaVariadic: each value
        return lua_gettop(stack.L) - top
    }
}

/// Pushes a tuple's values as that many results.
private func pushing<each R: LuaConvertible & Sendable>(_ values: repeat each R) -> @Sendable (LuaStack) throws(LuaConversionError) -> Int32 {
    let values = (repeat each values)
    return { stack throws(LuaConversionError) in
        let top = lua_gettop(stack.L), spreading = LuaStack(stack.L, spreads: true)
        for value in repeat each values {
            guard lua_checkstack(stack.L, 2) != 0 else { throw LuaConversionError("too many results") }
            try value.push(to: spreading)
        }
        return lua_gettop(stack.L) - top
    }
}
