import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C as `lua` handles it. While a chunk runs on the main Lua thread with the handler armed
/// (`ld_interrupt_arm`), SIGINT sets Ctrl-C's bit in the interpreter's request word and hooks
/// that thread, which raises "interrupted!" at its next instruction (CLuaShim/control/requests.c
/// decides). A wait the main thread is parked in runs no instruction: the handler also writes
/// to an eventfd, and a read source on it ends that wait, which then raises "interrupted!" too.
/// A signal that arrives just before the main thread parks is seen by `park` itself, which
/// checks for a pending interruption after publishing its waiter. The watcher (an eventfd and a
/// read source, whose first use starts Dispatch's manager thread) is made at the first wait
/// that parks on the main thread, or when the host arms the handler with work pending: a
/// script that never waits pays nothing for it at start-up.
final class Interruption: @unchecked Sendable {
    let fd: Int32
    let source: DispatchSourceRead
    /// The runtime whose waits the handler ends, until `stop()` (which `close()` calls before the
    /// runtime goes): used only under this lock, so `stop()` waits for a handler that uses it.
    /// Not a weak reference: that would give the runtime a side table, and every later retain
    /// and release of it (a block, a job) would take the slow path.
    private let target: Target

    private final class Target: Sendable {
        let runtime: Mutex<Unmanaged<Runtime>?>
        init(_ rt: Runtime) { runtime = Mutex(Unmanaged.passUnretained(rt)) }
    }

    init(_ rt: Runtime) {
        fd = ld_interrupt_eventfd()
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: .global())
        let target = Target(rt)
        self.target = target
        source.setEventHandler { [fd, target] in
            var value: UInt64 = 0
            _ = read(fd, &value, 8)
            // Already delivered (the hook raised "interrupted!", or a wait consumed it, and the
            // chunk may have ended since): nothing left to end.
            let whenIdle = target.runtime.withLock { rt -> (@Sendable () -> Void)? in
                guard let rt, ld_interrupt_take(rt._withUnsafeGuaranteedRef { $0.lock }) != 0 else { return nil }
                return rt._withUnsafeGuaranteedRef { $0.interruptMainThreadWait() ? nil : $0.idleInterruptHandler() }
            }
            whenIdle?()  // the host's, called without the lock: it may close the runtime
        }
        // The descriptor is closed only once libdispatch has let go of it (docs/reliability.md).
        source.setCancelHandler { [fd] in close(fd) }
        ld_interrupt_set_fd(fd)
        source.resume()
    }

    func stop() {
        target.runtime.withLock { $0 = nil }
        ld_interrupt_set_fd(-1)
        source.cancel()
    }
}

extension Runtime {
    /// Makes SIGINT (armed by the CLI around each chunk it runs on the main Lua thread) end a
    /// dispatch wait the main thread is blocked in, with "interrupted!". Waits on the main thread
    /// park from now on, so that they can be ended. `whenIdle` runs (on a Dispatch thread) for a
    /// SIGINT that arrives while no chunk runs: after the script, while the main queue is serviced.
    package func enableInterruption(whenIdle: @escaping @Sendable () -> Void) {
        control.parksMainThreadWaits.store(true, ordering: .releasing)
        control.interruption.withLock { state in
            if state == nil { state = (nil, whenIdle) }
        }
    }

    /// Makes the watcher if interruption is enabled and it does not exist yet.
    func ensureInterruptionWatcher() {
        control.interruption.withLock { state in
            if state != nil && state!.watcher == nil { state!.watcher = Interruption(self) }
        }
    }

    /// For a SIGINT that ended no wait: if no chunk runs on the main Lua thread (whose hook will
    /// fire otherwise), the host's `whenIdle`, which decides. The eventfd's handler may run late:
    /// when the hook has fired meanwhile (a chunk, or `dispatch.run` returning to one, raised
    /// "interrupted!" and then ended), this SIGINT is spent.
    func idleInterruptHandler() -> (@Sendable () -> Void)? {
        guard !states.mainChunkRunning.load(ordering: .acquiring), interruptPending else { return nil }
        return control.interruption.withLock { $0?.whenIdle }
    }

    /// Arms lua.c's SIGINT handler for the main Lua thread while the host services the main
    /// queue after the script: a SIGINT then goes to `whenIdle` (or ends a wait).
    package func armInterruption() {
        ensureInterruptionWatcher()
        ld_interrupt_arm(L, lock)
    }

    /// Whether the interruption pending on the main Lua thread was consumed here: the wait that
    /// ended with `.interrupted` raises "interrupted!" (lua.c's message) instead of its hook.
    func consumeInterruption() -> Bool { ld_interrupt_clear(lock) != 0 }

    /// Whether SIGINT is pending on the main Lua thread (nobody has raised "interrupted!" yet).
    var interruptPending: Bool { ld_interrupt_pending(lock) != 0 }
}

