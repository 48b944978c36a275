import CLua
import CLuaShim

#if canImport(Glibc)
import Glibc
#endif

extension Runtime {
    // The work of the public `run(file:)`, `run(string:)` and `call(_:_:)`
    // (Embedding/RuntimeRunning.swift).

    func runChunk(file path: String, arguments: [String], timeLimit: Double?) throws(LuaScriptError) -> [LuaValue] {
        try runChunk(script: path, arguments: arguments, timeLimit: timeLimit) { L in luaL_loadfilex(L, path, chunkMode) }
    }

    func runChunk(string code: String, name: String, arguments: [String], timeLimit: Double?) throws(LuaScriptError) -> [LuaValue] {
        try runChunk(script: nil, arguments: arguments, timeLimit: timeLimit) { L in
            var code = code
            return code.withUTF8 { buf in
                buf.withMemoryRebound(to: CChar.self) { luaL_loadbufferx(L, $0.baseAddress, $0.count, name, chunkMode) }
            }
        }
    }

    private func runChunk(script: String?, arguments: [String], timeLimit: Double?,
                          load: (OpaquePointer) -> Int32) throws(LuaScriptError) -> [LuaValue] {
        try callOnPooledThread(kind: .mainChunk, timeLimit: timeLimit) { T throws(LuaScriptError) in
            if load(T) != LUA_OK {
                throw LuaScriptError(message: Lua.string(T, -1) ?? "cannot load chunk")
            }
            setArguments(T, script: script, arguments)
            guard lua_checkstack(T, Int32(arguments.count) + 1) != 0 else {
                throw LuaScriptError(message: "too many arguments")
            }
            for a in arguments { Lua.push(T, a) }
            return Int32(arguments.count)
        }
    }

    func callGlobal(_ name: String, _ arguments: [LuaValue], timeLimit: Double?) throws(LuaScriptError) -> [LuaValue] {
        guard ld_lock_held() != lock else {
            throw LuaScriptError(message: "call(\"\(name)\"): the calling thread is already running Lua")
        }
        return try callOnPooledThread(kind: .call, timeLimit: timeLimit) { T throws(LuaScriptError) in
            lua_rawgeti(T, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            _ = Lua.getField(T, -1, name)
            ld_remove(T, -2)
            guard lua_type(T, -1) == LUA_TFUNCTION else {
                throw LuaScriptError(message: "call(\"\(name)\"): global '\(name)' is not a function")
            }
            guard lua_checkstack(T, Int32(arguments.count) + 1) != 0 else {
                throw LuaScriptError(message: "too many arguments")
            }
            for (i, a) in arguments.enumerated() {
                do { try a.push(T) } catch {
                    throw LuaScriptError(message: "call(\"\(name)\"): argument #\(i + 1): \(error)")
                }
            }
            return Int32(arguments.count)
        }
    }

    /// Runs `body` on the main Lua thread, from the main OS thread, with the interpreter held
    /// and an empty stack (the CLI runs lua.c's driver this way). `body` must not let a Lua
    /// error escape (call Lua in protected mode). In the trace it is the main chunk, its source
    /// `traceSource` (the script).
    package func withMainLuaThread<T>(traceSource: String? = nil, _ body: (OpaquePointer) -> T) -> T {
        let requested = traceClock()
        acquire()
        defer { release() }
        ledger.running.addUnderLock(1)
        defer {
            ledger.running.addUnderLock(-1)
            if control.termination.load(ordering: .relaxed) != 0 { endTerminationIfIdle() }
        }
        let T = takeThreadForHost()
        precondition(T == L, "withMainLuaThread: call it from the main thread, outside Lua")
        defer {
            giveBack(T)
            drainDeferred()
        }
        lua_settop(T, 0)
        let traced = traceBegin(nil, requested, mainQueue.label, .mainChunk, source: traceSource)
        defer { traceEnd(traced) }
        ld_running_push(T)
        defer { ld_running_pop() }
        return body(T)
    }

    /// Calls, from a host thread, the function `prepare` pushes (followed by the argument count
    /// it returns) and returns its results. On the main OS thread it runs on the main Lua thread
    /// (as `lua` runs its script); elsewhere each call gets its own pooled Lua thread, so that
    /// calls from several host threads never share a stack. `close()` waits for it to finish.
    private func callOnPooledThread(kind: TraceKind, timeLimit: Double?,
                                    _ prepare: (OpaquePointer) throws(LuaScriptError) -> Int32) throws(LuaScriptError) -> [LuaValue] {
        let limited = try beginLimitedRun(timeLimit)
        defer { endLimitedRun(limited) }
        let requested = traceClock()
        acquire()
        defer { release() }
        guard !isClosed else { throw LuaScriptError(message: "the interpreter is closed") }
        ledger.running.addUnderLock(1)
        defer {
            ledger.running.addUnderLock(-1)
            if control.termination.load(ordering: .relaxed) != 0 { endTerminationIfIdle() }
        }
        let T = takeThreadForHost()
        defer { giveBack(T) }
        let count = try prepare(T)
        var traced: Tracer.Open?
        if requested != 0 {
            lua_pushvalue(T, -1 - count)
            traced = traceBegin(T, requested, ld_is_main_thread() != 0 ? mainQueue.label : "(host thread)", kind)
            ld_pop(T, 1)
        }
        let status = ld_pcall(T, count, ld_multret(), 1)
        if status != LUA_OK, traced != nil { traceInstant("error", "main chunk") }
        traceEnd(traced)
        defer { drainDeferred() }
        if status != LUA_OK { throw scriptError(T, status: status) }
        return try results(T, from: 2)
    }

    /// The error `ld_msgh` left on top of `T`, with its kind: an end the interpreter put to
    /// the code, or a memory error under a memory limit.
    func scriptError(_ T: OpaquePointer, status: Int32) -> LuaScriptError {
        let (message, traceback) = ErrorValue.pop(T)
        let kind: LuaScriptError.Kind = terminationKind ?? lastTerminationKind
            ?? (status == LUA_ERRMEM && limits.memory != nil ? .memoryLimit : .error)
        // A memory-limit end is one of the host's limits too (`lastTerminationKind`).
        if kind == .memoryLimit { control.lastTermination.store(kind.rawValue, ordering: .releasing) }
        return LuaScriptError(message: message, traceback: traceback, kind: kind)
    }

    /// Converts the values from `index` to the top.
    private func results(_ T: OpaquePointer, from index: Int32) throws(LuaScriptError) -> [LuaValue] {
        guard lua_gettop(T) >= index else { return [] }
        var values: [LuaValue] = []
        for i in index...lua_gettop(T) {
            do { values.append(try LuaValue.read(T, i)) } catch {
                throw LuaScriptError(message: "result #\(i - index + 1): \(error.description)")
            }
        }
        return values
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
