import CLuaShim
import Synchronization

/// Who holds the interpreter and when running code gives it up or stops, as the runtime sees it:
/// the request word's address (CLuaShim/control/requests.c owns its bits and the policy), the end
/// in progress and the deadline's token, the waits an end must reach, Ctrl-C's watcher, and the
/// worker interpreters the limits reach. A part of `Runtime` (`runtime.control`).
///
/// Invariants: `termination` is nonzero exactly while an end is in progress (`Termination.swift`
/// sets it with the word's TERMINATE bit and clears both when the interpreter is idle);
/// `lastTermination` is the kind of the last end; `deadlineToken` only grows, so a stale
/// deadline does nothing; `parkedWaiters` holds every wait parked now.
struct InterpreterControl: ~Copyable {
    /// The lock's word of requests (see `Runtime.terminating`).
    let lockRequests: UnsafePointer<UInt32>
    /// The memory limit's count of bytes, which every Lua state of the interpreter and the bytes
    /// it holds for scripts charge (nil: no limit).
    let budget: OpaquePointer?
    /// Times a block gave the interpreter up to a waiting one (switching).
    let switches = Atomic<Int>(0)
    /// `LuaScriptError.Kind` of the end in progress (0: none), and of the last one.
    let termination = Atomic<Int>(0)
    let lastTermination = Atomic<Int>(0)
    /// The armed deadline's number: arming or disarming moves it on, so a stale one does nothing.
    let deadlineToken = Atomic<Int>(0)
    /// Whether the deadline goes once no work is left (a run that returned with work running).
    /// The token of that deadline (0: none), so that a later run's deadline is never disarmed.
    let disarmsWhenIdle = Atomic<Int>(0)
    /// Every wait parked now, so that an end can end them.
    let parkedWaiters = Mutex<[ObjectIdentifier: ParkedWaiter]>([:])
    /// Whether every wait parks (rather than blocking natively), so that an end (a time limit,
    /// `interrupt()`) can reach it: in every interpreter a host makes; the CLI parks only with
    /// a time limit (`endableWaits`).
    let parksAllWaits = Atomic<Bool>(true)
    /// The waiter the main thread is parked on, and whether its waits park (see `Waiting.swift`).
    let mainThreadWaiter = Mutex<ParkedWaiter?>(nil)
    let parksMainThreadWaits = Atomic<Bool>(false)
    /// Ctrl-C's eventfd watcher and the host's action for a SIGINT outside any chunk.
    let interruption = Mutex<(watcher: Interruption?, whenIdle: @Sendable () -> Void)?>(nil)
    /// Worker interpreters working for this one now, which its limits reach (`Parallel/`).
    let ownedWorkers = OwnedWorkers()
    /// Whether an end's clean-up runs the finalizers the end left pending (each ended, for a
    /// second at most), so that they do not run in the next script (`drainsFinalizersAfterEnd`).
    let drainsFinalizers = Atomic<Bool>(true)

    init(lock: OpaquePointer, budget: OpaquePointer?) {
        lockRequests = ld_lock_requests(lock)
        self.lock = lock
        self.budget = budget
    }

    private let lock: OpaquePointer
    /// Switch requests waiting blocks have sent the interpreter's holders so far.
    var switchRequests: Int { Int(ld_lock_switch_requests(lock)) }

    /// Whether the interpreter is ending its code: a load of the word, as every wait makes.
    @inline(__always) var terminating: Bool { ld_terminate_requested(lockRequests) != 0 }
}
