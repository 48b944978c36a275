import CLuaShim
import Synchronization

/// Blocks blocked in a wait (`sleep`, `wait`, `sync`, ...), against the limit of libdispatch's
/// worker pool. On Linux the pool stops growing at DISPATCH_WORKQ_MAX_PTHREAD_COUNT, 255
/// threads (measured: 1,024 serial queues whose blocks wait for each other start 255 blocks and
/// no more); a script whose blocks all wait there while more work is queued stalls, and nothing
/// said so. `Runtime.wait` counts the blocks it blocks (a task's waits suspend it and hold no
/// thread; the main thread is not a worker), and when the count reaches the limit while work
/// is queued, one warning goes to stderr; `outstandingWork()` names the count from then on.
final class ThreadExhaustion: @unchecked Sendable {
    /// libdispatch's DISPATCH_WORKQ_MAX_PTHREAD_COUNT (src/shims.h).
    static let poolLimit = 255

    /// Blocks blocked in `Runtime.wait` now, on worker threads.
    let blocked = Atomic<Int>(0)
    private let warned = Atomic<Bool>(false)

    /// Counts the calling thread as blocked (unless it is the main thread); pair with `leave`.
    @inline(__always)
    func enter(_ rt: Runtime) -> Bool {
        guard ld_is_main_thread() == 0 else { return false }
        if blocked.add(1, ordering: .relaxed).newValue >= Self.poolLimit { check(rt) }
        return true
    }

    @inline(__always)
    func leave(_ counted: Bool) {
        if counted { blocked.subtract(1, ordering: .relaxed) }
    }

    /// Whether the blocked blocks fill the pool: then queued work cannot start.
    var atLimit: Bool { blocked.load(ordering: .relaxed) >= Self.poolLimit }

    /// Prints the warning, once, if the pool is full and work is queued besides the blocks
    /// running or parked (which `running` counts, the blocked ones among them).
    func check(_ rt: Runtime) {
        let n = blocked.load(ordering: .relaxed)
        guard n >= Self.poolLimit, !warned.load(ordering: .relaxed),
              rt.ledger.outstandingUnits > rt.ledger.running.load(ordering: .relaxed),
              !warned.exchange(true, ordering: .relaxed) else { return }
        writeStderr("luadispatch: warning: \(Self.describe(n)); work still queued cannot start "
                    + "until one of them returns. Waits inside tasks (dispatch.task) hold no thread.\n")
    }

    static func describe(_ n: Int) -> String {
        "\(n) blocks are blocked in waits (sleep, wait, sync, ...), the limit of libdispatch's "
            + "worker threads (about \(poolLimit) on Linux)"
    }
}
