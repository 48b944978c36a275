import CLua
import CLuaShim
import Dispatch
import Synchronization

/// A `DispatchSemaphore` with its current value tracked: releasing one below its initial
/// value aborts in libdispatch, so deinit signals it back up first.
///
/// Dispatch has no asynchronous wait on a semaphore. A task (or a parked thread) waits on an
/// armed waiter in `armed` instead: when a unit is free it takes it with a wait that does not
/// block; otherwise `signal` hands it one as soon as Dispatch's own count has a unit that no
/// blocked thread took. Threads blocked in Dispatch's wait keep their semantics (a signal wakes
/// one of them first); `value` follows Dispatch's count exactly, unit by unit.
final class SemaphoreObject: @unchecked Sendable {
    let semaphore: DispatchSemaphore
    let initial: Int
    let value: Atomic<Int>
    private let armed = Mutex(WaiterQueue())
    /// Its native cost, charged to the memory limit while it lives.
    var native = MemoryCharge.none

    init(_ value: Int) {
        semaphore = DispatchSemaphore(value: value)
        initial = value
        self.value = Atomic(value)
    }

    deinit {
        for _ in 0..<max(0, initial - value.load(ordering: .relaxed)) { semaphore.signal() }
    }

    /// Takes a unit if one is free, without blocking.
    func tryTake() -> Bool {
        guard semaphore.wait(timeout: .now()) == .success else { return false }
        value.wrappingSubtract(1, ordering: .relaxed)
        return true
    }

    /// Blocks the calling thread in Dispatch's wait.
    func take(_ timeout: Deadline) -> Bool {
        guard Waits.wait(semaphore, timeout) else { return false }
        value.wrappingSubtract(1, ordering: .relaxed)
        return true
    }

    /// Arms `waiter`: it gets the next unit no blocked thread takes.
    func enqueue(_ waiter: Waiter) {
        armed.withLock { list in
            // A unit freed since the caller's poll would find nobody armed: look again.
            if tryTake() {
                waiter.finish(.done)
                return
            }
            list.append(waiter)
        }
    }

    /// `s:signal()`: true when it woke a blocked thread or an armed waiter.
    func signal() -> Bool {
        value.wrappingAdd(1, ordering: .relaxed)
        let woke = semaphore.signal() != 0
        return armed.withLock { list in
            var served = woke
            while let waiter = list.first {
                guard waiter.isWaiting else { list.removeFirst(); continue }
                guard tryTake() else { break }
                list.removeFirst()
                if waiter.finish(.done) {
                    served = true
                } else {  // it timed out or was cancelled meanwhile: the unit goes back
                    value.wrappingAdd(1, ordering: .relaxed)
                    semaphore.signal()
                }
            }
            return served
        }
    }
}

/// Waiters in arrival order. Taking the first is O(1); waiters that ended otherwise (timed out,
/// cancelled) are dropped when they reach the front, or all at once when the list has doubled.
struct WaiterQueue {
    private var items: [Waiter?] = []
    private var head = 0
    private var pruneAt = 64

    var first: Waiter? { head < items.count ? items[head] : nil }

    mutating func removeFirst() {
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
    }

    mutating func append(_ waiter: Waiter) {
        if items.count >= pruneAt {
            items = items[head...].filter { $0?.isWaiting ?? false }
            head = 0
            pruneAt = max(64, 2 * items.count)
        }
        items.append(waiter)
    }
}

/// `dispatch.semaphore(n)` and its methods.
enum SemaphoreBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("semaphore") { a throws(LuaError) in
            let n = try a.integer(1)
            guard n >= 0 else { throw .argument(1, "semaphore value must be >= 0, got \(n)") }
            guard n <= Int(Int32.max) else { throw .argument(1, "semaphore value too large") }
            let s = SemaphoreObject(n)
            s.native = a.runtime.charge(NativeCost.semaphore)
            a.runtime.objects.push(a.L, s, .semaphore)
            return 1
        }
        var t = ObjectType(.semaphore)
        t.method("wait") { a throws(LuaError) in
            let s: SemaphoreObject = try a.object(1, .semaphore)
            let timeout = try Deadline.timeout(a, 2)
            return try a.runtime.wait(a, SemaphoreWait(semaphore: s), timeout: timeout)
        }
        t.method("signal") { a throws(LuaError) in
            let s: SemaphoreObject = try a.object(1, .semaphore)
            lua_pushboolean(a.L, s.signal() ? 1 : 0)
            return 1
        }
        t.meta("__tostring") { a throws(LuaError) in
            let s: SemaphoreObject = try a.object(1, .semaphore)
            Lua.push(a.L, "dispatch.semaphore (\(s.value.load(ordering: .relaxed)))")
            return 1
        }
        m.types.append(t)
    }
}

/// `s:wait([timeout])`: Dispatch's own wait, or an armed waiter inside a task.
struct SemaphoreWait: Waitable {
    let semaphore: SemaphoreObject

    var kind: String { "semaphore" }
    static var blocksNatively: Bool { true }
    func poll() -> Bool { semaphore.tryTake() }
    func block(_ timeout: Deadline) -> Bool { semaphore.take(timeout) }
    func arm(_ waiter: Waiter) { semaphore.enqueue(waiter) }
}
