import CLua
import CLuaShim

/// A Lua function held by Swift: one a host function received, a chunk returned, or read from a
/// table. Store it anywhere and call it later from any thread, or from `async` code. The function
/// stays alive while any copy of this value exists (Lua may drop it meanwhile), and is released
/// when the last copy is dropped.
///
/// Each Swift argument is one Lua argument, converted by `LuaConvertible`; errors raised by the
/// function come back as `LuaScriptError`, with the message and Lua's traceback.
public struct LuaFunction: Sendable, Hashable, CustomStringConvertible {
    let handle: LuaHandle

    /// Anchors the function at `i` of `L`. Lock held.
    init(_ L: OpaquePointer, _ i: Int32, _ runtime: Runtime) {
        handle = LuaHandle(L, i, runtime)
    }

    /// The interpreter the function belongs to.
    public var runtime: Runtime { handle.runtime }

    public var description: String { "function: 0x" + String(handle.address, radix: 16) }

    public static func == (a: LuaFunction, b: LuaFunction) -> Bool { a.handle.refersToSameValue(as: b.handle) }
    public func hash(into h: inout Hasher) { h.combine(handle.address) }

    // MARK: calls from any thread

    /// Calls the function with the interpreter held (waiting for it if another thread runs Lua)
    /// and returns all its results, copied. From inside a host function or method of the same
    /// interpreter, the call is nested and runs at once.
    @discardableResult
    public func call<each A: LuaConvertible>(_ arguments: repeat each A) throws(LuaScriptError) -> [LuaValue] {
        let rt = handle.runtime
        return try rt.withInterpreter { T throws(LuaScriptError) in
            let count = try push(T, repeat each arguments)
            try rt.protectedCall(T, count)
            return try rt.values(T, from: 2)
        }
    }

    /// The same, with the first result converted to `R` (nil, or no result, is nil for an
    /// optional `R`).
    public func call<each A: LuaConvertible, R: LuaConvertible>(_ arguments: repeat each A,
                                                              returning _: R.Type) throws(LuaScriptError) -> R {
        let rt = handle.runtime
        return try rt.withInterpreter { T throws(LuaScriptError) in
            let count = try push(T, repeat each arguments)
            try rt.protectedCall(T, count, results: 1)
            do { return try R.read(from: LuaSlot(T, 2)) } catch {
                throw LuaScriptError(message: "result #1: \(error)")
            }
        }
    }

    /// The same, with the first results converted to a tuple's types, one result each (missing
    /// results are nil): `call(path, returning: (String, Int).self)` for Lua's `return s, n`.
    public func call<each A: LuaConvertible, each R: LuaConvertible>(_ arguments: repeat each A,
                                                                   returning _: (repeat each R).Type) throws(LuaScriptError) -> (repeat each R) {
        let rt = handle.runtime
        return try rt.withInterpreter { T throws(LuaScriptError) in
            let count = try push(T, repeat each arguments)
            var wanted: Int32 = 0
            for _ in repeat (each R).self { wanted += 1 }
            try rt.protectedCall(T, count, results: wanted)
            var index: Int32 = 1
            return (repeat try Self.result((each R).self, T, &index))
        }
    }

    /// Result `index` (advancing it) of a call whose results start at 2.
    private static func result<R: LuaConvertible>(_: R.Type, _ T: OpaquePointer, _ index: inout Int32) throws(LuaScriptError) -> R {
        index += 1
        do { return try R.read(from: LuaSlot(T, index)) } catch {
            throw LuaScriptError(message: "result #\(index - 1): \(error)")
        }
    }

    /// Calls with an argument list made at run time.
    @discardableResult
    public func call(arguments: [LuaValue]) throws(LuaScriptError) -> [LuaValue] {
        let rt = handle.runtime
        return try rt.withInterpreter { T throws(LuaScriptError) in
            try pushFunction(T, Int32(arguments.count))
            for (i, a) in arguments.enumerated() {
                do { try a.push(T) } catch { throw LuaScriptError(message: "argument #\(i + 1): \(error)") }
            }
            try rt.protectedCall(T, Int32(arguments.count))
            return try rt.values(T, from: 2)
        }
    }

    // MARK: calls from async code

    /// Calls the function from `async` code without blocking the caller's thread: the call waits
    /// for the interpreter on one of the runtime's own threads (`CallThreads`), never on a Swift
    /// concurrency thread or a Dispatch worker, and the caller resumes with the results.
    @discardableResult
    public func call<each A: LuaConvertible & Sendable>(_ arguments: repeat each A) async throws(LuaScriptError) -> [LuaValue] {
        let arguments = (repeat each arguments)
        return try await offThread { () throws(LuaScriptError) in try call(repeat each arguments) }
    }

    /// The same, with the first result converted to `R`.
    public func call<each A: LuaConvertible & Sendable, R: LuaConvertible & Sendable>(
        _ arguments: repeat each A, returning _: R.Type
    ) async throws(LuaScriptError) -> R {
        let arguments = (repeat each arguments)
        return try await offThread { () throws(LuaScriptError) in try call(repeat each arguments, returning: R.self) }
    }

    /// Calls with an argument list made at run time, from `async` code.
    @discardableResult
    public func call(arguments: [LuaValue]) async throws(LuaScriptError) -> [LuaValue] {
        try await offThread { () throws(LuaScriptError) in try call(arguments: arguments) }
    }

    // MARK: pushing

    /// Pushes the function and `arguments`; returns the argument count. Lock held.
    private func push<each A: LuaConvertible>(_ T: OpaquePointer, _ arguments: repeat each A) throws(LuaScriptError) -> Int32 {
        var count: Int32 = 0
        for _ in repeat (each A).self { count += 1 }
        try pushFunction(T, count)
        let base = lua_gettop(T)
        let stack = LuaStack(T, spreads: true)   // a LuaVariadic is that many arguments
        var index: Int32 = 0
        for argument in repeat each arguments {
            index += 1
            do { try argument.push(to: stack) } catch { throw LuaScriptError(message: "argument #\(index): \(error)") }
        }
        return lua_gettop(T) - base
    }

    private func pushFunction(_ T: OpaquePointer, _ count: Int32) throws(LuaScriptError) {
        guard lua_checkstack(T, count + 2) != 0 else { throw LuaScriptError(message: "too many arguments") }
        do { try handle.push(T) } catch { throw LuaScriptError(message: error.description) }
    }
}

/// Runs `body` on one of the runtime's call threads and resumes the caller with its outcome:
/// an `async` caller never blocks its thread.
func offThread<T: Sendable>(_ body: @escaping @Sendable () throws(LuaScriptError) -> T) async throws(LuaScriptError) -> T {
    let result: Result<T, LuaScriptError> = await withCheckedContinuation { continuation in
        CallThreads.shared.submit {
            do throws(LuaScriptError) { continuation.resume(returning: .success(try body())) } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}
