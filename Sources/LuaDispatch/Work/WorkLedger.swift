import Dispatch
import Synchronization

/// The work ledger of one interpreter: what is submitted and not finished, and what it runs on
/// or waits for (queues, groups, sources, tasks, `q:after` blocks). A part of `Runtime`
/// (`runtime.ledger`), stored inline: the counters a block touches are as near as before.
///
/// Invariants: `pending` counts every unit of outstanding work, the record blocks as one unit
/// while `recordsPending` is above zero (so `outstandingUnits` counts each); `running` and
/// `recordsPending` change under the lock only; the runtime is idle when `pending` is zero.
struct WorkLedger: ~Copyable {
    /// Records of blocks submitted with `dispatch_async_f`, from a free list (under the lock).
    let blockRecords = BlockRecords()
    /// Record blocks submitted and not finished. Written only under the lock (plain loads and
    /// stores, no read-modify-write); while above zero the runtime holds one retain of itself
    /// and the records count as one unit of `pending` (see `submitRecord`).
    let recordsPending = Atomic<Int>(0)
    /// Outstanding work: blocks submitted and not finished, pending notifies, live sources, ...
    let pending = Atomic<Int>(0)
    /// Blocks running Lua right now (including ones parked in a blocking call). Written under
    /// the lock only (`addUnderLock`), read from anywhere.
    let running = Atomic<Int>(0)
    /// Blocks blocked in waits, against libdispatch's pool limit (`ThreadExhaustion.swift`).
    let exhaustion = ThreadExhaustion()
    /// `q:after` blocks not run yet, which an end drops.
    let afters = PendingAfters()
    /// Times Lua was entered on the main thread by a block or handler (`dispatch.run("once")`).
    /// Written under the lock only.
    let mainThreadEntries = Atomic<Int>(0)
    /// Whether the main thread is servicing the main queue (and must be woken when idle).
    let drivingMainQueue = Atomic<Bool>(false)
    /// Every live queue made by this runtime, for the report of work left at exit.
    let queues = QueueRegistry()
    /// Group enters not yet left, over every live group, for the report of outstanding work.
    let openGroupEnters = OpenGroupEnters()
    /// Sources not released yet (cancelled when the interpreter closes).
    let sources = LiveSources()
    /// Tasks not finished yet, and who started them.
    let tasks = TaskRegistry()
    /// Threads waiting for the runtime to go idle, and their wake-up.
    let idleWaiters = Atomic<Int>(0)
    let idleSignal = DispatchSemaphore(value: 0)

    /// Units of outstanding work, each record block counted on its own (`pending` counts all
    /// of them as one). Exact under the lock; without it, may be off while work moves.
    var outstandingUnits: Int {
        let records = recordsPending.load(ordering: .relaxed)
        return pending.load(ordering: .acquiring) - (records > 0 ? 1 : 0) + records
    }
}
