import CLuaShim
import Dispatch
import Synchronization

/// A `DispatchQueue` as Lua sees it, with the state Dispatch does not expose but the runtime
/// must know to refuse what would make libdispatch abort: suspension count, activation, target.
final class QueueObject: @unchecked Sendable {
    /// `.host`: a queue the embedding program made and shared with Lua.
    enum Kind { case custom, main, global, host }

    let queue: DispatchQueue
    let label: String
    let concurrent: Bool
    let kind: Kind
    /// The queue this one targets (nil: a global queue). Changed only under the interpreter lock.
    @exclusivity(unchecked) var target: QueueObject?
    let suspensions = Atomic<Int>(0)
    let inactive: Atomic<Bool>
    /// Blocks submitted and not yet started, for the report of work left at exit (record
    /// blocks are in `queuedRecords`; `waiting` is both).
    let queued = Atomic<Int>(0)
    /// Record blocks (`Runtime.submitRecord`) not yet started, and not yet finished. Written only
    /// under the interpreter lock, with plain loads and stores; while `records` is above zero
    /// the queue holds one retain of itself for them.
    let queuedRecords = Atomic<Int>(0)
    let records = Atomic<Int>(0)
    /// Blocks and sources waiting on this queue.
    var waiting: Int { queued.load(ordering: .relaxed) + queuedRecords.load(ordering: .relaxed) }
    /// Where this queue is listed while alive (custom queues only).
    var registry: QueueRegistry?
    /// The queue's `dispatch_queue_t`, for `dispatch_async_f` (nil if it cannot be found).
    let rawQueue: UnsafeMutableRawPointer?
    /// What a script's queue costs against the memory limit (`QueueBinding.make`).
    var charge = MemoryCharge.none

    init(queue: DispatchQueue, label: String, concurrent: Bool, kind: Kind = .custom,
         target: QueueObject? = nil, inactive: Bool = false) {
        self.queue = queue
        self.label = label
        self.concurrent = concurrent
        self.kind = kind
        self.target = target
        self.inactive = Atomic(inactive)
        rawQueue = RawDispatch.queue(queue)
    }

    convenience init(main: DispatchQueue) {
        self.init(queue: main, label: main.label, concurrent: false, kind: .main)
    }

    /// The queue's own QoS, as Dispatch reports it: `"unspecified"` for a queue that takes its
    /// target's QoS (the default, as in Swift).
    var qos: String { QoS.name(queue.qos.qosClass) }

    /// Releasing a suspended or inactive queue aborts the process: balance first.
    deinit {
        registry?.remove(self)
        if inactive.load(ordering: .relaxed) { queue.activate() }
        for _ in 0..<suspensions.load(ordering: .relaxed) { queue.resume() }
    }

    /// Undoes what Lua did to the queue's state: activates it, and resumes it as often as
    /// Lua suspended it.
    static func release(_ q: QueueObject) {
        if q.inactive.exchange(false, ordering: .relaxed) { q.queue.activate() }
        while q.suspensions.load(ordering: .relaxed) > 0 {
            q.suspensions.wrappingSubtract(1, ordering: .relaxed)
            q.queue.resume()
        }
    }

    var description: String {
        "dispatch.queue (\(label), \(concurrent ? "concurrent" : "serial"))"
    }

    /// This queue and the queues it targets, innermost first.
    var chain: UnfoldSequence<QueueObject, (QueueObject?, Bool)> {
        sequence(first: self) { $0.target }
    }

    /// Whether blocks on this queue cannot run now: it, or a queue it targets, is suspended or inactive.
    var isHeld: Bool {
        chain.contains { $0.suspensions.load(ordering: .relaxed) > 0 || $0.inactive.load(ordering: .relaxed) }
    }

    /// The queue of this queue's target chain that the calling thread holds, so that no block
    /// of this queue can start until the thread moves on: the main queue on the main thread, a
    /// serial queue whose block the thread runs (directly or through a target), a concurrent
    /// queue whose barrier it runs, or, for a `barrier`, a concurrent queue it runs any block of.
    func heldByCallingThread(barrier: Bool) -> QueueObject? {
        let onMain = ld_thread_number() == 1
        let frames = ld_frame_count()
        // The common case, answered without walking anything: a queue that targets no other
        // queue, called from outside any block.
        if frames == 0, target == nil, kind != .main { return nil }
        var next: QueueObject? = self
        while let held = next {
            next = held.target
            if held.kind == .main && onMain { return held }
            for i in 0..<frames {
                let running = Unmanaged<QueueObject>.fromOpaque(ld_frame_queue(i)!).takeUnretainedValue()
                let runningBarrier = ld_frame_barrier(i) != 0
                let exclusive = !held.concurrent || (runningBarrier && running === held) || (barrier && held === self)
                if exclusive, running.chain.contains(where: { $0 === held }) { return held }
            }
        }
        return nil
    }

    /// The reason a `sync` (or `barrier_sync`) onto this queue from the calling thread would
    /// deadlock, or nil. Dispatch would hang or abort; the runtime raises this instead.
    func syncDeadlock(barrier: Bool) -> String? {
        guard let held = heldByCallingThread(barrier: barrier) else { return nil }
        if held.kind == .main && ld_thread_number() == 1 {
            return held === self
                ? "sync onto the main queue '\(label)' from the main thread would deadlock"
                : "sync onto queue '\(label)' would deadlock: it targets the main queue '\(held.label)' and this is the main thread"
        }
        if held === self {
            let kind = held.concurrent ? "concurrent" : "serial"
            return "sync onto \(kind) queue '\(label)' from a block running on it would deadlock"
        }
        return "sync onto queue '\(label)' would deadlock: it targets serial queue '\(held.label)', which is running the calling block"
    }
}

/// The live queues of a runtime. Not weak references: those would move every retain and
/// release of a queue onto Swift's slow reference-counting path. Queues remove themselves.
final class QueueRegistry: @unchecked Sendable {
    private let queues = Mutex<[ObjectIdentifier: Unmanaged<QueueObject>]>([:])

    func add(_ q: QueueObject) { queues.withLock { $0[ObjectIdentifier(q)] = .passUnretained(q) } }
    func remove(_ q: QueueObject) { _ = queues.withLock { $0.removeValue(forKey: ObjectIdentifier(q)) } }

    /// Calls `body` with every live queue; queues being deinitialised wait until it returns.
    func forEach(_ body: (QueueObject) -> Void) {
        queues.withLock { all in
            for q in all.values { q._withUnsafeGuaranteedRef(body) }
        }
    }
}
