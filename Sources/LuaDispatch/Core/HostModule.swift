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
            let q = QueueObject(queue: shared.queue, label: shared.label, concurrent: shared.concurrent,
                                qos: QoS.name(shared.queue.qos.qosClass), kind: .host)
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

    /// Makes `require(name)` run `source` (Lua code) once and return its result.
    public func preload(module name: String, source: String) {
        acquire()
        defer { release() }
        guard !isClosed else { return }
        let L = admin
        luaL_getsubtable(L, ld_registryindex(), LUA_PRELOAD_TABLE)
        var code = source
        let status = code.withUTF8 { buf in
            buf.withMemoryRebound(to: CChar.self) { ld_loadbuffer(L, $0.baseAddress, $0.count, "=" + name) }
        }
        if status == LUA_OK { Lua.setField(L, -2, name) }
        lua_settop(L, 0)
    }
}

enum HostBinding {
    static let call: Int32 = Module.spec.hostCall

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
