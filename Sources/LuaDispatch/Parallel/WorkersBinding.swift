import CLua
import CLuaShim

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.workers{count=, init=}`, the pool's methods (`submit`, `close`, `count`) and the
/// job's (`wait`, `notify`, `cancel`).
enum WorkersBinding {
    static let maxCount = 1024

    static func install(_ m: inout ModuleSpec) {
        m.function("workers") { a throws(LuaError) in try workers(a) }
        var pool = ObjectType(.pool)
        pool.method("submit") { a throws(LuaError) in try submit(a) }
        pool.method("close") { a throws(LuaError) in
            (try a.object(1, .pool, as: PoolObject.self)).close()
            return 0
        }
        pool.fields { a throws(LuaError) in
            let p: PoolObject = try a.object(1, .pool)
            guard Lua.string(a.L, 2) == "count" else { return 0 }
            lua_pushinteger(a.L, lua_Integer(p.workers.count))
            return 1
        }
        pool.meta("__close") { a throws(LuaError) in
            (try a.object(1, .pool, as: PoolObject.self)).close()
            return 0
        }
        pool.meta("__gc") { a throws(LuaError) in
            // Queued and running jobs still finish (each keeps the pool); then the workers go.
            if ld_in_finalizer(a.L) != 0 { (a.optionalObject(1, .pool, as: PoolObject.self))?.close() }
            return ObjectTable.gc(a, .pool)
        }
        pool.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, (try a.object(1, .pool, as: PoolObject.self)).description)
            return 1
        }
        m.types.append(pool)

        var job = ObjectType(.job)
        job.method("wait") { a throws(LuaError) in
            let j: JobObject = try a.object(1, .job)
            let timeout = try ChannelBinding.timeout(a, 2)
            return try a.runtime.wait(a, JobWait(job: j), timeout: timeout)
        }
        job.method("notify") { a throws(LuaError) in
            try a.withObject(1, .job, as: JobObject.self) { j throws(LuaError) in
                let q: QueueObject = try a.object(2, .queue)
                try a.function(3)
                guard let r = a.runtime.ledger.blockRecords.take(for: a.runtime, a.L) else { throw .message("not enough memory") }
                ld_record_store(a.L, r, 3)
                j.notify(JobObject.Notify(queue: q, record: r))
                return 0
            }
        }
        job.method("cancel") { a throws(LuaError) in
            lua_pushboolean(a.L, (try a.object(1, .job, as: JobObject.self)).cancel() ? 1 : 0)
            return 1
        }
        job.release = { object in
            let job = Unmanaged<JobObject>.fromOpaque(object!)
            job._withUnsafeGuaranteedRef { $0.handleCollected() }
            job.release()
        }
        job.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, (try a.object(1, .job, as: JobObject.self)).description)
            return 1
        }
        m.types.append(job)
        m.types.append(ObjectType(.code))
    }

    private static func workers(_ a: Args) throws(LuaError) -> Int32 {
        var count = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        var initCode: CopiedGraph?
        try Options.parse(a, 1) { o throws(LuaError) in
            switch o.key {
            case "count":
                guard !o.isNil else { return true }
                let n = try o.integer()
                guard (1...maxCount).contains(n) else {
                    throw .argument(1, "option 'count' must be between 1 and \(maxCount), got \(n)")
                }
                count = n
            case "init":
                guard !o.isNil else { return true }
                let f = try o.function()
                guard lua_iscfunction(a.L, f) == 0 else { throw .argument(1, "option 'init': Lua function expected, got C function") }
                var copier = ValueCopier(a.L, cacheBytecode: true)
                defer { copier.finish() }
                do throws(CopyError) { try copier.root(f) } catch {
                    throw .argument(1, "option 'init': \(error.upvalueMessage)")
                }
                initCode = copier.graph
            default:
                return false
            }
            return true
        }
        guard a.count <= 1 else { throw .argument(2, "no value expected, got \(a.typeName(2))") }
        a.runtime.objects.push(a.L, PoolObject(count: count, initCode: initCode), .pool)
        return 1
    }

    /// `pool:submit(fn, ...)`: copies `fn` and the arguments (an uncopyable one is an error
    /// naming it) and queues the job.
    private static func submit(_ a: Args) throws(LuaError) -> Int32 {
        try a.withObject(1, .pool, as: PoolObject.self) { pool throws(LuaError) in try submit(a, to: pool) }
    }

    private static func submit(_ a: Args, to pool: PoolObject) throws(LuaError) -> Int32 {
        let L = a.L, rt = a.runtime
        try a.function(2)
        guard lua_iscfunction(L, 2) == 0 else { throw .argument(2, "Lua function expected, got C function") }
        guard !pool.isClosed else { throw .message("submit on a closed pool (\(pool.label))") }
        let n = a.count
        let code: JobObject.Code
        if let upvalues = PlainJob.upvalues(L, fn: 2, last: n) {
            code = .plain(PlainJob(L, fn: 2, last: n, upvalues: upvalues))
        } else {
            var copier = ValueCopier(L, cacheBytecode: true)
            for i in 2...n {
                do throws(CopyError) { try copier.root(i) } catch {
                    copier.finish()
                    lua_settop(L, n)
                    throw .argument(i, i == 2 ? error.upvalueMessage : error.valueMessage(to: "to a worker"))
                }
            }
            copier.finish()
            lua_settop(L, n)
            copier.graph.chargeTo(rt)
            code = .graph(copier.graph)
        }
        var source: String?
        if let tracer = rt.tracer {
            lua_pushvalue(L, 2)
            source = tracer.sourceName(L)
            ld_pop(L, 1)
        }
        try rt.refuseIfOver()  // the copy is dropped: uncharged
        let job = JobObject(rt, pool: pool, code: consume code, flow: rt.traceFlow(), source: source)
        guard pool.submit(job) else {
            job.finish(.cancelled)
            throw .message("submit on a closed pool (\(pool.label))")
        }
        rt.objects.push(L, job, .job)
        return 1
    }
}
