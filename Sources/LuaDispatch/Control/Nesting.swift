import CLua
import CLuaShim

/// The bound on blocking calls that run Lua code nested on the calling OS thread (`q:sync`,
/// `q:barrier_sync`, `item:perform()`, `concurrent_perform`, a host's call back into Lua). Each
/// such call runs its function on a fresh pooled Lua thread, whose C-call count starts at zero,
/// so Lua's own guard (LUAI_MAXCCALLS) never sees the nesting; without this bound a recursion
/// through them ran the OS thread out of stack (SIGSEGV). See ld_nesting.h.
enum Nesting {
    static let message = "stack overflow (blocking calls nested too deeply)"

    /// Refuses a blocking call that would run Lua code nested once more on this OS thread.
    @inline(__always) static func check() throws(LuaError) {
        guard ld_nest_allowed() != 0 else { throw .message(message) }
    }

    /// `ld_pcall` one nesting level deeper; past the bound, the function and its `nargs`
    /// arguments are replaced by the overflow error, as a failed call leaves it.
    @inline(__always) static func pcall(_ T: OpaquePointer, _ nargs: Int32, _ nresults: Int32, _ msgh: Int32) -> Int32 {
        guard ld_nest_enter() != 0 else {
            lua_settop(T, -nargs - 2)
            Lua.push(T, message)
            return LUA_ERRRUN
        }
        defer { ld_nest_leave() }
        return ld_pcall(T, nargs, nresults, msgh)
    }
}
