import CLuaShim

// A `sync` onto the main queue from a thread that blocks for it (a host thread running a chunk,
// a held `LuaFunction` called from another thread) waits for whoever services the main queue.
// A host loop that services it only while `pendingWork > 0`, or with `run(.once)`, must see that
// block: it counts as one unit of outstanding work, and as a block waiting on its queue, until
// the sync returns. (Inside a block the block itself is work already; a task does not block.)

extension QueueObject {
    /// Whether this queue's blocks run on the main thread: it is the main queue, or targets it.
    /// Reads `target`: lock held.
    var runsOnMainQueue: Bool {
        if kind == .main { return true }
        guard target != nil else { return false }   // the common case: no walk on every sync
        return chain.contains { $0.kind == .main }
    }
}

extension Runtime {
    /// Before a blocking sync onto `q` (lock held): true when it was counted, to pass to
    /// `mainQueueSyncEnded`.
    @inline(__always) func mainQueueSyncBegins(_ q: QueueObject) -> Bool {
        guard q.runsOnMainQueue else { return false }
        q.queued.wrappingAdd(1, ordering: .relaxed)   // first: whoever sees the work sees where it is
        workAdded()
        return true
    }

    /// The sync's block starts on the main thread: no longer waiting on its queue, and, for
    /// `run(.once)`, a main-thread block ran. Lock held.
    @inline(__always) func mainQueueSyncStarts(_ q: QueueObject) {
        q.queued.wrappingSubtract(1, ordering: .relaxed)
        if ld_thread_number() == 1 { ledger.mainThreadEntries.addUnderLock(1) }
    }

    /// The sync returned (the lock need not be held).
    @inline(__always) func mainQueueSyncEnded(_ counted: Bool) {
        if counted { workDone() }
    }
}
