import Dispatch
import Synchronization

/// `q:after` blocks not run yet. Dispatch cannot cancel an `asyncAfter`; the runtime can drop
/// one: an end (a time limit, an interrupt) claims every entry, so that its block does nothing
/// when its time comes and stops counting as outstanding work now.
final class PendingAfters: Sendable {
    private let entries = Mutex<(next: Int, all: [Int: @Sendable () -> Void])>((0, [:]))

    /// Registers a block's `drop` (what undoing its submission takes); the id its block claims.
    func add(_ drop: @escaping @Sendable () -> Void) -> Int {
        entries.withLock { e in
            e.next += 1
            e.all[e.next] = drop
            return e.next
        }
    }

    /// Whether the block may run (it was not dropped); it is forgotten either way.
    func claim(_ id: Int) -> Bool {
        entries.withLock { $0.all.removeValue(forKey: id) != nil }
    }

    /// Drops every block not run yet.
    func dropAll() {
        let drops = entries.withLock { e in
            defer { e.all.removeAll() }
            return Array(e.all.values)
        }
        for drop in drops { drop() }
    }
}
