import CLuaShim

/// Loops in bindings whose length a script controls (iterations, regions, results) look at
/// whether the interpreter is ending its code, as the VM does at each instruction: a time limit
/// or `interrupt()` ends them within a few milliseconds.
extension Runtime {
    /// Steps between two looks in such a loop: a look is one load, a step microseconds at most.
    static let stepsPerEndCheck = 1024

    /// The end's error once the interpreter is ending its code (the caller's Lua code is hooked
    /// to raise it again, as after a wait).
    @inline(__always) func checkEnd() throws(LuaError) {
        guard terminating else { return }
        ld_running_hook_now()
        throw .message(terminationMessage)
    }

    /// `checkEnd()` every `stepsPerEndCheck` values of `i`.
    @inline(__always) func checkEnd(every i: Int) throws(LuaError) {
        if i % Runtime.stepsPerEndCheck == 0 { try checkEnd() }
    }
}
