import CLua
import CLuaShim
import Dispatch
import Synchronization

/// How a task failed: its error value (anchored), the message and the traceback at the point of
/// the error. `t:wait` re-raises the value; a string (or number) comes back with the traceback
/// appended, as `lua`'s message handler does, other values unchanged.
final class TaskFailure: @unchecked Sendable {
    let value: LuaRef
    /// The message of an error value that is not a string or number; nil: the value itself is
    /// the message (read from it when needed, `message(_:)`: a big message is not copied).
    private let otherMessage: String?
    let traceback: String
    /// The task ended because a cancellation was raised in it and not caught: not an error to
    /// report when nobody waits.
    let isCancellation: Bool
    /// A `t:wait` has re-raised it.
    var observed = false
    /// Handed to the error handler as an uncaught error.
    var reported = false
    /// The traceback (and another value's message), Swift's copies, against the memory limit.
    private let charge: MemoryCharge

    static func cancelMessage(_ function: String) -> String { "task cancelled (in '\(function)')" }

    /// The error on top of `co` (or `message` when given), with `co`'s traceback; then closes
    /// the coroutine's pending to-be-closed variables. Lock held.
    init(_ rt: Runtime, _ co: OpaquePointer, message custom: String?, cancelled: Bool) {
        let T = rt.takeThread()
        if let custom { Lua.push(T, custom) } else { lua_xmove(co, T, 1) }
        switch lua_type(T, -1) {
        case LUA_TSTRING, LUA_TNUMBER:
            _ = lua_tolstring(T, -1, nil)  // a number is kept as its string, as Lua reports it
            otherMessage = nil
        default: otherMessage = "(error object is a \(String(cString: ld_typename(T, -1))) value)"
        }
        isCancellation = cancelled && otherMessage == nil && Lua.string(T, -1)!.contains("task cancelled (in '")
        luaL_traceback(T, co, nil, 0)
        traceback = Lua.string(T, -1) ?? ""
        ld_pop(T, 1)
        value = LuaRef(rt, luaL_ref(T, ld_registryindex()))
        charge = rt.charge((otherMessage?.utf8.count ?? 0) + traceback.utf8.count)
        rt.giveBack(T)
        _ = lua_resetthread(co)
    }

    /// A task cancelled before it started.
    init(cancelledBeforeStart rt: Runtime) {
        otherMessage = nil
        Lua.push(rt.admin, "task cancelled before it started")
        value = LuaRef(rt, luaL_ref(rt.admin, ld_registryindex()))
        traceback = ""
        isCancellation = true
        charge = .none
    }

    /// The error's message, as a report prints it. Lock held; `T` any Lua thread of the runtime.
    func message(_ T: OpaquePointer) -> String {
        if let otherMessage { return otherMessage }
        lua_rawgeti(T, ld_registryindex(), lua_Integer(value.ref))
        defer { ld_pop(T, 1) }
        return Lua.string(T, -1) ?? ""
    }

    /// Pushes the error as `t:wait` raises it.
    func push(_ L: OpaquePointer) {
        lua_rawgeti(L, ld_registryindex(), lua_Integer(value.ref))
        let t = lua_type(L, -1)
        if (t == LUA_TSTRING || t == LUA_TNUMBER) && !traceback.isEmpty {
            // Joined by Lua, from the value itself: no Swift copy of a message that may be big.
            Lua.push(L, "\n")
            Lua.push(L, traceback)
            lua_concat(L, 3)
        }
    }
}

/// Who started a task: the block, handler, chunk or task whose Lua code called `dispatch.task`.
///
/// A task's error is unobserved, and reported as an uncaught error, when nothing can still
/// retrieve it: it ends with the error while no `t:wait` is waiting on it, and the code that
/// started the task has already returned or the task's handle has been collected. Until then
/// the owner holds it: a `t:wait` from the starter retrieves it; when the starter returns
/// without one, it is reported then.
final class TaskOwner {
    private(set) var ended = false
    private var held: [TaskObject] = []

    func hold(_ task: TaskObject) { held.append(task) }

    /// The starter has returned. Lock held.
    func end(_ rt: Runtime, inline: Bool = false) {
        ended = true
        for task in held { rt.reportUnobserved(task, inline: inline) }
        held = []
    }

    /// The interpreter closed: nothing will be reported (and no task stays referenced).
    func drop() {
        ended = true
        held = []
    }
}

/// The unfinished tasks of a runtime (for `close()`), and the owners of tasks started by code
/// running on pooled Lua threads.
final class TaskRegistry: @unchecked Sendable {
    private let live = Mutex<[ObjectIdentifier: TaskObject]>([:])
    /// How many tasks are unfinished: while none is, no step can be running, and a wait need
    /// not look for its task (the blocking calls' fast path).
    let count = Atomic<Int>(0)
    /// Owners by the pooled thread whose code started tasks; under the interpreter lock.
    @exclusivity(unchecked) var owners: [OpaquePointer: TaskOwner] = [:]

    func add(_ t: TaskObject) {
        count.wrappingAdd(1, ordering: .relaxed)
        live.withLock { $0[ObjectIdentifier(t)] = t }
    }

    func remove(_ t: TaskObject) {
        if live.withLock({ $0.removeValue(forKey: ObjectIdentifier(t)) }) != nil {
            count.wrappingSubtract(1, ordering: .relaxed)
        }
    }
    var unfinished: [TaskObject] { live.withLock { Array($0.values) } }
}

extension Runtime {
    /// The owner of a task that code running on `L` starts. Lock held.
    func taskOwner(for L: OpaquePointer) -> TaskOwner? {
        if let parent = TaskObject.current(L) {
            if parent.childOwner == nil { parent.childOwner = TaskOwner() }
            return parent.childOwner
        }
        // Code on a coroutine the script made has no owner that could end; the main Lua
        // thread's owner ends when the host's chunk returns (giveBack).
        guard isPooledThread(L) || L == self.L else { return nil }
        if let owner = ledger.tasks.owners[L] { return owner }
        let owner = TaskOwner()
        ledger.tasks.owners[L] = owner
        return owner
    }

    /// The code on pooled thread `T` has returned: tasks it started and that failed unobserved
    /// are reported. Lock held.
    @inline(__always) func endTaskOwner(_ T: OpaquePointer, inline: Bool = false) {
        guard !ledger.tasks.owners.isEmpty, let owner = ledger.tasks.owners.removeValue(forKey: T) else { return }
        owner.end(self, inline: inline)
    }

    /// Hands a task's unobserved error to the error handler (once), labelled with the task's
    /// queue: now when called from the task's own step, else in a block on the task's queue.
    func reportUnobserved(_ task: TaskObject, inline: Bool) {
        guard let failure = task.failure, !failure.observed, !failure.reported, !failure.isCancellation else { return }
        failure.reported = true
        let q = task.queue
        // On a host's main thread outside any block (stock lua5.4 running a chunk, or closing
        // the state and collecting the handle) a block might never run again: report it now.
        if inline || (stockLua != nil && ld_is_main_thread() != 0 && ld_frame_count() == 0) {
            let T = takeThread()
            handleUncaught(T, message: failure.message(T), traceback: failure.traceback, label: q.label)
            giveBack(T)
            return
        }
        workAdded()
        q.queued.wrappingAdd(1, ordering: .relaxed)
        q.queue.async { [self] in
            q.queued.wrappingSubtract(1, ordering: .relaxed)
            callHandler(on: q) { T in
                handleUncaught(T, message: failure.message(T), traceback: failure.traceback, label: q.label)
                return nil
            }
            workDone()
        }
    }

    /// For `close()`: every suspended task's wait ends as `.closed`; each unfinished task's next
    /// step finds the interpreter closed and abandons the task (its outstanding work is done).
    func closeTasks() {
        for task in ledger.tasks.unfinished { task.closeWait() }
        for owner in ledger.tasks.owners.values { owner.drop() }
        ledger.tasks.owners.removeAll()
    }
}
