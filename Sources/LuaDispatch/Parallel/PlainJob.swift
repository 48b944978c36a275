import CLua
import CLuaShim

/// The common job, copied without a graph: a Lua function whose only upvalues are the globals
/// (`local function double(x) return x * 2 end`, or one that reads globals), with arguments that
/// are nil, booleans or numbers. Its code comes from the function cache, its arguments are kept
/// inline, and the worker calls the function it already loaded: submitting it allocates nothing
/// but the job. Anything else takes the general path (`CopiedGraph`).
struct PlainJob: @unchecked Sendable {
    let code: FunctionCode
    /// How many upvalues the function has, each the globals.
    let upvalues: Int32
    var arguments = CopiedGraph.Roots()

    /// How many upvalues the function at `fn` has if it and the arguments `fn + 1 ... last` make
    /// a plain job, else nil. Lock held; leaves the stack as it was.
    static func upvalues(_ L: OpaquePointer, fn: Int32, last: Int32) -> Int32? {
        guard lua_type(L, fn) == LUA_TFUNCTION, lua_iscfunction(L, fn) == 0 else { return nil }
        for i in fn + 1 ..< last + 1 {
            let t = lua_type(L, i)
            guard t == LUA_TNIL || t == LUA_TBOOLEAN || t == LUA_TNUMBER else { return nil }
        }
        lua_checkstack(L, 4)
        lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        var n: Int32 = 1
        while lua_getupvalue(L, fn, n) != nil {
            let globals = lua_rawequal(L, -1, -2) != 0
            ld_pop(L, 1)
            guard globals else {
                ld_pop(L, 1)
                return nil
            }
            n += 1
        }
        ld_pop(L, 1)
        return n - 1
    }

    /// The plain job of the function at `fn` (which has `upvalues` upvalues, all the globals:
    /// see `upvalues(_:fn:last:)`) with the arguments `fn + 1 ... last`. Lock held.
    init(_ L: OpaquePointer, fn: Int32, last: Int32, upvalues: Int32) {
        self.upvalues = upvalues
        code = FunctionCode.of(L, fn, cache: true)
        for i in fn + 1 ..< last + 1 { arguments.append(Self.value(L, i)) }
    }

    /// A nil, boolean or number as a copied value.
    static func value(_ L: OpaquePointer, _ i: Int32) -> CopiedGraph.Value {
        switch lua_type(L, i) {
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, i) != 0)
        case LUA_TNUMBER: return lua_isinteger(L, i) != 0 ? .integer(lua_tointegerx(L, i, nil)) : .number(lua_tonumberx(L, i, nil))
        default: return .nil
        }
    }
}

extension CopiedGraph.Roots {
    /// Pushes values that are all nil, booleans or numbers (`PlainJob`, `JobOutcome.plain`).
    func pushPlain(_ L: OpaquePointer) {
        for v in self {
            switch v {
            case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
            case .integer(let i): lua_pushinteger(L, i)
            case .number(let d): lua_pushnumber(L, d)
            default: lua_pushnil(L)
            }
        }
    }
}

extension WorkerInterpreter {
    /// Runs a plain job: the kept function (loaded now if this worker has not seen it), its
    /// upvalues set to this worker's globals, called with the arguments. Results that are all
    /// nil, booleans or numbers come back inline; others are copied as a graph.
    func call(_ job: PlainJob) -> JobOutcome {
        runtime.acquire()
        defer { runtime.release() }
        let L = runtime.L
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        let n = Int32(clamping: job.arguments.count)
        guard lua_checkstack(L, n + 16) != 0 else { return .failed(message: "too many arguments", traceback: "") }
        lua_pushcclosure(L, ld_msgh, 0)
        let handler = lua_gettop(L)
        guard job.code.push(L, keep: true) else {
            return .failed(message: Lua.string(L, -1) ?? "cannot load the function", traceback: "")
        }
        for k in 0..<job.upvalues {
            lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            if lua_setupvalue(L, -2, k + 1) == nil { ld_pop(L, 1) }
        }
        job.arguments.pushPlain(L)
        guard ld_pcall(L, n, ld_multret(), handler) == LUA_OK else {
            let (message, traceback) = ErrorValue.pop(L)
            return .failed(message: message, traceback: traceback)
        }
        return results(L, from: handler + 1)
    }

    /// The values from `first` to the top, inline when all are nil, booleans or numbers.
    func results(_ L: OpaquePointer, from first: Int32) -> JobOutcome {
        let last = lua_gettop(L)
        var plain = CopiedGraph.Roots()
        var i = first
        while i <= last {
            let t = lua_type(L, i)
            guard t == LUA_TNIL || t == LUA_TBOOLEAN || t == LUA_TNUMBER else { break }
            plain.append(PlainJob.value(L, i))
            i += 1
        }
        if i > last { return .plain(plain) }
        var copier = ValueCopier(L, cacheBytecode: false)
        defer { copier.finish() }
        let n = last - first + 1
        for k in 0..<n {
            do throws(CopyError) { try copier.root(first + k) } catch {
                return .failed(message: error.resultMessage(number: n > 1 ? Int(k) + 1 : nil), traceback: "")
            }
        }
        copier.graph.chargeTo(Runtime.from(L))  // held until the job's results are collected
        return .values(copier.graph)
    }
}
