import CLua
import CLuaShim

/// Lua values a host makes or reaches without running a script: the globals, new tables,
/// Swift functions as Lua functions, compiled chunks. Each takes the interpreter (nested inside
/// a host function of the same interpreter) and throws `LuaScriptError` once it is closed.
extension Runtime {
    /// The global table `_G`, live.
    public var globals: LuaTable {
        get throws(LuaScriptError) {
            try withInterpreter { T throws(LuaScriptError) in
                lua_rawgeti(T, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
                return LuaTable(T, -1, self)
            }
        }
    }

    /// A new empty table.
    public func makeTable() throws(LuaScriptError) -> LuaTable {
        try withInterpreter { T throws(LuaScriptError) in
            ld_newtable(T)
            return LuaTable(T, -1, self)
        }
    }

    /// Compiles `code` (text only) into a function without running it. `name` is the chunk's
    /// name in messages (`=name` prints as `name`).
    public func load(_ code: String, name: String = "=(load)") throws(LuaScriptError) -> LuaFunction {
        try withInterpreter { T throws(LuaScriptError) in
            var code = code
            let status = code.withUTF8 { buf in
                buf.withMemoryRebound(to: CChar.self) { luaL_loadbufferx(T, $0.baseAddress, $0.count, name, "t") }
            }
            guard status == LUA_OK else { throw LuaScriptError(message: Lua.string(T, -1) ?? "cannot load chunk") }
            return LuaFunction(T, -1, self)
        }
    }

    /// A Swift function as a Lua function, to store in a table, pass to a callback or return
    /// (see `HostModule.function` for the conversions). `name` is its name in messages.
    public func makeFunction(_ name: String, _ body: @escaping HostFunction) throws(LuaScriptError) -> LuaFunction {
        try makeFunction(callable: .untyped(name, body))
    }

    /// A typed Swift function as a Lua function.
    public func makeFunction<each A: LuaConvertible, R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) throws -> R
    ) throws(LuaScriptError) -> LuaFunction {
        try makeFunction(callable: .typed(name, body))
    }

    /// A typed Swift function returning nothing, as a Lua function.
    public func makeFunction<each A: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) throws -> Void
    ) throws(LuaScriptError) -> LuaFunction {
        try makeFunction(callable: .typed(name, body))
    }

    /// An async Swift function as a Lua function (see `HostModule.asyncFunction`).
    public func makeAsyncFunction<each A: LuaConvertible & Sendable, R: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (repeat each A) async throws -> R
    ) throws(LuaScriptError) -> LuaFunction {
        try makeFunction(callable: .async(name, body))
    }

    func makeFunction(callable: HostCallable) throws(LuaScriptError) -> LuaFunction {
        try withInterpreter { T throws(LuaScriptError) in
            HostCalls.push(T, callable)
            return LuaFunction(T, -1, self)
        }
    }
}
