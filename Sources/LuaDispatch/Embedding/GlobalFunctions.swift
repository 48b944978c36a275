import CLua
import CLuaShim

// One-step registration of a host function as a global: `runtime.register(function: "greet")
// { (name: String) in ... }` instead of making a `LuaFunction` and setting it in `globals`.
extension Runtime {
    /// Sets each entry `define` adds (functions, values, queues, as in a module) as a global.
    public func register(globals define: (inout HostModule) -> Void) {
        var module = HostModule()
        define(&module)
        try? withInterpreter { L throws(LuaScriptError) in  // nothing to do once closed
            lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            build(L, module, name: "_G")
            lua_pushnil(L)
            while lua_next(L, -2) != 0 {
                lua_pushvalue(L, -2)
                lua_rotate(L, -2, 1)   // key, key, value
                lua_rawset(L, -5)      // _G[key] = value
            }
            ld_pop(L, 2)
        }
    }

    /// A global function taking and returning `LuaValue`s (see `HostModule.function`).
    public func register(function name: String, _ body: @escaping HostFunction) {
        register(globals: { $0.function(name, body) })
    }

    /// A typed global function (see `HostModule.function`).
    public func register<each A: LuaConvertible, R: LuaConvertible>(
        function name: String, _ body: @escaping @Sendable (repeat each A) throws -> R
    ) {
        register(globals: { $0.function(name, body) })
    }

    /// A typed global function returning several results (a tuple).
    public func register<each A: LuaConvertible, each R: LuaConvertible>(
        function name: String, _ body: @escaping @Sendable (repeat each A) throws -> (repeat each R)
    ) {
        register(globals: { $0.function(name, body) })
    }

    /// A typed global function returning nothing.
    public func register<each A: LuaConvertible>(function name: String, _ body: @escaping @Sendable (repeat each A) throws -> Void) {
        register(globals: { $0.function(name, body) })
    }

    /// An `async` global function (see `HostModule.asyncFunction`).
    public func register<each A: LuaConvertible & Sendable, R: LuaConvertible & Sendable>(
        asyncFunction name: String, _ body: @escaping @Sendable (repeat each A) async throws -> R
    ) {
        register(globals: { $0.asyncFunction(name, body) })
    }

    /// A typed Swift function returning several results (a tuple), as a Lua function.
    public func makeFunction<each A: LuaConvertible, each R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) throws -> (repeat each R)
    ) throws(LuaScriptError) -> LuaFunction {
        try makeFunction(callable: .typed(name, body))
    }
}
