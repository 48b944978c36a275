import CLua
import CLuaShim
import Dispatch

/// A Swift function callable from Lua. Arguments and results are converted by value; a thrown
/// error becomes a Lua error carrying the error's description.
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

extension Runtime {
    /// Makes `require(name)` return a table of `functions` (and `values`).
    /// Host functions run on the calling Lua block's thread while holding the interpreter:
    /// keep them short, or hand long work to Dispatch.
    /// `queues` become `dispatch.queue` objects in the module.
    public func register(module name: String, functions: [String: HostFunction] = [:],
                         values: [String: LuaValue] = [:], queues: [String: SharedQueue] = [:]) {
        acquire()
        defer { release() }
        guard !isClosed else { return }
        let L = admin
        lua_createtable(L, 0, Int32(functions.count + values.count + queues.count))
        for (fname, fn) in functions.sorted(by: { $0.key < $1.key }) {
            hostFunctions.append((name: fname, fn: fn))
            lua_pushinteger(L, lua_Integer(hostFunctions.count - 1))
            ld_push_binding_n(L, HostBinding.call, 1)
            Lua.setField(L, -2, fname)
        }
        for (key, value) in values {
            value.push(L)
            Lua.setField(L, -2, key)
        }
        for (key, shared) in queues {
            let q = QueueObject(queue: shared.queue, label: shared.label, concurrent: shared.concurrent, kind: .host)
            q.registry = self.queues
            self.queues.add(q)
            objects.push(L, q, .queue)
            Lua.setField(L, -2, key)
        }
        luaL_getsubtable(L, ld_registryindex(), LUA_LOADED_TABLE)
        lua_rotate(L, -2, 1)
        Lua.setField(L, -2, name)
        lua_settop(L, 0)
    }

    /// Makes `require(name)` run `source` (Lua code) once and return its result. Nothing is
    /// compiled or built until the first `require`, so a script that never requires the module
    /// pays nothing for it. The chunk receives a table of `functions` as its first argument
    /// (`local host = ...`); they behave as those of `register(module:functions:)`.
    public func preload(module name: String, source: String, functions: [String: HostFunction] = [:]) {
        acquire()
        defer { release() }
        guard !isClosed else { return }
        let L = admin
        luaL_getsubtable(L, ld_registryindex(), LUA_PRELOAD_TABLE)
        Lua.push(L, source)
        lua_pushinteger(L, lua_Integer(hostFunctions.count))
        for (fname, fn) in functions.sorted(by: { $0.key < $1.key }) { hostFunctions.append((name: fname, fn: fn)) }
        lua_pushinteger(L, lua_Integer(hostFunctions.count))
        ld_push_binding_n(L, HostBinding.loadPreloaded, 3)
        Lua.setField(L, -2, name)
        lua_settop(L, 0)
    }
}

enum HostBinding {
    static let call: Int32 = Module.spec.hostCall
    static let loadPreloaded: Int32 = Module.spec.loadPreloaded

    /// The `package.preload` entry of `preload(module:source:functions:)`. Upvalues: the
    /// source, then the range of its functions in `hostFunctions`.
    static func load(_ a: Args) throws(LuaError) -> Int32 {
        let L = a.L
        let name = Lua.string(L, 1) ?? "?"
        let first = Int(lua_tointegerx(L, ld_upvalueindex(3), nil))
        let end = Int(lua_tointegerx(L, ld_upvalueindex(4), nil))
        var length = 0
        let source = lua_tolstring(L, ld_upvalueindex(2), &length)
        guard ld_loadbuffer(L, source, length, "=" + name) == LUA_OK else { throw .raise }
        lua_createtable(L, 0, Int32(end - first))
        for index in first..<end {
            lua_pushinteger(L, lua_Integer(index))
            ld_push_binding_n(L, call, 1)
            Lua.setField(L, -2, a.runtime.hostFunctions[index].name)
        }
        guard ld_pcall(L, 1, 1, 0) == LUA_OK else { throw .raise }
        return 1
    }

    static func body(_ a: Args) throws(LuaError) -> Int32 {
        let L = a.L
        let index = Int(lua_tointegerx(L, ld_upvalueindex(2), nil))
        let (name, fn) = a.runtime.hostFunctions[index]
        var arguments: [LuaValue] = []
        for i in 1...max(1, a.count) where i <= a.count {
            do { arguments.append(try LuaValue.read(L, i)) } catch {
                throw .message("bad argument #\(i) to '\(name)' (\(error.description))")
            }
        }
        let results: [LuaValue]
        do { results = try fn(arguments) } catch {
            throw .message("\(name): \(error)")
        }
        guard lua_checkstack(L, Int32(results.count) + 1) != 0 else { throw .message("\(name): too many results") }
        for r in results { r.push(L) }
        return Int32(results.count)
    }
}
