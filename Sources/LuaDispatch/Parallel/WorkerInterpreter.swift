import CLua
import CLuaShim
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An isolated interpreter: a worker of a pool (`dispatch.workers`), or the one a thread uses
/// for `concurrent_map` tasks (made on the thread's first task and closed by a thread-exit
/// destructor). It shares nothing with any other interpreter but channels, so workers run Lua
/// truly in parallel, and never takes another interpreter's lock.
///
/// It is a `Runtime` (its own lock, uncontended, and its own object metatables) so that the
/// bindings kept in its `dispatch` module (`now`, `walltime`, `thread`, `sleep`, `errno_name`,
/// `channel` and channels' methods) run unchanged, their waits included; everything else is
/// removed and raises a clear error when used.
final class WorkerInterpreter: @unchecked Sendable {  // used by one thread at a time
    /// Live worker interpreters in the process (for tests and diagnostics).
    static let live = Atomic<Int>(0)

    /// The `dispatch` functions that are safe without the shared interpreter and its queues.
    static let moduleNames = ["now", "walltime", "thread", "sleep", "errno_name", "channel"]

    let runtime: Runtime
    /// The worker's own global table; each task gets a fresh copy of it (see `run`).
    private let baseGlobals: Int32

    /// The calling thread's worker interpreter with `libraries` open, made on first use.
    static func current(libraries: LuaLibraries) -> WorkerInterpreter {
        let workers: ThreadWorkers
        if let p = pthread_getspecific(key) {
            workers = Unmanaged<ThreadWorkers>.fromOpaque(p).takeUnretainedValue()
        } else {
            workers = ThreadWorkers()
            pthread_setspecific(key, Unmanaged.passRetained(workers).toOpaque())
        }
        if let worker = workers.byLibraries[libraries.rawValue] { return worker }
        let worker = WorkerInterpreter(libraries: libraries)
        workers.byLibraries[libraries.rawValue] = worker
        return worker
    }

    /// A thread's worker interpreters, one per library set (a sandboxed runtime's tasks never
    /// run in an interpreter with more libraries than its own).
    private final class ThreadWorkers {
        var byLibraries: [Int: WorkerInterpreter] = [:]
    }

    /// Thread-specific slot whose destructor releases (and so closes) the thread's workers.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { p in
            guard let p else { return }
            Unmanaged<ThreadWorkers>.fromOpaque(p).release()
        }
        return key
    }()

    /// Every worker interpreter of the process is made here, its Lua state by `Runtime` (through
    /// `ld_newstate`, as the main interpreter's): the one place where whatever applies to every
    /// Lua state (its allocator, and what the runtime it works for restricts: `libraries`, which
    /// a sandbox pares down, and `budget`, the memory limit its states charge) is given to
    /// workers too.
    init(libraries: LuaLibraries, budget: OpaquePointer? = nil) {
        runtime = Runtime(libraries: libraries, tracing: false, limits: .none, budget: budget.map { ld_budget_retain($0) })
        runtime.acquire()
        defer { runtime.release() }
        let L = runtime.L
        Self.restrictModule(L)
        lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        baseGlobals = luaL_ref(L, ld_registryindex())
        Self.live.wrappingAdd(1, ordering: .relaxed)
    }

    deinit {
        runtime.close()
        Self.live.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Ends the code running here now, as its owner's limit or `interrupt()` ends the owner's
    /// (any thread; see `OwnedWorkers`): it raises `kind`'s error until it has unwound, and its
    /// waits end.
    func end(_ kind: LuaScriptError.Kind) {
        runtime.control.termination.store(kind.rawValue, ordering: .releasing)
        ld_lock_terminate(runtime.lock, kind == .timeLimit ? 1 : 0)
        runtime.endParkedWaits()
    }

    /// After a job or part: an end is over, the interpreter runs the next one normally.
    func resume() {
        guard runtime.control.termination.load(ordering: .acquiring) != 0 else { return }
        ld_lock_end_termination(runtime.lock)
        runtime.control.termination.store(0, ordering: .releasing)
    }

    /// Removes every `dispatch` function but `moduleNames`; using one of them raises
    /// "dispatch.queue is not available in a worker interpreter".
    private static func restrictModule(_ L: OpaquePointer) {
        let keep = moduleNames.map { "\($0) = true" }.joined(separator: ", ")
        let code = """
            local d, keep, removed = ..., { \(keep) }, {}
            for k in pairs(d) do if not keep[k] then removed[k] = true end end
            for k in pairs(removed) do d[k] = nil end
            setmetatable(d, { __index = function(_, k)
                if removed[k] then error("dispatch." .. k .. " is not available in a worker interpreter", 2) end
            end })
            """
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        var source = code
        let status = source.withUTF8 { buf in
            buf.withMemoryRebound(to: CChar.self) { ld_loadbuffer(L, $0.baseAddress, $0.count, "=worker") }
        }
        guard status == LUA_OK else { return }
        CopiedGraph.Special.dispatch.push(L)
        _ = ld_pcall(L, 1, 0, 0)
    }

    /// What one task sends back: the first result of each iteration, in order (nil for a
    /// failed one), and the first failure.
    struct ChunkResult: Sendable {
        var values = CopiedGraph()
        var error: (index: Int, message: String)?
    }

    /// Runs `fn(i)` for each i in `range` on this thread's interpreter.
    ///
    /// The task gets fresh state: a new copy of `fn` and its upvalues, and a new global table
    /// (a shallow copy of the worker's standard globals, also installed as the registry's
    /// globals so that `load` and `require`d chunks see it). Iterations of one task share them.
    func run(_ fn: CopiedGraph, _ range: ClosedRange<Int>) -> ChunkResult {
        runtime.acquire()
        defer { runtime.release() }
        let L = runtime.L
        let top = lua_gettop(L)
        defer {
            lua_rawgeti(L, ld_registryindex(), lua_Integer(baseGlobals))
            lua_rawseti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            lua_settop(L, top)
        }
        lua_checkstack(L, 16)
        pushFreshGlobals(L)
        lua_rawseti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        lua_pushcclosure(L, ld_msgh, 0)
        let handler = lua_gettop(L)
        let built: ChunkResult? = fn.build(in: L) { push in
            push(fn.roots[0])
            let f = lua_gettop(L)
            var result = ChunkResult()
            var copier = ValueCopier(L, cacheBytecode: false)
            copier.prepare()
            for i in range {
                // Ended with its owner's code (a time limit): each call left would fail at
                // once, a million of them for seconds; the owner raises the end.
                if runtime.terminating { break }
                lua_pushvalue(L, f)
                lua_pushinteger(L, lua_Integer(i))
                if ld_pcall(L, 1, 1, handler) == LUA_OK {
                    do throws(CopyError) {
                        try copier.root(-1)
                    } catch {
                        copier.appendRoot(.nil)
                        if result.error == nil { result.error = (i, error.resultMessage) }
                    }
                } else {
                    copier.appendRoot(.nil)
                    if result.error == nil { result.error = (i, Self.message(L)) }
                }
                ld_pop(L, 1)
            }
            copier.finish()
            result.values = copier.graph
            return result
        }
        return built ?? ChunkResult(error: (range.lowerBound, Lua.string(L, -1) ?? "cannot load the function"))
    }

    /// Calls `roots[0]` with `roots[1...]` as arguments in the worker's own globals (kept from
    /// one call to the next) and copies its results back: a pool's job, or its `init`.
    func call(_ code: CopiedGraph) -> JobOutcome {
        runtime.acquire()
        defer { runtime.release() }
        let L = runtime.L
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        guard lua_checkstack(L, Int32(clamping: code.roots.count) + 16) != 0 else {
            return .failed(message: "too many arguments", traceback: "")
        }
        lua_pushcclosure(L, ld_msgh, 0)
        let handler = lua_gettop(L)
        for _ in code.roots { lua_pushnil(L) }
        let built: Void? = code.build(in: L) { push in
            for (k, v) in code.roots.enumerated() {
                push(v)
                ld_replace(L, handler + 1 + Int32(k))
            }
        }
        guard built != nil else {
            return .failed(message: Lua.string(L, -1) ?? "cannot load the function", traceback: "")
        }
        guard ld_pcall(L, Int32(code.roots.count - 1), ld_multret(), handler) == LUA_OK else {
            let (message, traceback) = ErrorValue.pop(L)
            return .failed(message: message, traceback: traceback)
        }
        return results(L, from: handler + 1)
    }

    /// A new table with the worker's standard globals, and `_G` pointing to itself.
    private func pushFreshGlobals(_ L: OpaquePointer) {
        lua_createtable(L, 0, 48)
        let env = lua_gettop(L)
        lua_rawgeti(L, ld_registryindex(), lua_Integer(baseGlobals))
        lua_pushnil(L)
        while lua_next(L, env + 1) != 0 {
            lua_pushvalue(L, -2)
            ld_insert(L, -2)
            lua_rawset(L, env)
        }
        ld_pop(L, 1)
        lua_pushvalue(L, env)
        Lua.setField(L, env, "_G")
    }

    /// The message of the error `ld_msgh` left on top.
    private static func message(_ L: OpaquePointer) -> String {
        lua_pushvalue(L, -1)
        return ErrorValue.pop(L).message
    }
}
