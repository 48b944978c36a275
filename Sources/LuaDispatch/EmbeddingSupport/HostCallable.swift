import CLua
import CLuaShim

/// A Swift function as Lua sees it: a C closure of the binding `HostCalls.call` whose second
/// upvalue is a small userdata holding this object (retained; released by the userdata's `__gc`,
/// so a function Lua drops is freed, and `close()` frees them all). Every kind of host function
/// (untyped, typed, async, methods, property accessors, metamethods) is one of these: `body`
/// reads its arguments from the stack and pushes its results.
final class HostCallable: Sendable {
    let name: String
    let body: @Sendable (Args) throws(LuaError) -> Int32

    init(_ name: String, _ body: @escaping @Sendable (Args) throws(LuaError) -> Int32) {
        self.name = name
        self.body = body
    }
}

enum HostCalls {
    /// The binding every host function goes through.
    nonisolated(unsafe) private(set) static var call: Int32 = -1
    /// The registry key of the boxes' metatable (a byte of our own: its address is the key).
    nonisolated(unsafe) static let boxMetatable = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    /// Registers the binding (inside `Module.spec`, with every other binding) and, for each new
    /// interpreter, the boxes' metatable.
    static func install(_ m: inout ModuleSpec) {
        call = Bindings.register("host function") { a throws(LuaError) in
            // nil once the collector ran the box's __gc (another finalizer may still call it).
            guard let box = lua_touserdata(a.L, ld_upvalueindex(2))?.load(as: UnsafeRawPointer?.self) else {
                throw .message("host function called after it was collected")
            }
            let callable = Unmanaged<HostCallable>.fromOpaque(box).takeUnretainedValue()
            return try callable.body(Args(L: a.L, runtime: a.runtime, name: callable.name))
        }
        m.setups.append { _, L in
            lua_createtable(L, 0, 2)
            ld_push_binding(L, Module.spec.gc)
            Lua.setField(L, -2, "__gc")
            Lua.push(L, "host function")
            Lua.setField(L, -2, "__name")
            lua_rawsetp(L, ld_registryindex(), boxMetatable)
            HostObjects.install(L)
        }
    }

    /// Pushes `callable` as a Lua function. Lock held.
    static func push(_ L: OpaquePointer, _ callable: HostCallable) {
        lua_checkstack(L, 3)
        let box = ld_newuserdata(L, MemoryLayout<UnsafeRawPointer>.size)!
        box.storeBytes(of: Unmanaged.passRetained(callable).toOpaque(), as: UnsafeMutableRawPointer?.self)
        lua_rawgetp(L, ld_registryindex(), boxMetatable)
        lua_setmetatable(L, -2)
        ld_push_binding_n(L, call, 1)
    }
}

// MARK: arguments and results of host functions

extension Args {
    /// Argument `i + 1` (advancing `i`), or Lua's `bad argument` error naming the function.
    @inline(__always)
    func argument<T: LuaConvertible>(_: T.Type, _ i: inout Int32) throws(LuaError) -> T {
        i += 1
        do { return try T.read(from: LuaSlot(L, i, rest: true)) } catch {
            throw .message("bad argument #\(i + error.argumentOffset) to '\(name)' (\(error))")
        }
    }

    /// Pushes one result (a `LuaVariadic` pushes each of its values); returns how many.
    @inline(__always)
    func result<R: LuaConvertible>(_ value: R) throws(LuaError) -> Int32 {
        let top = lua_gettop(L)
        do { try value.push(to: LuaStack(L, spreads: true)) } catch { throw .message("\(name): result: \(error)") }
        return lua_gettop(L) - top
    }

    /// Pushes a tuple's values, in order, as that many results; returns how many.
    func results<each R: LuaConvertible>(_ values: repeat each R) throws(LuaError) -> Int32 {
        var count: Int32 = 0
        for _ in repeat (each R).self { count += 1 }
        guard lua_checkstack(L, count + 1) != 0 else { throw .message("\(name): too many results") }
        let top = lua_gettop(L), stack = LuaStack(L, spreads: true)
        var index: Int32 = 0
        for value in repeat each values {
            index += 1
            do { try value.push(to: stack) } catch { throw .message("\(name): result #\(index): \(error)") }
        }
        return lua_gettop(L) - top
    }

    /// The Lua error for an error a host function threw: the function's name and the error's
    /// description. A `LuaError` (`.message`, `.argument`) is raised as it is, naming this
    /// function; a `LuaScriptError` (a Lua function the host called failed) by its message.
    func failure(_ error: any Error) -> LuaError {
        switch error {
        case let e as LuaError:
            switch e {
            case .message: return e
            case .argument(let n, let m): return .message("bad argument #\(n) to '\(name)' (\(m))")
            case .raise: return .message("\(name): error")
            }
        case let e as LuaScriptError: return .message("\(name): \(e.message)")
        default: return .message("\(name): \(error)")
        }
    }
}

// MARK: typed functions

extension HostCallable {
    /// `[LuaValue]` in, `[LuaValue]` out: every argument, every result.
    static func untyped(_ name: String, _ fn: @escaping HostFunction) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            let L = a.L
            var arguments: [LuaValue] = []
            arguments.reserveCapacity(Int(a.count))
            for i in 1...max(1, a.count) where i <= a.count {
                do { arguments.append(try LuaValue.read(L, i)) } catch {
                    throw .message("bad argument #\(i) to '\(a.name)' (\(error))")
                }
            }
            let results: [LuaValue]
            do { results = try fn(arguments) } catch { throw a.failure(error) }
            guard lua_checkstack(L, Int32(results.count) + 1) != 0 else { throw .message("\(a.name): too many results") }
            for (i, r) in results.enumerated() {
                do { try r.push(L) } catch { throw .message("\(a.name): result #\(i + 1): \(error)") }
            }
            return Int32(results.count)
        }
    }

    static func typed<each A: LuaConvertible, R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) throws -> R
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let arguments = (repeat try a.argument((each A).self, &i))
            let result: R
            do { result = try body(repeat each arguments) } catch { throw a.failure(error) }
            return try a.result(result)
        }
    }

    /// Several results: a tuple's values are that many Lua results.
    static func typed<each A: LuaConvertible, each R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) throws -> (repeat each R)
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let arguments = (repeat try a.argument((each A).self, &i))
            let results: (repeat each R)
            do { results = try body(repeat each arguments) } catch { throw a.failure(error) }
            return try a.results(repeat each results)
        }
    }

    static func typed<each A: LuaConvertible>(_ name: String, _ body: @escaping @Sendable (repeat each A) throws -> Void) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let arguments = (repeat try a.argument((each A).self, &i))
            do { try body(repeat each arguments) } catch { throw a.failure(error) }
            return 0
        }
    }
}
