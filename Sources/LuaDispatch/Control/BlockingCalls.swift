import CLua
import CLuaShim

/// Blocking C calls without the interpreter (docs/execution-model.md, "Blocking calls"): the
/// standard library's replacements (CLuaShim/stdlib) and C modules (include/luadispatch.h) give
/// the interpreter up around a call that waits, through these two functions, as
/// `Runtime.unlocked` does for the runtime's own waits.
extension Runtime {
    /// Registers the pair with the C side (once per process is enough; idempotent).
    static func setUpBlockingCalls() {
        ld_blocking_init(releaseForBlockingCall, retakeAfterBlockingCall)
    }

    /// Releases the interpreter if the calling thread holds it for `L`'s runtime and the
    /// runtime is open; returns the runtime (unretained: a thread inside a call keeps its block,
    /// and a closing runtime waits for running blocks), or nil when nothing was released.
    static let releaseForBlockingCall: ld_release_fn = { L in
        guard let L, let pointer = ld_runtime_of(L) else { return nil }
        let rt = Unmanaged<Runtime>.fromOpaque(pointer).takeUnretainedValue()
        guard ld_lock_held() == rt.lock, !rt.isClosed else { return nil }
        rt.release()
        return pointer
    }

    /// Takes the interpreter back, and drops the references released meanwhile.
    static let retakeAfterBlockingCall: ld_retake_fn = { pointer in
        let rt = Unmanaged<Runtime>.fromOpaque(pointer!).takeUnretainedValue()
        rt.acquire()
        rt.drainDeferred()
    }
}
