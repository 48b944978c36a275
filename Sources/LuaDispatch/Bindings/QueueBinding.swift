import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.queue`, `dispatch.main`, `dispatch.global` and the queue methods.
enum QueueBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("queue") { a throws(LuaError) in
            let q = try make(a)
            a.runtime.objects.push(a.L, q, .queue)
            return 1
        }
        m.function("global") { a throws(LuaError) in
            let name = try a.optionalString(1) ?? "default"
            guard let qos = QoS.parseClass(name) else { throw .argument(1, "unknown qos '\(name)'") }
            // One userdata per global queue, kept in the registry: it keeps the metatable it gets
            // when first indexed, so `dispatch.global():async(f)` in a loop makes none.
            let L = a.L, key = QoS.name(qos)
            _ = luaL_getsubtable(L, ld_registryindex(), "dispatch.global")
            if Lua.getField(L, -1, key) != LUA_TUSERDATA {
                ld_pop(L, 1)
                a.runtime.objects.push(L, a.runtime.global(qos), .queue)
                lua_pushvalue(L, -1)
                Lua.setField(L, -3, key)
            }
            return 1
        }
        m.function("current_label") { a throws(LuaError) in
            guard let q = a.runtime.currentQueue() else { return 0 }
            try a.runtime.checkMemory(q.label.utf8.count)
            Lua.push(a.L, q.label)
            return 1
        }
        m.function("concurrent_perform") { a throws(LuaError) in try concurrentPerform(a) }
        m.setups.append { rt, L in
            rt.objects.push(L, rt.mainQueue, .queue)
            Lua.setField(L, -2, "main")
        }
        SpecificBinding.install(&m)
        m.types.append(type())
    }

    /// `dispatch.queue(label)` or `dispatch.queue{label=, concurrent=, qos=, inactive=, target=}`.
    private static func make(_ a: Args) throws(LuaError) -> QueueObject {
        var label = "", concurrent = false, qos = DispatchQoS.unspecified, inactive = false
        var target: QueueObject?
        // Making the queue copies its label about four times at once (Swift's string, Dispatch's
        // copy, and the conversions between): refused before any copy exists.
        if a.type(1) == LUA_TSTRING {
            try a.runtime.checkMemory(4 * Int(lua_rawlen(a.L, 1)))
        } else if a.type(1) == LUA_TTABLE {
            if Lua.getField(a.L, 1, "label") == LUA_TSTRING { try a.runtime.checkMemory(4 * Int(lua_rawlen(a.L, -1))) }
            ld_pop(a.L, 1)
        }
        if a.type(1) == LUA_TTABLE {
            try Options.parse(a, 1) { o throws(LuaError) in
                switch o.key {
                case "label": label = try o.string()
                case "concurrent": concurrent = try o.bool()
                case "qos": qos = try o.qos()
                case "inactive": inactive = try o.bool()
                case "target": target = try o.object(.queue)
                default: return false
                }
                return true
            }
        } else if !a.isNoneOrNil(1) {
            guard a.type(1) == LUA_TSTRING else { throw a.typeError(1, "string or table") }
            label = try a.string(1)
        }
        // The label is held twice more (here and in Dispatch): refused before either copy exists.
        let charge = try a.runtime.reserve(NativeCost.queue + 2 * label.utf8.count)
        var attributes: DispatchQueue.Attributes = []
        if concurrent { attributes.insert(.concurrent) }
        if inactive { attributes.insert(.initiallyInactive) }
        // As in Swift, an unspecified QoS lets the queue run at its target's QoS.
        let queue = DispatchQueue(label: label, qos: qos, attributes: attributes, target: target?.queue)
        let q = QueueObject(queue: queue, label: label, concurrent: concurrent, target: target, inactive: inactive)
        q.charge = charge
        q.registry = a.runtime.ledger.queues
        a.runtime.ledger.queues.add(q)
        return q
    }

    private static func type() -> ObjectType {
        var t = ObjectType(.queue)
        // The common case, q:async(fn), goes from C straight to `Runtime.submitFast` (no
        // argument object, no reference counting); every other form runs the body.
        t.method("async", submit: Runtime.submitFast) { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            var group: GroupObject?, barrier = false, qos: DispatchQoS?
            try Options.parse(a, 3) { o throws(LuaError) in
                switch o.key {
                case "group": group = o.isNil ? nil : try o.object(.group)
                case "barrier": barrier = try o.bool()
                case "qos": qos = try o.qos()
                default: return false
                }
                return true
            }
            try submit(a, q, 2, group: group, barrier: barrier, qos: qos)
            return 0
        }
        t.method("barrier_async") { a throws(LuaError) in
            try submit(a, try a.object(1, .queue), 2, group: nil, barrier: true, qos: nil)
            return 0
        }
        t.method("sync") { a throws(LuaError) in
            if let n = try SyncWait.plain(a, barrier: false) { return n }
            let q: QueueObject = try a.object(1, .queue)
            var barrier = false
            try Options.parse(a, 3) { o throws(LuaError) in
                guard o.key == "barrier" else { return false }
                barrier = try o.bool()
                return true
            }
            return try sync(a, q, 2, barrier: barrier)
        }
        t.method("barrier_sync") { a throws(LuaError) in
            if let n = try SyncWait.plain(a, barrier: true) { return n }
            return try sync(a, try a.object(1, .queue), 2, barrier: true)
        }
        t.method("after") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            let deadline = try Deadline.deadline(a, 2)
            let rt = a.runtime
            try rt.refuseIfOver()
            let block = try block(a, q, 3, barrier: false, kind: .after)
            rt.workAdded()
            q.queued.wrappingAdd(1, ordering: .relaxed)
            // Droppable until it runs (an end drops it: `PendingAfters`).
            let id = rt.ledger.afters.add { [unowned rt] in  // the runtime's own list: no cycle
                q.queued.wrappingSubtract(1, ordering: .relaxed)
                rt.workDone()
            }
            let held = HeldCharge(rt.charge(NativeCost.after))  // given back when Dispatch lets go of `work`
            let work: @Sendable () -> Void = { withExtendedLifetime(held) { if rt.ledger.afters.claim(id) { block() } } }
            switch deadline {
            case .time(let t): q.queue.asyncAfter(deadline: t, execute: work)
            case .wall(let w): q.queue.asyncAfter(wallDeadline: w, execute: work)
            case .forever: break
            }
            return 0
        }
        t.method("suspend") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            guard q.kind != .global else { throw .message("cannot suspend global queue '\(q.label)'") }
            q.suspensions.wrappingAdd(1, ordering: .relaxed)
            a.runtime.traceInstant("suspend", q.label)
            q.queue.suspend()
            return 0
        }
        t.method("resume") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            guard q.suspensions.decrementIfPositive() else {
                throw .message("resume of queue '\(q.label)', which is not suspended")
            }
            a.runtime.traceInstant("resume", q.label)
            q.queue.resume()
            return 0
        }
        t.method("activate") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            if q.inactive.exchange(false, ordering: .relaxed) {
                a.runtime.traceInstant("activate", q.label)
                q.queue.activate()
                a.runtime.objects.refreshFields(a.L, 1, .queue)
            }
            return 0
        }
        t.method("set_target") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            let target: QueueObject? = a.isNoneOrNil(2) ? nil : try a.object(2, .queue)
            guard q.kind == .custom else { throw .message("cannot change the target of queue '\(q.label)'") }
            guard q.inactive.load(ordering: .relaxed) else {
                throw .message("set_target on queue '\(q.label)', which is active (only inactive queues can change target)")
            }
            if let target, target.chain.contains(where: { $0 === q }) {
                throw .message("set_target would make queue '\(q.label)' target itself")
            }
            q.target = target
            q.queue.setTarget(queue: target?.queue ?? DispatchQueue.global())
            a.runtime.objects.refreshFields(a.L, 1, .queue)
            return 0
        }
        SpecificBinding.methods(&t)
        // Fields of each queue's own (see ObjectType.objectFields); `qos` is read back from
        // Dispatch again where it can change (set_target, activate).
        t.objectFields { L, object in
            let q = unsafeDowncast(object, to: QueueObject.self)
            Lua.push(L, q.label)
            Lua.setField(L, -2, "label")
            lua_pushboolean(L, q.concurrent ? 1 : 0)
            Lua.setField(L, -2, "concurrent")
            Lua.push(L, q.qos)
            Lua.setField(L, -2, "qos")
        }
        t.meta("__tostring") { a throws(LuaError) in
            let q: QueueObject = try a.object(1, .queue)
            try a.runtime.checkMemory(2 * q.label.utf8.count)  // the description, then its Lua copy
            Lua.push(a.L, q.description)
            return 1
        }
        t.meta("__eq") { a throws(LuaError) in
            // Two userdata for one queue (e.g. two `dispatch.global()` calls) are equal.
            let x: QueueObject? = a.optionalObject(1, .queue), y: QueueObject? = a.optionalObject(2, .queue)
            lua_pushboolean(a.L, x != nil && x === y ? 1 : 0)
            return 1
        }
        return t
    }

    // MARK: submitting work

    /// The block that runs the function or work item at `i` on `q` (anchoring the function).
    /// `kind` names the block in the trace; a traced submission starts a flow to it.
    static func block(_ a: Args, _ q: QueueObject, _ i: Int32, barrier: Bool, queued: Bool = true,
                      kind: TraceKind = .async) throws(LuaError) -> @Sendable () -> Void {
        let rt = a.runtime
        if let item: WorkItemObject = a.optionalObject(i, .workItem) {
            let flow = rt.traceFlow()
            return {
                if queued { q.queued.wrappingSubtract(1, ordering: .relaxed) }
                _ = ld_frame_push(Unmanaged.passUnretained(q).toOpaque(), barrier ? 1 : 0)
                if flow != 0 { ld_set_pending_flow(flow) }  // taken by the item's body
                item.run()
                if flow != 0 { _ = ld_take_pending_flow() }  // a cancelled item did not take it
                ld_frame_pop()
                rt.workDone()
            }
        }
        guard a.type(i) == LUA_TFUNCTION else { throw a.typeError(i, "function or dispatch.work_item") }
        let ref = a.ref(i), flow = rt.traceFlow()
        return { rt.runBlock(ref, on: q, barrier: barrier, consume: true, queued: queued, kind: kind, flow: flow) }
    }

    static func submit(_ a: Args, _ q: QueueObject, _ i: Int32, group: GroupObject?, barrier: Bool, qos: DispatchQoS?) throws(LuaError) {
        let rt = a.runtime
        try rt.refuseIfOver()  // a block submitted waits on: refused, not piled up past the limit
        // A function, without a QoS of its own: a block record (no closure, no block object).
        if qos == nil, a.type(i) == LUA_TFUNCTION,
           rt.submitRecord(a.L, i, on: .passUnretained(q), group: group, barrier: barrier) { return }
        let item: WorkItemObject? = a.optionalObject(i, .workItem)
        let work = try block(a, q, i, barrier: barrier || (item?.flags.contains(.barrier) ?? false))
        var flags = item?.flags ?? []
        if barrier { flags.insert(.barrier) }
        rt.workAdded()
        q.queued.wrappingAdd(1, ordering: .relaxed)
        q.queue.async(group: group?.group, qos: qos ?? item?.qos ?? .unspecified, flags: flags, execute: work)
    }

    /// `q:sync(fn or item)`: runs on the calling thread's behalf and returns fn's results.
    static func sync(_ a: Args, _ q: QueueObject, _ i: Int32, barrier: Bool) throws(LuaError) -> Int32 {
        try Nesting.check()
        if a.type(i) == LUA_TFUNCTION {
            let rt = a.runtime
            return try rt.wait(a, SyncWait(runtime: .passUnretained(rt), L: a.L, queue: .passUnretained(q), function: i, barrier: barrier))
        }
        guard let item: WorkItemObject = a.optionalObject(i, .workItem) else {
            throw a.typeError(i, "function or dispatch.work_item")
        }
        return try a.runtime.wait(a, SyncItemWait(queue: q, item: item, barrier: barrier, runtime: a.runtime))
    }

    /// `dispatch.concurrent_perform(n, fn)`: iterations take turns on the interpreter.
    private static func concurrentPerform(_ a: Args) throws(LuaError) -> Int32 {
        let n = try a.integer(1)
        guard n >= 0 else { throw .argument(1, "iteration count must be >= 0, got \(n)") }
        try a.function(2)
        try Nesting.check()
        let rt = a.runtime, L = a.L
        let fn = a.ref(2)
        let errorRef = Shared(LUA_NOREF)  // written under the interpreter lock
        let started = rt.traceClock()
        defer { rt.traceWait("concurrent_perform", "concurrent_perform", started) }
        // One iteration: takes the interpreter, calls fn(i + 1), keeps the first error.
        let iteration: @Sendable (Int) -> Void = { i in
            let requested = rt.traceClock()
            rt.acquire()
            let T = rt.takeThread()
            lua_rawgeti(T, ld_registryindex(), lua_Integer(fn))
            let traced = rt.traceBegin(T, requested, "concurrent_perform", .apply)
            lua_pushinteger(T, lua_Integer(i + 1))
            if Nesting.pcall(T, 1, 0, 0) != LUA_OK, errorRef.value == LUA_NOREF {
                errorRef.value = luaL_ref(T, ld_registryindex())
            }
            rt.traceEnd(traced)
            rt.giveBack(T)
            rt.release()
        }
        // Iterations are handed out from one counter to as many threads as there are cores (as
        // dispatch_apply does inside), so that an end (a time limit, an interrupt) stops those
        // not started yet, however many there are.
        let next = Atomic<Int>(0)
        rt.unlocked {
            DispatchQueue.concurrentPerform(iterations: min(n, max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))))) { _ in
                while true {
                    let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard i < n, rt.terminationKind == nil else { return }
                    iteration(i)
                }
            }
        }
        luaL_unref(L, ld_registryindex(), fn)
        guard errorRef.value == LUA_NOREF else {
            lua_rawgeti(L, ld_registryindex(), lua_Integer(errorRef.value))
            luaL_unref(L, ld_registryindex(), errorRef.value)
            throw .raise
        }
        return 0
    }
}

extension Runtime {
    /// The global queue for `qos`, one object per runtime. Lock held.
    func global(_ qos: DispatchQoS.QoSClass) -> QueueObject {
        let name = QoS.name(qos)
        if let q = globalQueues[name] { return q }
        let dq = DispatchQueue.global(qos: qos)
        let q = QueueObject(queue: dq, label: dq.label, concurrent: true, kind: .global)
        globalQueues[name] = q
        return q
    }
}
