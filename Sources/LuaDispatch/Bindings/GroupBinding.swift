import CLua
import CLuaShim
import Dispatch
import Synchronization

/// A `DispatchGroup` with its explicit `enter` count: an unbalanced `leave` aborts in
/// libdispatch, and so does releasing a group that is still entered (so the last release
/// leaves what is still entered; a pending notify holds the object, see `notify`).
final class GroupObject: @unchecked Sendable {
    let group = DispatchGroup()
    /// The group's `dispatch_group_t`, for `dispatch_group_async_f` (nil if it cannot be found).
    private(set) lazy var rawGroup: UnsafeMutableRawPointer? = RawDispatch.pointer(group)
    let entered = Atomic<Int>(0)
    /// The runtime's count of enters not yet left, over all its groups (for `outstandingWork`).
    let openEnters: OpenGroupEnters
    /// Its native cost, charged to the memory limit while it lives.
    var native = MemoryCharge.none

    init(openEnters: OpenGroupEnters) { self.openEnters = openEnters }

    deinit {
        let n = entered.load(ordering: .relaxed)
        openEnters.count.wrappingSubtract(n, ordering: .relaxed)
        for _ in 0..<n { group.leave() }
    }
}

final class OpenGroupEnters: Sendable {
    let count = Atomic<Int>(0)
}

/// `dispatch.group()` and its methods.
enum GroupBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("group") { a throws(LuaError) in
            let g = GroupObject(openEnters: a.runtime.ledger.openGroupEnters)
            g.native = a.runtime.charge(NativeCost.group)
            a.runtime.objects.push(a.L, g, .group)
            return 1
        }
        var t = ObjectType(.group)
        t.method("enter") { a throws(LuaError) in
            let g: GroupObject = try a.object(1, .group)
            g.entered.wrappingAdd(1, ordering: .relaxed)
            g.openEnters.count.wrappingAdd(1, ordering: .relaxed)
            g.group.enter()
            return 0
        }
        t.method("leave") { a throws(LuaError) in
            let g: GroupObject = try a.object(1, .group)
            guard g.entered.decrementIfPositive() else { throw .message("leave of a group that was not entered") }
            g.openEnters.count.wrappingSubtract(1, ordering: .relaxed)
            g.group.leave()
            return 0
        }
        t.method("notify") { a throws(LuaError) in
            let g: GroupObject = try a.object(1, .group)
            let q: QueueObject = try a.object(2, .queue)
            let work = try QueueBinding.block(a, q, 3, barrier: false, queued: false, kind: .notify)
            a.runtime.workAdded()
            // The notify keeps the group object, as libdispatch keeps the group for it: collecting
            // the userdata of a group still entered must not leave it (see `deinit`), which would
            // run the notify as if the work had ended. Never left, the notify never runs, as in Swift.
            g.group.notify(queue: q.queue) { [g] in
                withExtendedLifetime(g) { work() }
            }
            return 0
        }
        t.method("wait") { a throws(LuaError) in
            let g: GroupObject = try a.object(1, .group)
            let timeout = try Deadline.timeout(a, 2)
            return try a.runtime.wait(a, GroupWait(group: g), timeout: timeout)
        }
        t.meta("__tostring") { a throws(LuaError) in
            let g: GroupObject = try a.object(1, .group)
            Lua.push(a.L, "dispatch.group (entered \(g.entered.load(ordering: .relaxed)))")
            return 1
        }
        m.types.append(t)
    }
}

/// `g:wait([timeout])`: Dispatch's own wait, or a notify inside a task.
struct GroupWait: Waitable {
    let group: GroupObject

    var kind: String { "group" }
    static var blocksNatively: Bool { true }
    func poll() -> Bool { group.group.wait(timeout: .now()) == .success }
    func block(_ timeout: Deadline) -> Bool { Waits.wait(group.group, timeout) }
    func arm(_ waiter: Waiter) {
        let (q, end) = waiter.delivery()
        group.group.notify(queue: q, execute: end)
    }
}
