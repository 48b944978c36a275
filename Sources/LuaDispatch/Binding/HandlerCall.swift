import CLua
import CLuaShim
import Dispatch

extension Runtime {
    /// Calls the Lua function at registry `ref` with the arguments `push` leaves on the stack,
    /// as a handler Dispatch runs on `queue` (I/O, HTTP and barrier handlers). Called by Dispatch
    /// without the lock. `push` runs with the lock held and returns how many arguments it pushed.
    func callHandler(_ ref: Int32, on queue: QueueObject?, kind: TraceKind = .handler,
                     push: (OpaquePointer) -> Int32 = { _ in 0 }) {
        callHandler(on: queue, kind: kind) { T in
            lua_rawgeti(T, ld_registryindex(), lua_Integer(ref))
            return push(T)
        }
    }

    /// The general form: `push` pushes the function and its arguments and returns the argument
    /// count, or nil when there is nothing to call. The frame makes `current_label` and the sync
    /// deadlock checks see `queue` while the handler runs.
    /// `kind` names the handler in the trace.
    func callHandler(on queue: QueueObject?, kind: TraceKind = .handler, _ push: (OpaquePointer) -> Int32?) {
        let requested = traceClock()
        guard enterLua() else { return }  // the interpreter was closed
        if let queue { _ = ld_frame_push(Unmanaged.passUnretained(queue).toOpaque(), 0) }
        let T = takeThread()
        if let n = push(T) {
            // The function sits below its `n` arguments.
            if requested != 0 { lua_pushvalue(T, -1 - n) }
            let traced = traceBegin(T, requested, queue?.label ?? currentQueue()?.label, kind)
            if traced != nil { ld_pop(T, 1) }
            if ld_pcall(T, n, 0, 1) != LUA_OK { reportError(T, label: queue?.label ?? currentQueue()?.label) }
            traceEnd(traced)
        }
        giveBack(T)
        if queue != nil { ld_frame_pop() }
        leaveLua()
    }

    /// Submits a handler call to `queue` from a completion that Dispatch or Foundation runs
    /// elsewhere; counted in `queue.queued` so that the exit report sees it when `queue` is held.
    /// The caller has already counted the work; it is done once the handler ran.
    func asyncHandler(_ ref: LuaRef, on queue: QueueObject, push: @escaping @Sendable (OpaquePointer) -> Int32) {
        queue.queued.wrappingAdd(1, ordering: .relaxed)
        queue.queue.async { [self] in
            queue.queued.wrappingSubtract(1, ordering: .relaxed)
            callHandler(ref.ref, on: queue, push: push)
            workDone()
        }
    }
}

/// A queue argument that may be nil: the default global queue then.
extension Args {
    func queueOrDefault(_ i: Int32) throws(LuaError) -> QueueObject {
        if isNoneOrNil(i) { return runtime.global(.default) }
        return try object(i, .queue)
    }

    /// A function argument, anchored in the registry and owned by the returned reference.
    func functionRef(_ i: Int32) throws(LuaError) -> LuaRef {
        try function(i)
        return LuaRef(runtime, ref(i))
    }
}

extension Options {
    /// A function option, anchored in the registry (nil clears).
    func functionRef() throws(LuaError) -> LuaRef? {
        if isNil { return nil }
        return LuaRef(args.runtime, args.ref(try function()))
    }
}
