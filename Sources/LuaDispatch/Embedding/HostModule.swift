import CLua
import CLuaShim
import Dispatch

/// A Swift function callable from Lua that takes every argument and returns every result as
/// `LuaValue`s. A thrown error becomes a Lua error carrying the function's name and the error's
/// description.
public typealias HostFunction = @Sendable ([LuaValue]) throws -> [LuaValue]

/// A host `DispatchQueue` handed to Lua as a `dispatch.queue`: Lua's `q:async` and the host's
/// `queue.async` then submit to the same queue, in one FIFO order.
public struct SharedQueue: Sendable {
    public let queue: DispatchQueue
    public let label: String
    /// Whether the queue was created `.concurrent` (Dispatch cannot tell afterwards).
    public let concurrent: Bool

    public init(_ queue: DispatchQueue, concurrent: Bool = false) {
        self.queue = queue
        self.label = queue.label
        self.concurrent = concurrent
    }
}

/// What a module made by the host holds: functions (untyped, typed, async), values (anything
/// `LuaConvertible`: data, Swift objects, Lua functions) and shared queues. Filled in by the
/// closure given to `Runtime.register(module:_:)` or `preload(module:source:_:)`.
///
/// Host functions run on the thread of the Lua block that calls them, while it holds the
/// interpreter: keep them short, make them `async`, or hand long work to a queue.
public struct HostModule {
    enum Entry {
        case function(HostCallable)
        case value((LuaStack) throws(LuaConversionError) -> Void)
        case queue(SharedQueue)
    }

    var entries: [(name: String, entry: Entry)] = []

    init() {}

    /// A function taking and returning `LuaValue`s (every argument, every result).
    public mutating func function(_ name: String, _ body: @escaping HostFunction) {
        entries.append((name, .function(.untyped(name, body))))
    }

    /// A typed function: each parameter is one Lua argument, converted (a missing or nil
    /// argument is nil for an optional parameter; extra arguments are ignored, as Lua's own
    /// functions ignore them); a wrong one raises `bad argument #2 to 'name' (number expected,
    /// got string)`. The result is one Lua value.
    public mutating func function<each A: LuaConvertible, R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) throws -> R
    ) {
        entries.append((name, .function(.typed(name, body))))
    }

    /// A typed function returning several results: each value of the tuple it returns is one
    /// Lua result (`-> (String, Int)` returns two, as Lua's `return s, n`).
    public mutating func function<each A: LuaConvertible, each R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) throws -> (repeat each R)
    ) {
        entries.append((name, .function(.typed(name, body))))
    }

    /// A typed function returning nothing.
    public mutating func function<each A: LuaConvertible>(_ name: String, _ body: @escaping @Sendable (repeat each A) throws -> Void) {
        entries.append((name, .function(.typed(name, body))))
    }

    /// An `async` typed function. Lua calls it like any function: inside a `dispatch.task` the
    /// task is suspended until it returns, holding no thread; elsewhere the calling block waits,
    /// with the interpreter released so that other blocks run. The function runs in a Swift
    /// `Task` of its own, which is cancelled when the Lua task is cancelled (the call then
    /// raises `task cancelled (in 'name')`).
    public mutating func asyncFunction<each A: LuaConvertible & Sendable, R: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) async throws -> R
    ) {
        entries.append((name, .function(.async(name, body))))
    }

    /// An `async` typed function returning several results (a tuple).
    public mutating func asyncFunction<each A: LuaConvertible & Sendable, each R: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) async throws -> (repeat each R)
    ) {
        entries.append((name, .function(.async(name, body))))
    }

    /// An `async` typed function returning nothing.
    public mutating func asyncFunction<each A: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) async throws -> Void
    ) {
        entries.append((name, .function(.async(name, body))))
    }

    /// A value: data (copied), a Swift object (`LuaUserData`), a `LuaFunction` or `LuaTable`.
    public mutating func value<T: LuaConvertible>(_ name: String, _ value: T) {
        entries.append((name, .value { stack throws(LuaConversionError) in try value.push(to: stack) }))
    }

    /// A host queue, as a `dispatch.queue`.
    public mutating func queue(_ name: String, _ shared: SharedQueue) {
        entries.append((name, .queue(shared)))
    }
}

extension Runtime {
    /// Makes `require(name)` return the module `define` fills in.
    public func register(module name: String, _ define: (inout HostModule) -> Void) {
        var module = HostModule()
        define(&module)
        try? withInterpreter { L throws(LuaScriptError) in  // nothing to do once closed
            luaL_getsubtable(L, ld_registryindex(), LUA_LOADED_TABLE)
            build(L, module, name: name)
            Lua.setField(L, -2, name)
        }
    }

    /// Makes `require(name)` return a table of `functions`, `values` and `queues` (see
    /// `register(module:_:)`, which also takes typed and async functions and Swift objects).
    public func register(module name: String, functions: [String: HostFunction] = [:],
                         values: [String: LuaValue] = [:], queues: [String: SharedQueue] = [:]) {
        register(module: name) { m in
            for (key, fn) in functions.sorted(by: { $0.key < $1.key }) { m.function(key, fn) }
            for (key, value) in values { m.value(key, value) }
            for (key, shared) in queues { m.queue(key, shared) }
        }
    }

    /// Makes `require(name)` run `source` (Lua code) once and return its result. Nothing is
    /// compiled until the first `require`, so a script that never requires the module pays
    /// nothing for it. The chunk receives the module `define` fills in as its first
    /// argument (`local host = ...`).
    public func preload(module name: String, source: String, _ define: (inout HostModule) -> Void) {
        var module = HostModule()
        define(&module)
        try? withInterpreter { L throws(LuaScriptError) in
            luaL_getsubtable(L, ld_registryindex(), LUA_PRELOAD_TABLE)
            Lua.push(L, source)
            build(L, module, name: name)
            ld_push_binding_n(L, HostBinding.loadPreloaded, 2)
            Lua.setField(L, -2, name)
        }
    }

    /// `preload(module:source:_:)` with untyped functions only.
    public func preload(module name: String, source: String, functions: [String: HostFunction] = [:]) {
        preload(module: name, source: source) { m in
            for (key, fn) in functions.sorted(by: { $0.key < $1.key }) { m.function(key, fn) }
        }
    }

    /// Pushes the module's table. A value that cannot be pushed (a Lua value of another
    /// interpreter) is left out and reported to `uncaughtErrorHandler`. Lock held.
    func build(_ L: OpaquePointer, _ module: HostModule, name: String) {
        lua_createtable(L, 0, Int32(module.entries.count))
        for (key, entry) in module.entries {
            switch entry {
            case .function(let callable):
                HostCalls.push(L, callable)
            case .value(let push):
                do { try push(LuaStack(L)) } catch {
                    uncaughtErrorHandler(LuaScriptError(message: "module '\(name)': value '\(key)': \(error)"))
                    continue
                }
            case .queue(let shared):
                let q = QueueObject(queue: shared.queue, label: shared.label, concurrent: shared.concurrent, kind: .host)
                q.registry = ledger.queues
                ledger.queues.add(q)
                objects.push(L, q, .queue)
            }
            Lua.setField(L, -2, key)
        }
    }
}

enum HostBinding {
    static let loadPreloaded: Int32 = Module.spec.loadPreloaded

    /// The `package.preload` entry of `preload(module:source:_:)`. Upvalues: the source, then
    /// the table of its host functions and values.
    static func load(_ a: Args) throws(LuaError) -> Int32 {
        let L = a.L
        let name = Lua.string(L, 1) ?? "?"
        var length = 0
        let source = lua_tolstring(L, ld_upvalueindex(2), &length)
        guard ld_loadbuffer(L, source, length, "=" + name) == LUA_OK else { throw .raise }
        lua_pushvalue(L, ld_upvalueindex(3))
        guard ld_pcall(L, 1, 1, 0) == LUA_OK else { throw .raise }
        return 1
    }
}
