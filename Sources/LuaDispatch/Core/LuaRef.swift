import Glibc
import Synchronization

/// A registry reference owned by a Swift object; released (later, under the lock) on deinit.
final class LuaRef: @unchecked Sendable {
    let runtime: Runtime
    let ref: Int32

    init(_ runtime: Runtime, _ ref: Int32) {
        self.runtime = runtime
        self.ref = ref
    }

    deinit { runtime.deferUnref(ref) }
}

/// A mutable value shared with Dispatch closures; callers synchronise access themselves
/// (normally with the interpreter lock).
final class Shared<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Writes to standard error without buffering (and without touching the `stderr` global).
func writeStderr(_ text: String) {
    var text = text
    text.withUTF8 { buf in
        var offset = 0
        while offset < buf.count {
            let n = write(2, buf.baseAddress! + offset, buf.count - offset)
            if n <= 0 { break }
            offset += n
        }
    }
}

extension Atomic where Value == Int {
    /// Decrements the count unless it is already 0; false then. For counts that must never go
    /// below zero (suspensions, group enters), whose underflow libdispatch punishes with an abort.
    func decrementIfPositive() -> Bool {
        var n = load(ordering: .relaxed)
        while n > 0 {
            let (done, now) = compareExchange(expected: n, desired: n - 1, ordering: .relaxed)
            if done { return true }
            n = now
        }
        return false
    }
}
