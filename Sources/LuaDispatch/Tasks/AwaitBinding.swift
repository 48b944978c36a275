import CLua
import CLuaShim
import Dispatch

/// What one `dispatch.await` waits for: the values its `resume` function is called with.
/// Under the interpreter lock (`resume` is Lua code, wherever it is called from).
final class Resumer {
    let runtime: Runtime
    /// A table `{n = count, ...}` of `resume`'s arguments, once called.
    var values: Int32 = LUA_NOREF
    var resumed = false
    /// The wait ended without the values (the task was cancelled): `resume` returns false.
    var abandoned = false
    var waiter: Waiter?

    init(_ rt: Runtime) { runtime = rt }
    deinit { runtime.deferUnref(values) }
}

/// `dispatch.await(fn)`: calls `fn(resume)`, then waits until `resume(...)` has been called and
/// returns its arguments. The call of `fn` goes through the trampoline (`LD_CALL`, so `fn` may
/// itself wait inside a task); the wait is an ordinary one (`Runtime.wait`).
enum AwaitBinding {
    nonisolated(unsafe) private static var afterCall: Int32 = -1
    nonisolated(unsafe) private static var resume: Int32 = -1

    static func install(_ m: inout ModuleSpec) {
        afterCall = Bindings.register("await") { a throws(LuaError) in
            let r: Resumer = try a.object(2, .resumer)
            lua_settop(a.L, 2)
            return try a.runtime.wait(a, AwaitWait(resumer: r))
        }
        resume = Bindings.register("resume") { a throws(LuaError) in try resumeBody(a) }
        m.function("await") { a throws(LuaError) in
            try a.function(1)
            let L = a.L
            lua_settop(L, 1)
            a.runtime.objects.push(L, Resumer(a.runtime), .resumer)
            lua_pushvalue(L, 1)
            lua_pushvalue(L, 2)
            ld_push_binding_n(L, resume, 1)
            ld_continue_with(afterCall, 1)
            return Int32(LD_CALL)
        }
        m.types.append(ObjectType(.resumer))
    }

    /// `resume(...)`: stores its arguments and ends the wait; true unless the wait was abandoned.
    private static func resumeBody(_ a: Args) throws(LuaError) -> Int32 {
        let L = a.L
        let r: Resumer = try a.object(ld_upvalueindex(2), .resumer)
        guard !r.resumed else {
            throw .message("resume called twice (the resume function of dispatch.await may be called once)")
        }
        r.resumed = true
        Lua.pack(L, from: 1, count: a.count)
        r.values = luaL_ref(L, ld_registryindex())
        lua_pushboolean(L, r.abandoned ? 0 : 1)
        r.waiter?.finish(.done)
        return 1
    }
}

struct AwaitWait: Waitable {
    let resumer: Resumer

    var kind: String { "await" }
    func poll() -> Bool { resumer.resumed }
    func arm(_ waiter: Waiter) { resumer.waiter = waiter }

    func end(_ outcome: WaitOutcome) {
        resumer.waiter = nil
        if outcome != .done { resumer.abandoned = true }
    }

    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 {
        guard let n = Lua.unpack(a.L, ref: resumer.values) else { throw .message("await: too many results") }
        return n
    }
}
