import CLua
import CLuaShim
import Dispatch

/// `dispatch.task`, `dispatch.in_task` and the task methods.
enum TaskBinding {
    /// The continuation of every wait a task suspends in (see `TaskObject.resumeWait`).
    nonisolated(unsafe) private(set) static var resumeWait: Int32 = -1

    static func install(_ m: inout ModuleSpec) {
        resumeWait = Bindings.register("wait", TaskObject.resumeWait)
        m.function("task") { a throws(LuaError) in
            try a.function(1)
            let q = try a.queueOrDefault(2)
            guard a.count <= 2 else { throw .argument(3, "no value expected, got \(a.typeName(3))") }
            try a.runtime.refuseIfOver()  // a task started lives on: refused, not piled up past the limit
            a.runtime.objects.push(a.L, TaskObject(a.runtime, a.L, fn: 1, queue: q), .task)
            return 1
        }
        m.function("in_task") { a throws(LuaError) in
            lua_pushboolean(a.L, TaskObject.current(a.L) != nil ? 1 : 0)
            return 1
        }
        AwaitBinding.install(&m)
        var t = ObjectType(.task)
        t.method("wait") { a throws(LuaError) in
            let task: TaskObject = try a.object(1, .task)
            let timeout = try Deadline.timeout(a, 2)
            let caller = TaskObject.current(a.L)
            if let caller, let reason = cycle(caller, task) { throw .message(reason) }
            return try a.runtime.wait(a, TaskWait(task: task, caller: caller), timeout: timeout)
        }
        t.method("cancel") { a throws(LuaError) in
            (try a.object(1, .task, as: TaskObject.self)).cancel()
            return 0
        }
        t.method("is_cancelled") { a throws(LuaError) in
            let task: TaskObject = try a.object(1, .task)
            lua_pushboolean(a.L, task.cancelled.load(ordering: .acquiring) ? 1 : 0)
            return 1
        }
        t.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, (try a.object(1, .task, as: TaskObject.self)).description)
            return 1
        }
        t.meta("__gc") { a throws(LuaError) in
            // Nobody can wait on the task any more: an error it ended with, or ends with, is
            // unobserved.
            if ld_in_finalizer(a.L) != 0, let task: TaskObject = a.optionalObject(1, .task) {
                task.handleCollected = true
                if task.isFinished { a.runtime.reportUnobserved(task, inline: false) }
            }
            return ObjectTable.gc(a, .task)
        }
        m.types.append(t)
    }

    /// Why `caller` waiting on `task` would never end: it is the task itself, or `task` waits
    /// (through other tasks) on `caller`.
    private static func cycle(_ caller: TaskObject, _ task: TaskObject) -> String? {
        if caller === task { return "a task cannot wait for itself" }
        var next = task.waitingOn
        while let t = next {
            if t === caller { return "wait on \(task.description) would deadlock: it waits on the calling task" }
            next = t.waitingOn
        }
        return nil
    }
}

/// `t:wait([timeout])`: `true, results...`, `false, "timeout"`, or the task's error re-raised.
struct TaskWait: Waitable {
    let task: TaskObject
    /// The task that waits, if the caller is one (for cycle detection).
    let caller: TaskObject?

    var kind: String { "task" }
    static var blocksNatively: Bool { true }

    func blockingRefusal() -> String? {
        guard !task.isFinished, let held = task.queue.heldByCallingThread(barrier: false) else { return nil }
        if held.kind == .main {
            return "wait on a task that runs on the main queue, from the main thread, would deadlock"
        }
        return "wait on a task that runs on queue '\(task.queue.label)' would deadlock: the calling block holds "
            + "serial queue '\(held.label)', which the task needs"
    }

    func begin() throws(LuaError) {
        task.waiters += 1
        caller?.waitingOn = task
    }

    func poll() -> Bool { task.isFinished }
    func block(_ timeout: Deadline) -> Bool { Waits.wait(task.done, timeout) }
    func arm(_ waiter: Waiter) {
        let (q, end) = waiter.delivery()
        task.done.notify(queue: q, execute: end)
    }

    func end(_ outcome: WaitOutcome) {
        task.waiters -= 1
        caller?.waitingOn = nil
        // An error this wait was there for, and now will not re-raise, is unobserved after all.
        if outcome == .cancelled || outcome == .interrupted, task.isFinished, task.waiters == 0 {
            task.unobserved(inline: false)
        }
    }

    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 {
        // A task that finished just as the timeout fired counts as finished.
        guard task.isFinished else { return Waits.push(a.L, false) }
        return try task.pushOutcome(a.L)
    }
}
