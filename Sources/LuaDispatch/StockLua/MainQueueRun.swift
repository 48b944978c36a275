import CLua
import CLuaShim
import Dispatch

/// How `dispatch.run` / `Runtime.run(_:)` services the main queue (luv's `uv.run` modes).
public enum RunMode: String, Sendable, CaseIterable {
    /// Until no work is left (what the CLI does after a script).
    case `default`
    /// What is ready, waiting for at least one main-thread block or handler if work is left.
    case once
    /// What is ready, never waiting.
    case nowait
}

extension Runtime {
    /// Services the main queue on the calling thread, which must be the process's main thread
    /// and must not hold the interpreter (from inside a host function it returns at once);
    /// returns whether work is left.
    @discardableResult
    public func run(_ mode: RunMode) -> Bool {
        guard !isInsideLua else { return pendingWork > 0 }
        return serve(mode, stop: { false })
    }

    /// `stop` is polled between passes (every 50 ms at most): true ends the run early.
    func serve(_ mode: RunMode, stop: () -> Bool) -> Bool {
        ledger.drivingMainQueue.store(true, ordering: .releasing)
        defer {
            NetPoller.releaseFromMainLoop(self)
            ledger.drivingMainQueue.store(false, ordering: .releasing)
        }
        switch mode {
        case .nowait:
            serviceMainQueueAndSockets(timeout: 0)
        case .once:
            let entries = ledger.mainThreadEntries.load(ordering: .acquiring)
            while pendingWork > 0 && ledger.mainThreadEntries.load(ordering: .acquiring) == entries && !stop() {
                serviceMainQueueAndSockets(timeout: 50)
                if stalledWork() != nil { break }
            }
        case .default:
            var lastCheck = DispatchTime.now()
            while pendingWork > 0 && !stop() {
                serviceMainQueueAndSockets(timeout: 50)
                let now = DispatchTime.now()
                guard now.uptimeNanoseconds - lastCheck.uptimeNanoseconds > 50_000_000 else { continue }
                lastCheck = now
                if let report = stalledWork() {
                    writeStderr("luadispatch: warning: work that can never run: \(report)\n")
                    break
                }
            }
        }
        return pendingWork > 0
    }
}

/// `dispatch.run([mode])`.
enum RunBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("run") { a throws(LuaError) in
            let name = try a.optionalString(1) ?? "default"
            guard let mode = RunMode(rawValue: name) else {
                throw .argument(1, "invalid option '\(name)'")
            }
            guard ld_is_main_thread() != 0 else {
                throw a.error("dispatch.run: must be called on the main thread")
            }
            guard ld_frame_count() == 0, TaskObject.current(a.L) == nil else {
                throw a.error("dispatch.run: cannot be called from a block, a handler or a task")
            }
            let rt = a.runtime
            // The code that called run has handed control to the loop: the tasks it started
            // and that failed unobserved are reported now (as when a chunk returns).
            rt.endTaskOwner(a.L)
            if rt.stockLua != nil { rt.armInterruption() }   // see `park`
            let interrupt = HookWatch(rt.L)
            let left = rt.unlocked { rt.serve(mode, stop: { interrupt.changed() || rt.interruptPending }) }
            lua_pushboolean(a.L, left ? 1 : 0)
            return 1
        }
    }
}

/// Notices lua.c's own Ctrl-C (the runtime's sets a bit, `interruptPending`, and hooks the same
/// way): the handler sets a hook on the main Lua thread, which fires at the next Lua instruction;
/// while `dispatch.run` services the main queue no Lua runs there, so the run ends as soon as a
/// hook appears, and the hook raises "interrupted!" on the way back. The switch hook is not such a change: the main thread takes
/// the interpreter while it serves (a main-queue block starting, the check for stalled work)
/// with the main Lua thread innermost, so a switch asked for then hooks that thread; it watches
/// the script's hook, through the switch hook.
private struct HookWatch {
    let L: OpaquePointer
    let hook: lua_Hook?
    let mask: Int32

    init(_ L: OpaquePointer) {
        self.L = L
        hook = ld_script_hook(L)
        mask = ld_script_hookmask(L)
    }

    func changed() -> Bool {
        let now = ld_script_hook(L)
        let same = (now == nil && hook == nil)
            || (now != nil && hook != nil && unsafeBitCast(now, to: UnsafeRawPointer.self) == unsafeBitCast(hook, to: UnsafeRawPointer.self))
        return !same || ld_script_hookmask(L) != mask
    }
}
