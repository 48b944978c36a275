import Synchronization

/// Every source object not yet released. An active source keeps itself, and so the runtime,
/// alive until its cancel handler has run: closing the interpreter cancels them all, or the
/// runtime (and the source's timer or descriptor) would never go.
final class LiveSources: @unchecked Sendable {
    private struct Entry { weak var source: SourceObject? }
    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    func add(_ s: SourceObject) { entries.withLock { $0[ObjectIdentifier(s)] = Entry(source: s) } }
    func remove(_ s: SourceObject) { _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(s)) } }

    /// Lock held, the interpreter closed (no handler calls Lua any more).
    func cancelAll() {
        let all = entries.withLock { $0.values.compactMap(\.source) }
        for s in all { s.cancelForClose() }
    }
}
