import CLua
import CLuaShim

/// Running a block: the Lua part every queue block shares (a pooled Lua thread, the queue's
/// frame, the trace), and what happens to its errors. The lock and the Lua threads are in
/// `Runtime.swift`; record blocks enter through `runRecord` (`BlockRecords.swift`).
extension Runtime {
    /// Runs the Lua function at registry `ref` as a block of `queue`, then reports any error.
    /// Called by Dispatch on the queue's thread, without the lock. (Blocks submitted by
    /// `submitRecord` run through `runRecord` instead, with the same Lua part.) `kind` and
    /// `flow` (the submission's) are for the trace.
    func runBlock(_ ref: Int32, on queue: QueueObject, barrier: Bool = false, consume: Bool, queued: Bool,
                  kind: TraceKind = .async, flow: UInt64 = 0) {
        if queued { queue.queued.wrappingSubtract(1, ordering: .relaxed) }
        defer { workDone() }
        pushFrame(queue, barrier)
        defer { ld_frame_pop() }
        let requested = acquireForBlock()
        guard enterLuaHeld() else { return }
        runLuaBlock(on: queue, barrier: barrier, kind: kind, flow: flow, requested: requested) { T in
            lua_rawgeti(T, ld_registryindex(), lua_Integer(ref))
            if consume { luaL_unref(T, ld_registryindex(), ref) }
        }
        leaveLua()
    }

    /// Marks the calling thread as running a block of `queue` (`currentQueue`, the deadlock
    /// checks of `sync`) until `ld_frame_pop`. Only the calling thread reads its frames, so this
    /// is done before taking the lock and undone after releasing it, outside the time the
    /// interpreter is held.
    @inline(__always) func pushFrame(_ queue: QueueObject, _ barrier: Bool) {
        _ = ld_frame_push(Unmanaged.passUnretained(queue).toOpaque(), barrier ? 1 : 0)
    }

    /// The Lua part of a block: the function `push` pushes, called on a pooled thread as a
    /// block of `queue`, its error reported, recorded when tracing (`requested`: when the block
    /// asked for the lock, 0 when not tracing). Lock held, Lua entered, the queue's frame pushed.
    @inline(__always)
    func runLuaBlock(on queue: QueueObject, barrier: Bool, kind: TraceKind, flow: UInt64, requested: UInt64,
                     push: (OpaquePointer) -> Void) {
        let T = takeThread()
        push(T)
        let traced = traceBegin(T, requested, queue.label, barrier ? .barrier : kind, flow: flow)
        if ld_pcall(T, 0, 0, 1) != LUA_OK { reportError(T, label: queue.label) }
        traceEnd(traced)
        giveBack(T)
    }

    /// The label of the queue whose block the calling thread runs, if any.
    func currentQueue() -> QueueObject? {
        let n = ld_frame_count()
        if n > 0, let q = ld_frame_queue(n - 1) {
            return Unmanaged<QueueObject>.fromOpaque(q).takeUnretainedValue()
        }
        return ld_thread_number() == 1 ? mainQueue : nil
    }

    /// Reports the error that `ld_msgh` left on top of `T`'s stack, and pops it. Lock held.
    func reportError(_ T: OpaquePointer, label: String?) {
        let (message, traceback) = ErrorValue.pop(T)
        handleUncaught(T, message: message, traceback: traceback, label: label)
    }

    /// Gives an uncaught error to the Lua handler, or to the default report. Lock held.
    func handleUncaught(_ T: OpaquePointer, message: String, traceback: String, label: String?) {
        // Code the interpreter ended (a time limit, an interrupt): the host reports the end once.
        if control.termination.load(ordering: .acquiring) != 0 { return }
        traceInstant("error", message)
        if reporting.errorHandlerRef != LUA_NOREF {
            let top = lua_gettop(T)
            lua_rawgeti(T, ld_registryindex(), lua_Integer(reporting.errorHandlerRef))
            Lua.push(T, message)
            Lua.push(T, traceback)
            if let label { Lua.push(T, label) } else { lua_pushnil(T) }
            if ld_pcall(T, 3, 0, 0) == LUA_OK { return }
            let failure = Lua.string(T, -1) ?? "(error object is not a string)"
            lua_settop(T, top)
            uncaughtErrorHandler(LuaScriptError(message: "error handler failed: \(failure) (while handling: \(message))",
                                                traceback: traceback, label: label))
        } else {
            uncaughtErrorHandler(LuaScriptError(message: message, traceback: traceback, label: label))
        }
        reporting.uncaughtErrors.wrappingAdd(1, ordering: .relaxed)
    }
}
