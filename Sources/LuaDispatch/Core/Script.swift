import CLua
import CLuaShim

#if canImport(Glibc)
import Glibc
#endif

extension Runtime {
    /// Runs a Lua file on the calling thread with `arg` and `...` set as the `lua` command does.
    /// Returns false after a load or runtime error, which is reported to stderr.
    @discardableResult
    public func run(file path: String, arguments: [String] = []) -> Bool {
        runChunk(name: path, arguments: arguments) { L in ld_loadfile(L, path) }
    }

    /// Runs a string of Lua code on the calling thread.
    @discardableResult
    public func run(string code: String, name: String = "=(command line)", arguments: [String] = []) -> Bool {
        runChunk(name: nil, arguments: arguments) { L in
            var code = code
            return code.withUTF8 { buf in
                buf.withMemoryRebound(to: CChar.self) { ld_loadbuffer(L, $0.baseAddress, $0.count, name) }
            }
        }
    }

    /// Counts a failure (as an uncaught error does) so that `exitStatus` becomes 1.
    public func recordFailure() { uncaughtErrors.wrappingAdd(1, ordering: .relaxed) }

    /// The exit status the CLI reports: 1 after any uncaught error, else 0.
    public var exitStatus: Int32 { uncaughtErrors.load(ordering: .relaxed) > 0 ? 1 : 0 }

    private func runChunk(name: String?, arguments: [String], load: (OpaquePointer) -> Int32) -> Bool {
        acquire()
        defer { release() }
        let L = self.L
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        lua_pushcclosure(L, ld_msgh, 0)
        let handler = lua_gettop(L)
        if load(L) != LUA_OK {
            reportUncaught(Lua.string(L, -1) ?? "cannot load chunk", "", nil)
            uncaughtErrors.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        setArguments(L, script: name, arguments)
        guard lua_checkstack(L, Int32(arguments.count) + 1) != 0 else { return false }
        for a in arguments { Lua.push(L, a) }
        if ld_pcall(L, Int32(arguments.count), 0, handler) != LUA_OK {
            var message = Lua.string(L, -1) ?? "(error object is not a string)"
            var traceback = ""
            if lua_type(L, -1) == LUA_TTABLE {
                lua_rawgeti(L, -1, 1)
                message = Lua.string(L, -1) ?? message
                lua_rawgeti(L, -2, 2)
                traceback = Lua.string(L, -1) ?? ""
            }
            reportUncaught(message, traceback, nil)
            uncaughtErrors.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        drainDeferred()
        return true
    }

    /// The global `arg`: arg[0] is the script, arg[1...] its arguments.
    private func setArguments(_ L: OpaquePointer, script: String?, _ arguments: [String]) {
        lua_createtable(L, Int32(arguments.count), 1)
        Lua.push(L, script ?? "-e")
        lua_rawseti(L, -2, 0)
        for (i, a) in arguments.enumerated() {
            Lua.push(L, a)
            lua_rawseti(L, -2, lua_Integer(i + 1))
        }
        lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        lua_rotate(L, -2, 1)
        Lua.setField(L, -2, "arg")
        ld_pop(L, 1)
    }
}
