import CLua
import CLuaShim
import Dispatch

/// A `DispatchWorkItem` running a Lua function, with the counts libdispatch checks by aborting:
/// an item may not be waited on twice at once, nor waited on or observed once it ran twice.
final class WorkItemObject: @unchecked Sendable {
    /// Its native cost, charged to the memory limit while it lives.
    var native = MemoryCharge.none
    struct Gate {
        var runs = 0
        var waiting = false
    }

    let fn: LuaRef
    let flags: DispatchWorkItemFlags
    let qos: DispatchQoS
    /// Guards `gateState`. A pthread mutex, not Synchronization.Mutex: Mutex takes its contended
    /// path inside the uninstrumented standard library (`_MutexHandle._lockSlow`), so
    /// ThreadSanitizer misses the synchronisation and reports races on the gate that cannot happen.
    private let gateLock = ld_mutex_new()!
    private var gateState = Gate()
    private(set) var item: DispatchWorkItem!

    deinit { ld_mutex_free(gateLock) }

    func withGate<R>(_ body: (inout Gate) -> R) -> R {
        ld_mutex_lock(gateLock)
        defer { ld_mutex_unlock(gateLock) }
        return body(&gateState)
    }

    init(_ rt: Runtime, fn: Int32, qos: DispatchQoS, flags: DispatchWorkItemFlags) {
        self.fn = LuaRef(rt, fn)
        self.qos = qos
        self.flags = flags
        item = DispatchWorkItem(qos: qos, flags: flags) { [rt] in rt.runItemBody(fn) }
    }

    /// Runs the item once (a no-op when cancelled). Called without the interpreter lock.
    func run() {
        withGate { $0.runs += 1 }
        item.perform()
    }

    /// Registers `work` to run after the item completes; refused once the item ran twice.
    func notify(_ q: DispatchQueue, _ work: @escaping @Sendable () -> Void) -> Bool {
        withGate { g in
            guard g.runs <= 1 else { return false }
            item.notify(queue: q, execute: work)
            return true
        }
    }
}

extension Runtime {
    /// The body of every work item: runs the function at `ref` on the calling thread.
    func runItemBody(_ ref: Int32) {
        let requested = traceClock()
        guard enterLua() else { return }
        let T = takeThread()
        lua_rawgeti(T, ld_registryindex(), lua_Integer(ref))
        // Run through a queue (not `perform`): the frame says whether as a barrier.
        let n = ld_frame_count()
        let traced = traceBegin(T, requested, currentQueue()?.label, n > 0 && ld_frame_barrier(n - 1) != 0 ? .barrier : .workItem,
                                flow: requested != 0 ? ld_take_pending_flow() : 0)
        if Nesting.pcall(T, 0, 0, 1) != LUA_OK { reportError(T, label: currentQueue()?.label) }
        traceEnd(traced)
        giveBack(T)
        leaveLua()
    }
}

/// `dispatch.work_item(fn [, opts])` and its methods.
enum WorkItemBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("work_item") { a throws(LuaError) in
            try a.function(1)
            var qos = DispatchQoS.unspecified
            var flags: DispatchWorkItemFlags = []
            try Options.parse(a, 2) { o throws(LuaError) in
                let flag: DispatchWorkItemFlags
                switch o.key {
                case "qos": qos = try o.qos(); return true
                case "barrier": flag = .barrier
                case "detached": flag = .detached
                case "enforce_qos": flag = .enforceQoS
                case "inherit_qos": flag = .inheritQoS
                case "assign_current_context": flag = .assignCurrentContext
                case "no_qos": flag = .noQoS
                default: return false
                }
                if try o.bool() { flags.insert(flag) }
                return true
            }
            let item = WorkItemObject(a.runtime, fn: a.ref(1), qos: qos, flags: flags)
            item.native = a.runtime.charge(NativeCost.workItem)
            a.runtime.objects.push(a.L, item, .workItem)
            return 1
        }
        m.types.append(type())
    }

    private static func type() -> ObjectType {
        var t = ObjectType(.workItem)
        t.method("perform") { a throws(LuaError) in
            let item: WorkItemObject = try a.object(1, .workItem)
            try Nesting.check()
            a.runtime.unlocked { item.run() }
            return 0
        }
        t.method("cancel") { a throws(LuaError) in
            a.runtime.traceInstant("cancel", "work_item")
            (try a.object(1, .workItem, as: WorkItemObject.self)).item.cancel()
            return 0
        }
        t.method("is_cancelled") { a throws(LuaError) in
            lua_pushboolean(a.L, (try a.object(1, .workItem, as: WorkItemObject.self)).item.isCancelled ? 1 : 0)
            return 1
        }
        t.method("wait") { a throws(LuaError) in
            let item: WorkItemObject = try a.object(1, .workItem)
            let timeout = try Deadline.timeout(a, 2)
            return try a.runtime.wait(a, ItemWait(item: item), timeout: timeout)
        }
        t.method("notify") { a throws(LuaError) in
            let item: WorkItemObject = try a.object(1, .workItem)
            let q: QueueObject = try a.object(2, .queue)
            let work = try QueueBinding.block(a, q, 3, barrier: false, queued: false, kind: .notify)
            a.runtime.workAdded()
            guard item.notify(q.queue, work) else {
                a.runtime.workDone()
                throw .message("notify on a work item that ran more than once")
            }
            return 0
        }
        t.meta("__tostring") { a throws(LuaError) in
            let item: WorkItemObject = try a.object(1, .workItem)
            Lua.push(a.L, "dispatch.work_item (\(item.item.isCancelled ? "cancelled" : "active"))")
            return 1
        }
        return t
    }
}

/// `item:wait([timeout])`. dispatch_block_wait aborts on a second wait and on any run after a
/// wait, so the wait is a notify (allowed while the item ran at most once), in a task or not.
struct ItemWait: Waitable {
    let item: WorkItemObject

    var kind: String { "work_item" }

    func begin() throws(LuaError) {
        let refusal: String? = item.withGate { g in
            if g.waiting { return "a second concurrent wait on one work item" }
            if g.runs > 1 { return "wait on a work item that ran more than once" }
            g.waiting = true
            return nil
        }
        if let refusal { throw .message(refusal) }
    }

    func arm(_ waiter: Waiter) {
        // Refused only if the item ran twice since `begin`: then it has completed.
        let (q, end) = waiter.delivery()
        if !item.notify(q, end) { waiter.finish(.done) }
    }

    func end(_ outcome: WaitOutcome) { item.withGate { $0.waiting = false } }
}
