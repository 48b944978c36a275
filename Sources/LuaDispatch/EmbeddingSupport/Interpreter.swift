import CLua
import CLuaShim

/// A Lua value Swift holds by reference (`LuaFunction`, `LuaTable`): anchored in the registry, and
/// released through the runtime's deferred path when the last Swift copy is dropped, from any
/// thread (the reference is dropped the next time some thread holds the interpreter).
final class LuaHandle: @unchecked Sendable {
    let runtime: Runtime
    let ref: Int32
    /// The value's address (`lua_topointer`), which identifies it while it is anchored.
    let address: UInt

    /// Anchors the value at `i`. Lock held.
    init(_ L: OpaquePointer, _ i: Int32, _ runtime: Runtime) {
        self.runtime = runtime
        address = UInt(bitPattern: lua_topointer(L, i))
        lua_pushvalue(L, i)
        ref = luaL_ref(L, ld_registryindex())
    }

    deinit { runtime.deferUnref(ref) }

    /// Whether both refer to the same Lua value (two references may anchor one value).
    func refersToSameValue(as other: LuaHandle) -> Bool {
        self === other || (runtime === other.runtime && address == other.address)
    }

    /// Pushes the value onto `L`, which must be a thread of the same interpreter. Lock held.
    @inline(__always) func push(_ L: OpaquePointer) throws(LuaConversionError) {
        guard ld_runtime_of(L) == Unmanaged.passUnretained(runtime).toOpaque() else {
            throw LuaConversionError("a Lua value of another interpreter cannot be used here")
        }
        lua_rawgeti(L, ld_registryindex(), lua_Integer(ref))
    }
}

extension Runtime {
    /// Runs `body` with the interpreter held, on a Lua thread of its own whose index 1 is the
    /// message handler (`ld_msgh`), from any thread. On a thread that is already running Lua in
    /// this interpreter (inside a host function, a method, a `__gc`), the call is nested: the
    /// lock is held already, and `body` runs on a fresh Lua thread, so the caller's stack is
    /// never touched. The embedding API's one way into the interpreter (built on `acquire`,
    /// `takeThread`, `giveBack` and `drainDeferred`, as `callOnPooledThread` is).
    func withInterpreter<T>(_ body: (OpaquePointer) throws(LuaScriptError) -> T) throws(LuaScriptError) -> T {
        if ld_lock_held() == lock {
            guard !isClosed else { throw LuaScriptError(message: "the interpreter is closed") }
            let T = takeThread()
            defer { giveBack(T) }
            return try body(T)
        }
        acquire()
        defer { release() }
        guard !isClosed else { throw LuaScriptError(message: "the interpreter is closed") }
        ledger.running.addUnderLock(1)
        drainDeferred()  // so that Lua code this call runs sees what Swift released meanwhile
        let T = takeThread()
        defer {
            giveBack(T)
            drainDeferred()
            ledger.running.addUnderLock(-1)
        }
        return try body(T)
    }

    /// Calls the function below the `count` values on top of `T` in protected mode (message
    /// handler at index 1), traced as a call from the host. On failure, the error with its
    /// traceback. Lock held.
    func protectedCall(_ T: OpaquePointer, _ count: Int32, results: Int32 = ld_multret()) throws(LuaScriptError) {
        let requested = traceClock()
        var traced: Tracer.Open?
        if requested != 0 {
            lua_pushvalue(T, -1 - count)
            traced = traceBegin(T, requested, ld_is_main_thread() != 0 ? mainQueue.label : "(host thread)", .call)
            ld_pop(T, 1)
        }
        // A call from outside Lua (a held function the host calls) gets the runtime's time limit.
        let limited = ld_running_count() == 0 ? try beginLimitedCall() : false
        defer { endLimitedRun(limited) }
        let status = Nesting.pcall(T, count, results, 1)
        traceEnd(traced)
        if status != LUA_OK { throw scriptError(T, status: status) }
    }

    /// The values from `index` to the top of `T`, copied. Lock held.
    func values(_ T: OpaquePointer, from index: Int32) throws(LuaScriptError) -> [LuaValue] {
        let top = lua_gettop(T)
        guard top >= index else { return [] }
        var values: [LuaValue] = []
        values.reserveCapacity(Int(top - index + 1))
        for i in index...top {
            do { values.append(try LuaValue.read(T, i)) } catch {
                throw LuaScriptError(message: "result #\(i - index + 1): \(error)")
            }
        }
        return values
    }
}
