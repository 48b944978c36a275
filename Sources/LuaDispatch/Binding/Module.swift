import CLua
import CLuaShim

/// The shape of the `dispatch` module: functions, sub-tables and object types, as binding ids.
struct ModuleSpec {
    struct Table {
        let name: String
        var call: Int32?
        var functions: [(String, Int32)] = []
    }

    var functions: [(String, Int32)] = []
    var tables: [Table] = []
    var types: [ObjectType] = []
    /// Work done on each new interpreter with the module table on top of the stack.
    var setups: [(Runtime, OpaquePointer) -> Void] = []

    mutating func function(_ name: String, _ body: @escaping BindingBody) {
        functions.append((name, Bindings.register(name, body)))
    }

    /// A sub-table such as `dispatch.fd`; with `call`, the table itself is callable.
    mutating func table(_ name: String, call: BindingBody? = nil, _ build: (inout Table) -> Void) {
        var t = Table(name: name, call: call.map { Bindings.register(name, $0) })
        build(&t)
        if let i = tables.firstIndex(where: { $0.name == name }) {
            tables[i].functions += t.functions
            tables[i].call = tables[i].call ?? t.call
        } else {
            tables.append(t)
        }
    }
}

extension ModuleSpec.Table {
    mutating func function(_ name: String, _ body: @escaping BindingBody) {
        functions.append((name, Bindings.register(name, body)))
    }
}

enum Module {
    /// Built once per process: every binding is registered here and nowhere else.
    nonisolated(unsafe) static let spec: (module: ModuleSpec, gc: Int32, loadPreloaded: Int32) = {
        var m = ModuleSpec()
        let gc = Bindings.register("__gc", ObjectTable.gc)
        let loadPreloaded = Bindings.register("require", HostBinding.load)
        // Host functions, methods and objects of the embedding API (Embedding/).
        HostCalls.install(&m)
        QueueBinding.install(&m)
        WorkItemBinding.install(&m)
        GroupBinding.install(&m)
        SemaphoreBinding.install(&m)
        TimeBinding.install(&m)
        ThreadBinding.install(&m)
        SourceBinding.install(&m)
        DataBinding.install(&m)
        IOBinding.install(&m)
        FDBinding.install(&m)
        NetBinding.install(&m)
        ConnectionBinding.install(&m)
        HTTPBinding.install(&m)
        ConcurrentMapBinding.install(&m)
        WorkersBinding.install(&m)
        ChannelBinding.install(&m)
        TaskBinding.install(&m)
        RunBinding.install(&m)
        SwitchingBinding.install(&m)
        return (m, gc, loadPreloaded)
    }()

    /// Builds the module on a new interpreter and stores it in `package.loaded.dispatch`.
    /// Lock held, on the main state or (`state`) a thread of it that is running.
    static func install(_ rt: Runtime, on state: OpaquePointer? = nil, global: Bool) {
        let L = state ?? rt.L
        let m = spec.module
        for type in m.types { rt.objects.define(L, type) }
        lua_createtable(L, 0, Int32(m.functions.count + m.tables.count + 4))
        let module = lua_gettop(L)
        for (name, id) in m.functions {
            ld_push_binding(L, id)
            Lua.setField(L, module, name)
        }
        for t in m.tables {
            lua_createtable(L, 0, Int32(t.functions.count))
            for (name, id) in t.functions {
                ld_push_binding(L, id)
                Lua.setField(L, -2, name)
            }
            if let call = t.call {
                // __call receives the table first: drop it and forward the arguments.
                lua_createtable(L, 0, 1)
                ld_push_binding(L, call)
                lua_pushcclosure(L, ld_call_dropping_self, 1)
                Lua.setField(L, -2, "__call")
                lua_setmetatable(L, -2)
            }
            Lua.setField(L, module, t.name)
        }
        for setup in m.setups {
            setup(rt, L)
            lua_settop(L, module)
        }
        if rt.libraries.contains(.restricted) { SandboxedModule.restrict(L, module) }
        luaL_getsubtable(L, ld_registryindex(), LUA_LOADED_TABLE)
        lua_pushvalue(L, module)
        Lua.setField(L, -2, "dispatch")
        if global {
            lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            lua_pushvalue(L, module)
            Lua.setField(L, -2, "dispatch")
        }
        lua_settop(L, module - 1)
    }
}
