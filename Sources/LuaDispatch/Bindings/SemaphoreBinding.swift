import CLua
import CLuaShim
import Dispatch
import Synchronization

/// A `DispatchSemaphore` with its current value tracked: releasing one below its initial
/// value aborts in libdispatch, so deinit signals it back up first.
final class SemaphoreObject: @unchecked Sendable {
    let semaphore: DispatchSemaphore
    let initial: Int
    let value: Atomic<Int>

    init(_ value: Int) {
        semaphore = DispatchSemaphore(value: value)
        initial = value
        self.value = Atomic(value)
    }

    deinit {
        for _ in 0..<max(0, initial - value.load(ordering: .relaxed)) { semaphore.signal() }
    }
}

/// `dispatch.semaphore(n)` and its methods.
enum SemaphoreBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("semaphore") { a throws(LuaError) in
            let n = try a.integer(1)
            guard n >= 0 else { throw .argument(1, "semaphore value must be >= 0, got \(n)") }
            guard n <= Int(Int32.max) else { throw .argument(1, "semaphore value too large") }
            a.runtime.objects.push(a.L, SemaphoreObject(n), .semaphore)
            return 1
        }
        var t = ObjectType(.semaphore)
        t.method("wait") { a throws(LuaError) in
            let s: SemaphoreObject = try a.object(1, .semaphore)
            let timeout = try Deadline.timeout(a, 2)
            let ok = a.runtime.unlocked { Waits.wait(s.semaphore, timeout) }
            if ok { s.value.wrappingSubtract(1, ordering: .relaxed) }
            return Waits.push(a.L, ok)
        }
        t.method("signal") { a throws(LuaError) in
            let s: SemaphoreObject = try a.object(1, .semaphore)
            s.value.wrappingAdd(1, ordering: .relaxed)
            lua_pushboolean(a.L, s.semaphore.signal() != 0 ? 1 : 0)
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
