import CLua
import CLuaShim
import Dispatch

/// `dispatch.once(fn)`: the callable runs `fn` once, whichever caller comes first; every caller
/// gets its results (or its error). State changes happen under the interpreter lock.
final class OnceObject: @unchecked Sendable {
    enum State {
        case idle
        /// Running `fn` for `caller`: a thread number, or minus a task's id (a task may move
        /// between threads while `fn` waits).
        case running(caller: Int)
        case done(ok: Bool, results: Int32)
    }

    let fn: LuaRef
    var state = State.idle
    let finished = DispatchGroup()

    init(_ fn: LuaRef) { self.fn = fn }

    deinit {
        if case .done(_, let results) = state { fn.runtime.deferUnref(results) }
    }
}

enum OnceBinding {
    nonisolated(unsafe) private static var afterCall: Int32 = -1

    static func install(_ m: inout ModuleSpec) {
        afterCall = Bindings.register("once", finishCall)
        m.function("once") { a throws(LuaError) in
            try a.function(1)
            a.runtime.objects.push(a.L, OnceObject(LuaRef(a.runtime, a.ref(1))), .once)
            return 1
        }
        var once = ObjectType(.once)
        once.meta("__call") { a throws(LuaError) in try call(a) }
        once.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, "dispatch.once")
            return 1
        }
        m.types.append(once)
    }

    private static func caller(_ L: OpaquePointer) -> Int {
        if let task = TaskObject.current(L) { return -task.id }
        return Int(ld_thread_number())
    }

    /// The first caller runs `fn` in protected mode through the trampoline (`LD_PCALL`), so
    /// that `fn` may wait inside a task; later callers wait for it, or get its results.
    private static func call(_ a: Args) throws(LuaError) -> Int32 {
        let once: OnceObject = try a.object(1, .once)
        switch once.state {
        case .idle:
            once.state = .running(caller: caller(a.L))
            once.finished.enter()
            lua_settop(a.L, 1)
            lua_rawgeti(a.L, ld_registryindex(), lua_Integer(once.fn.ref))
            ld_continue_with(afterCall, 0)
            return Int32(LD_PCALL)
        case .running(let runner):
            if runner == caller(a.L) { throw .message("recursive call of a dispatch.once function") }
            return try a.runtime.wait(a, OnceWait(once: once))
        case .done:
            return try pushDone(a.L, once)
        }
    }

    /// After `fn` returned or raised: keeps its results (or error) for every caller.
    private static func finishCall(_ a: Args) throws(LuaError) -> Int32 {
        let L = a.L
        let once: OnceObject = try a.object(1, .once)
        let ok = ld_call_status() == LUA_OK
        let n = lua_gettop(L) - 1
        Lua.pack(L, from: 2, count: n)
        once.state = .done(ok: ok, results: luaL_ref(L, ld_registryindex()))
        once.finished.leave()
        if !ok { throw .raise }
        return n
    }

    /// Pushes the results of a finished `fn`, or raises its error again.
    static func pushDone(_ L: OpaquePointer, _ once: OnceObject) throws(LuaError) -> Int32 {
        guard case .done(let ok, let results) = once.state else { return 0 }
        guard let n = Lua.unpack(L, ref: results) else { throw .message("once: too many results") }
        if !ok { throw .raise }
        return n
    }
}

/// A call of a `dispatch.once` whose `fn` another caller is running.
struct OnceWait: Waitable {
    let once: OnceObject

    var kind: String { "once" }
    static var blocksNatively: Bool { true }
    func block(_ timeout: Deadline) -> Bool { Waits.wait(once.finished, timeout) }
    func arm(_ waiter: Waiter) {
        let (q, end) = waiter.delivery()
        once.finished.notify(queue: q, execute: end)
    }
    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 { try OnceBinding.pushDone(a.L, once) }
}
