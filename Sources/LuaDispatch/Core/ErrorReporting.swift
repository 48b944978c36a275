import CLua
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where uncaught errors go, and what `dispatch.exit` does: a part of `Runtime`
/// (`runtime.reporting`), whose public `uncaughtErrorHandler` and `exitHandler` set these.
///
/// Invariants: `errorHandlerRef` is a registry reference of the interpreter, or LUA_NOREF, and
/// changes under the lock only; `uncaughtErrors` counts every error that reached the default
/// handler, never decreasing.
struct ErrorReporting: ~Copyable {
    /// Errors that reached the default handler.
    let uncaughtErrors = Atomic<Int>(0)
    /// Lua error handler set by `dispatch.set_error_handler` (a registry ref), under the lock.
    var errorHandlerRef: Int32 = LUA_NOREF
    /// See `Runtime.uncaughtErrorHandler`.
    var uncaughtErrorHandler: @Sendable (LuaScriptError) -> Void = { error in
        writeStderr("luadispatch: \(error.label == nil ? "error: " : "")\(error)\n")
    }
    /// See `Runtime.exitHandler`.
    var exitHandler: @Sendable (Int32) -> Void = { code in
        fflush(nil)
        _exit(code)
    }
}
