import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.concurrent_map(n, fn [, {chunk=}])`: `fn(i)` for i = 1...n in isolated worker
/// interpreters, truly in parallel, returning `{fn(1), ..., fn(n)}`.
///
/// `fn` is copied once, under the interpreter lock, into a `CopiedGraph`; the lock is then
/// released while `DispatchQueue.concurrentPerform` runs the chunks, each on its thread's
/// `WorkerInterpreter` with a fresh copy; results are copied back under the lock.
enum ConcurrentMapBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("concurrent_map") { a throws(LuaError) in try concurrentMap(a) }
    }

    /// The most chunks one call makes (a slot each, allocated up front).
    static let maxChunks = 1 << 23

    /// Iterations per task when `chunk` is not given: about four tasks per core, so that the
    /// copy of `fn` (made once per task) is paid a bounded number of times however large `n`
    /// is, while uneven iterations still balance across cores.
    static func defaultChunk(_ n: Int) -> Int {
        let tasks = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) * 4
        return max(1, (n + tasks - 1) / tasks)
    }

    private static func concurrentMap(_ a: Args) throws(LuaError) -> Int32 {
        let L = a.L
        let n = try a.integer(1)
        guard n >= 0 else { throw .argument(1, "iteration count must be >= 0, got \(n)") }
        // The results are one Lua table.
        guard n <= Checked.maxCount else { throw .argument(1, "count out of range") }
        try a.function(2)
        guard lua_iscfunction(L, 2) == 0 else { throw .argument(2, "Lua function expected, got C function") }
        var chunk: Int?
        try Options.parse(a, 3) { o throws(LuaError) in
            guard o.key == "chunk" else { return false }
            chunk = o.isNil ? nil : try o.integer()
            return true
        }
        if let chunk, chunk < 1 { throw .argument(3, "option 'chunk' must be >= 1, got \(chunk)") }

        let fn: CopiedGraph
        let top = lua_gettop(L)
        do throws(CopyError) {
            var copier = ValueCopier(L, cacheBytecode: true)
            defer { lua_settop(L, top) }
            defer { copier.finish() }
            try copier.root(2)
            fn = copier.graph
        } catch {
            throw .message("concurrent_map: \(error.upvalueMessage)")
        }
        // The copy of `fn`, the slots and each task's copied results live outside Lua until
        // collected: charged to the memory limit, and no task starts once it is passed.
        fn.chargeTo(a.runtime)

        let size = chunk ?? defaultChunk(n)
        let tasks = n / size + (n % size == 0 ? 0 : 1)
        // One slot per chunk is allocated up front.
        guard tasks <= maxChunks else { throw .argument(3, "option 'chunk' too small: more than \(maxChunks) chunks") }
        let runtime = a.runtime
        let slotsCharge = try runtime.reserve(tasks * MemoryLayout<WorkerInterpreter.ChunkResult?>.stride)
        defer { _ = slotsCharge.count }
        let slots = Slots(tasks)
        runtime.unlocked {
            // A few strands per core take the tasks in turn, and stop taking them once the
            // interpreter is ending (a time limit): a million tasks left cost nothing then.
            let strands = min(tasks, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) * 4)
            DispatchQueue.concurrentPerform(iterations: strands) { _ in
                while !runtime.terminating && !overLimit(runtime) {
                    let t = slots.next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard t < tasks else { return }
                    let first = t * size + 1
                    let last = first + min(size, n - first + 1) - 1
                    // Under a memory limit, interpreters of the runtime's own, which charge it.
                    let owned = runtime.control.budget != nil
                    let worker = owned ? runtime.control.ownedWorkers.take(for: runtime) : WorkerInterpreter.current(libraries: runtime.libraries)
                    defer { if owned { runtime.control.ownedWorkers.putBack(worker) } }
                    let result = runtime.control.ownedWorkers.run(worker, for: runtime) { worker.run(fn, first...last) }
                    result.values.chargeTo(runtime)
                    slots.buffer[t] = result
                }
            }
        }
        try runtime.checkEnd()
        try refuseIfOver(L, runtime)
        if let failure = slots.buffer.compactMap({ $0?.error }).min(by: { $0.index < $1.index }) {
            throw .message("concurrent_map: iteration \(failure.index): \(failure.message)")
        }
        return try collect(L, slots, n: n, size: size)
    }

    /// Builds `{fn(1), ..., fn(n)}` from the tasks' copied results. Lock held.
    private static func collect(_ L: OpaquePointer, _ slots: Slots, n: Int, size: Int) throws(LuaError) -> Int32 {
        guard lua_checkstack(L, 8) != 0 else { throw .message("concurrent_map: stack overflow") }
        lua_createtable(L, Int32(min(n, 1 << 16)), 0)  // presized to a bound: the rest grows as filled
        let results = lua_gettop(L)
        let runtime = Runtime.from(L)
        for (t, slot) in slots.buffer.enumerated() {
            try runtime.checkEnd(every: t + 1)
            guard let values = slot?.values else { continue }
            // A chunk's results may be millions: the table they fill is looked at as it grows.
            var stopped = false
            let built: Void? = values.build(in: L) { push in
                for (j, v) in values.roots.enumerated() {
                    if j % Runtime.stepsPerEndCheck == Runtime.stepsPerEndCheck - 1, runtime.terminating || overLimit(runtime) {
                        stopped = true
                        break
                    }
                    if case .nil = v { continue }
                    push(v)
                    lua_rawseti(L, results, lua_Integer(t * size + j + 1))
                }
            }
            guard built != nil else {
                let message = Lua.string(L, -1) ?? "cannot load a function"
                lua_settop(L, results - 1)
                throw .message("concurrent_map: iteration \(t * size + 1): \(message)")
            }
            if stopped || t % 64 == 63 {
                try runtime.checkEnd()
                try refuseIfOver(L, runtime)
            }
        }
        return 1
    }

    /// Lua's memory error if the script holds more than the limit allows even once `L` has
    /// been collected (as Lua collects before it refuses an allocation).
    private static func refuseIfOver(_ L: OpaquePointer, _ runtime: Runtime) throws(LuaError) {
        guard overLimit(runtime) else { return }
        _ = ld_gc_collect(L)
        try runtime.refuseIfOver()
    }

    private static func overLimit(_ runtime: Runtime) -> Bool { runtime.pastMemoryLimit }

    /// One result per task, each written by exactly one task (no two threads share a slot).
    private final class Slots: @unchecked Sendable {
        let buffer: UnsafeMutableBufferPointer<WorkerInterpreter.ChunkResult?>
        /// The next task a strand takes.
        let next = Atomic<Int>(0)

        init(_ count: Int) {
            buffer = .allocate(capacity: count)
            buffer.initialize(repeating: nil)
        }

        deinit {
            buffer.deinitialize()
            buffer.deallocate()
        }
    }
}
