import CLua
import CLuaShim
import Dispatch

/// `q:sync(fn)`: `fn` runs on a pooled Lua thread of its own as a block of `q`, through
/// `DispatchQueue.sync` on the calling thread, or, inside a task, submitted asynchronously while
/// the task is suspended. Its results (or its error) then move to the caller's stack. The
/// caller's own stack is never touched by another OS thread.
struct SyncWait: Waitable {
    // Not counted references: the caller holds the runtime, and the queue's userdata is on the
    // caller's stack for the whole call (closures that outlive it capture strong copies).
    // Every use goes through `_withUnsafeGuaranteedRef`, so no retain or release is made.
    let rt: Unmanaged<Runtime>
    let L: OpaquePointer
    let q: Unmanaged<QueueObject>
    var runtime: Runtime { rt.takeUnretainedValue() }
    var queue: QueueObject { q.takeUnretainedValue() }
    /// The function's index on the caller's stack.
    let function: Int32
    let barrier: Bool
    /// The thread the function runs on, from `begin` on.
    private var T: OpaquePointer?
    /// Whether the queue runs on the main thread (`MainQueueSyncs.swift`), from `begin` on.
    private var onMain = false

    init(runtime: Unmanaged<Runtime>, L: OpaquePointer, queue: Unmanaged<QueueObject>, function: Int32, barrier: Bool) {
        self.rt = runtime
        self.L = L
        self.q = queue
        self.function = function
        self.barrier = barrier
    }

    var kind: String { "sync" }
    static var blocksNatively: Bool { true }
    static var canPark: Bool { false }
    func blockingRefusal() -> String? { q._withUnsafeGuaranteedRef { $0.syncDeadlock(barrier: barrier) } }

    @inline(__always) mutating func begin() throws(LuaError) {
        let T = rt._withUnsafeGuaranteedRef { $0.takeThread() }
        lua_pushvalue(L, function)
        lua_xmove(L, T, 1)
        self.T = T
        onMain = q._withUnsafeGuaranteedRef { $0.runsOnMainQueue }
    }

    @inline(__always) func block(_ timeout: Deadline) -> Bool {
        let counted = onMain && runtime.mainQueueSyncBegins(queue)
        defer { runtime.mainQueueSyncEnded(counted) }
        if let raw = q._withUnsafeGuaranteedRef({ $0.rawQueue }) {
            // dispatch_sync_f with a context on this stack: no block object, no reference counts.
            var context = (runtime: rt, T: T!, frameQueue: q.toOpaque(), barrier: Int32(barrier ? 1 : 0), counted: counted)
            withUnsafeMutablePointer(to: &context) { ld_sync_f(raw, barrier ? 1 : 0, $0, Self.runContext) }
            return true
        }
        let rt = runtime, T = T!, frameQueue = Unmanaged.passUnretained(queue).toOpaque()
        // Closure literals passed straight to the plain `sync` forms stay on the stack; the
        // generic and flags-taking forms, or a stored closure, would allocate per call.
        if barrier {
            queue.queue.sync(flags: .barrier) { Self.run(rt, T, frameQueue, 1, counted) }
        } else {
            queue.queue.sync { Self.run(rt, T, frameQueue, 0, counted) }
        }
        return true
    }

    func arm(_ waiter: Waiter) {
        let rt = runtime, q = queue, frameBarrier: Int32 = barrier ? 1 : 0
        nonisolated(unsafe) let T = T!  // used under the interpreter lock only
        q.queued.wrappingAdd(1, ordering: .relaxed)
        q.queue.async(flags: barrier ? .barrier : []) {
            q.queued.wrappingSubtract(1, ordering: .relaxed)
            let requested = rt.traceClock()
            guard rt.enterLua() else { return }  // closed: the waiter ended as `.closed`
            _ = ld_frame_push(Unmanaged.passUnretained(q).toOpaque(), frameBarrier)
            let traced = rt.traceBegin(T, requested, q.label, .sync)
            let ok = ld_pcall(T, 0, ld_multret(), 0) == LUA_OK
            rt.traceEnd(traced)
            lua_pushboolean(T, ok ? 1 : 0)
            // A task cancelled meanwhile no longer wants the results: the thread goes back here.
            if !waiter.finish(.done) { rt.giveBack(T) }
            ld_frame_pop()
            rt.leaveLua()
        }
    }

    private typealias Context = (runtime: Unmanaged<Runtime>, T: OpaquePointer, frameQueue: UnsafeMutableRawPointer, barrier: Int32,
                                 counted: Bool)

    private static let runContext: ld_work_fn = { context in
        let c = context!.assumingMemoryBound(to: Context.self).pointee
        c.runtime._withUnsafeGuaranteedRef { run($0, c.T, c.frameQueue, c.barrier, c.counted) }
    }

    /// The body of a blocking sync: runs the function on `T`, then pushes whether it succeeded.
    private static func run(_ rt: Runtime, _ T: OpaquePointer, _ frameQueue: UnsafeMutableRawPointer, _ frameBarrier: Int32,
                            _ counted: Bool) {
        _ = ld_frame_push(frameQueue, frameBarrier)
        let requested = rt.traceClock()
        rt.acquire()
        if counted { rt.mainQueueSyncStarts(Unmanaged<QueueObject>.fromOpaque(frameQueue).takeUnretainedValue()) }
        let traced = rt.traceBegin(T, requested, Unmanaged<QueueObject>.fromOpaque(frameQueue).takeUnretainedValue().label, .sync)
        let ok = Nesting.pcall(T, 0, ld_multret(), 0) == LUA_OK
        rt.traceEnd(traced)
        lua_pushboolean(T, ok ? 1 : 0)
        rt.drainDeferred()
        rt.release()
        ld_frame_pop()
    }

    @inline(__always) func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 {
        let T = T!
        let ok = lua_toboolean(T, -1) != 0
        ld_pop(T, 1)
        let n = lua_gettop(T) - 1
        if !ok {
            lua_xmove(T, L, 1)
            rt._withUnsafeGuaranteedRef { $0.giveBack(T) }
            throw .raise
        }
        guard lua_checkstack(L, n + 1) != 0 else {
            rt._withUnsafeGuaranteedRef { $0.giveBack(T) }
            throw .message("sync: too many results (\(n))")
        }
        lua_xmove(T, L, n)
        rt._withUnsafeGuaranteedRef { $0.giveBack(T) }
        return n
    }

    /// `q:sync(fn)` or `q:barrier_sync(fn)` with nothing else, the queue read from its userdata
    /// without a retain; nil when the arguments are anything else (the binding's general path).
    static func plain(_ a: Args, barrier: Bool) throws(LuaError) -> Int32? {
        guard a.count == 2, a.type(2) == LUA_TFUNCTION else { return nil }
        try Nesting.check()
        let rt = Unmanaged<Runtime>.fromOpaque(ld_extraspace(a.L).pointee!)
        let result: Result<Int32, LuaError>? = rt._withUnsafeGuaranteedRef { runtime in
            guard let q = runtime.objects.unmanaged(a.L, 1, .queue, as: QueueObject.self) else { return nil }
            return Result { () throws(LuaError) in
                try runtime.wait(a, SyncWait(runtime: rt, L: a.L, queue: q, function: 2, barrier: barrier))
            }
        }
        return try result?.get()
    }
}

/// `q:sync(item)`: the item runs as a block of `q`, like a function (without results).
struct SyncItemWait: Waitable {
    let queue: QueueObject
    let item: WorkItemObject
    let barrier: Bool
    let runtime: Runtime
    /// Whether the queue runs on the main thread (`MainQueueSyncs.swift`), from `begin` on.
    private var onMain = false

    init(queue: QueueObject, item: WorkItemObject, barrier: Bool, runtime: Runtime) {
        self.queue = queue
        self.item = item
        self.barrier = barrier
        self.runtime = runtime
    }

    var kind: String { "sync" }
    static var blocksNatively: Bool { true }
    static var canPark: Bool { false }
    func blockingRefusal() -> String? { queue.syncDeadlock(barrier: barrier) }
    mutating func begin() throws(LuaError) { onMain = queue.runsOnMainQueue }

    private var flags: DispatchWorkItemFlags { barrier ? item.flags.union(.barrier) : item.flags }

    func block(_ timeout: Deadline) -> Bool {
        let frameQueue = Unmanaged.passUnretained(queue).toOpaque(), item = item, q = queue
        let frameBarrier: Int32 = flags.contains(.barrier) ? 1 : 0
        let rt = runtime
        let counted = onMain && rt.mainQueueSyncBegins(queue)
        defer { rt.mainQueueSyncEnded(counted) }
        queue.queue.sync(flags: flags) {
            if counted {
                rt.acquire()
                rt.mainQueueSyncStarts(q)
                rt.release()
            }
            _ = ld_frame_push(frameQueue, frameBarrier)
            item.run()
            ld_frame_pop()
        }
        return true
    }

    func arm(_ waiter: Waiter) {
        let q = queue, item = item, frameBarrier: Int32 = flags.contains(.barrier) ? 1 : 0
        q.queued.wrappingAdd(1, ordering: .relaxed)
        q.queue.async(flags: flags) {
            q.queued.wrappingSubtract(1, ordering: .relaxed)
            _ = ld_frame_push(Unmanaged.passUnretained(q).toOpaque(), frameBarrier)
            item.run()
            ld_frame_pop()
            waiter.finish(.done)
        }
    }

    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 { 0 }
}
