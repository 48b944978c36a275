import CLua
import CLuaShim
import Dispatch
import Synchronization

/// What a block submitted by `q:async(fn)` needs when it runs. Submitted with libdispatch's
/// `dispatch_async_f` and a pointer to one of these, instead of a Swift closure that Swift's
/// Dispatch would turn into a block (two allocations and two frees per block); the records come
/// from a free list (docs/performance.md has the figures). 16 bytes: every pending block holds
/// one, and a script that submits in a loop keeps them all pending at once. The runtime is not
/// stored: it is in the head of the record's slab (`ld_slab_head`, `BlockRecords.owner(of:)`).
struct BlockRecord {
    /// While the block is pending: its queue (kept alive by the queue's count of records in
    /// flight). While the record is free: the next free record.
    var link: UnsafeMutableRawPointer?
    /// The record's number among the runtime's records, fixed for its life: where its flow is
    /// kept when tracing.
    var slot: Int32 = 0
    var barrier = false
}

/// A runtime's block records: taken when a block is submitted and given back when it starts,
/// both under the interpreter lock, so the free list needs no lock of its own. Slabs are never
/// moved or freed while the runtime lives (the runtime retains itself while records are in
/// flight: `Runtime.recordsPending`).
/// A pending block's function waits in its slab's table, at the record's index in the slab
/// (`ld_record_store`, `ld_record_take`). Records are reused most recently freed first, so the
/// slabs in use stay few.
final class BlockRecords {
    /// When tracing, each pending record's flow (the trace's arrow from its submission), by
    /// slot (empty when not tracing).
    @exclusivity(unchecked) var flows: [UInt64] = []
    /// A slab is aligned to its size; its first slot holds its head (`ld_slab_head`), the
    /// others are records.
    private static let slabBytes = Int(LD_SLAB_BYTES)
    private static let slabSize = slabBytes / Int(LD_RECORD_BYTES)
    @exclusivity(unchecked) private var free: UnsafeMutablePointer<BlockRecord>?
    @exclusivity(unchecked) private var slabs: [UnsafeMutableRawPointer] = []
    /// The memory limit the slabs are charged to (retained), and what they are charged: each
    /// slab with the native cost of a pending block per record (`NativeCost.slab`), since the
    /// slabs bound how many blocks can wait at once. Slabs are kept, so is their charge.
    @exclusivity(unchecked) private var budget: OpaquePointer?
    @exclusivity(unchecked) private var charged: Int64 = 0

    /// Lock held; `owner` is the runtime these records belong to, `L` one of its Lua threads.
    /// Nil only when a new slab was needed and Lua is out of memory.
    @inline(__always) func take(for owner: Runtime, _ L: OpaquePointer) -> UnsafeMutablePointer<BlockRecord>? {
        if let r = free {
            free = r.pointee.link?.assumingMemoryBound(to: BlockRecord.self)
            return r
        }
        return grow(owner, L)
    }

    /// Lock held.
    @inline(__always) func give(_ r: UnsafeMutablePointer<BlockRecord>) {
        r.pointee.link = free.map { UnsafeMutableRawPointer($0) }
        free = r
    }

    /// The runtime that owns `r`: the one in its slab's head.
    @inline(__always) static func owner(of r: UnsafeMutablePointer<BlockRecord>) -> Unmanaged<Runtime> {
        Unmanaged.fromOpaque(ld_slab_head_of(r).pointee.owner)
    }

    /// Slabs allocated so far (each holds `slabSize - 1` records); lock held.
    var slabCount: Int { slabs.count }

    private func grow(_ owner: Runtime, _ L: OpaquePointer) -> UnsafeMutablePointer<BlockRecord>? {
        precondition(MemoryLayout<BlockRecord>.stride == Int(LD_RECORD_BYTES) && MemoryLayout<ld_slab_head>.stride <= Int(LD_RECORD_BYTES))
        // Past the memory limit no new slab: the fast path declines, and the binding refuses.
        if let b = owner.control.budget, ld_budget_used(b) > ld_budget_limit(b) + Int64(LD_MEMORY_SLACK) { return nil }
        let functions = ld_new_slab_table(L)
        guard functions != LUA_NOREF else { return nil }
        let slab = UnsafeMutableRawPointer.allocate(byteCount: Self.slabBytes, alignment: Self.slabBytes)
        slab.bindMemory(to: ld_slab_head.self, capacity: 1)
            .initialize(to: ld_slab_head(owner: Unmanaged.passUnretained(owner).toOpaque(), functions: functions))
        let records = (slab + Int(LD_RECORD_BYTES)).bindMemory(to: BlockRecord.self, capacity: Self.slabSize - 1)
        // The first record is returned; the others, each linked to the next, become the free
        // list (which is empty: `take` grows only then).
        let first = Int32(slabs.count * Self.slabSize), count = Self.slabSize - 1
        for i in 0..<count {
            let next = i > 0 && i + 1 < count ? UnsafeMutableRawPointer(records + i + 1) : nil
            (records + i).initialize(to: BlockRecord(link: next, slot: first + Int32(i) + 1, barrier: false))
        }
        free = records + 1
        slabs.append(slab)
        if let b = owner.control.budget {
            if budget == nil { budget = ld_budget_retain(b) }
            ld_memory_charge(b, Int64(NativeCost.slab))
            charged += Int64(NativeCost.slab)
        }
        if owner.tracer != nil { flows.append(contentsOf: repeatElement(0, count: Self.slabSize)) }
        return records
    }

    deinit {
        for slab in slabs { slab.deallocate() }
        if let budget {
            ld_memory_uncharge(budget, charged)
            ld_budget_release(budget)
        }
    }
}

extension Runtime {
    /// Submits the function at index `i` of `L` as one Dispatch block on `q` (in `group`, as a
    /// barrier) with dispatch_async_f; false if the queue's C object is unknown (then the
    /// caller submits a Swift closure). Lock held; `q` is kept alive by the caller.
    func submitRecord(_ L: OpaquePointer, _ i: Int32, on q: Unmanaged<QueueObject>, group: GroupObject?, barrier: Bool) -> Bool {
        var rawGroup: UnsafeMutableRawPointer?
        if let group {
            guard !barrier, let g = group.rawGroup else { return false }
            rawGroup = g
        }
        guard let r = enqueueRecord(L, on: q, group: rawGroup, barrier: barrier) else { return false }
        ld_record_store(L, r, i)
        ld_pop(L, 1)
        return true
    }

    /// `q:async(fn)`'s fast path (`ld_submit_fn`): the record for which C stores the function,
    /// or nil.
    static let submitFast: ld_submit_fn = { L, object in
        Unmanaged<Runtime>.fromOpaque(ld_extraspace(L!).pointee!)._withUnsafeGuaranteedRef {
            UnsafeMutableRawPointer($0.enqueueRecord(L!, on: Unmanaged<QueueObject>.fromOpaque(object!), group: nil, barrier: false))
        }
    }

    /// Takes a record and submits its block; the record, for which the caller stores the
    /// function before releasing the lock (the block needs the lock to start), or nil if the
    /// queue's C object is unknown or no record can be had (then the caller submits otherwise).
    /// When tracing, the submission starts a flow.
    ///
    /// Record blocks are counted under the lock, with plain loads and stores: no atomic
    /// read-modify-write, no reference count touched per block. The runtime and each queue are
    /// retained once while they have records in flight, and the records count as one unit of
    /// `pending` (see `recordsPending`).
    @inline(__always)
    private func enqueueRecord(_ L: OpaquePointer, on q: Unmanaged<QueueObject>, group: UnsafeMutableRawPointer?,
                               barrier: Bool) -> UnsafeMutablePointer<BlockRecord>? {
        guard let raw = q._withUnsafeGuaranteedRef({ $0.rawQueue }), let r = ledger.blockRecords.take(for: self, L) else { return nil }
        if let tracer { ledger.blockRecords.flows[Int(r.pointee.slot)] = tracer.flowStart() }
        if ledger.recordsPending.addUnderLock(1) == 1 {
            _ = Unmanaged.passUnretained(self).retain()
            workAdded()
        }
        q._withUnsafeGuaranteedRef { queue in
            if queue.records.addUnderLock(1) == 1 { _ = q.retain() }
            queue.queuedRecords.addUnderLock(1)
        }
        r.pointee.link = q.toOpaque()
        r.pointee.barrier = barrier
        ld_async_f(raw, group, barrier ? 1 : 0, r, Runtime.runRecord)
        return r
    }

    /// The work function of every record block: runs it as `runBlock` would run a closure.
    /// No strong references are formed: the runtime and the queue are retained while they have
    /// records in flight, and the last record of each drops that retain once the lock is free.
    static let runRecord: ld_work_fn = { context in
        let r = context!.assumingMemoryBound(to: BlockRecord.self)
        let rt = BlockRecords.owner(of: r), q = Unmanaged<QueueObject>.fromOpaque(r.pointee.link!)
        let (lastOfQueue, lastOfRuntime) = rt._withUnsafeGuaranteedRef { runtime in
            q._withUnsafeGuaranteedRef { queue in runtime.runRecord(r, on: queue) }
        }
        if lastOfQueue { q.release() }
        if lastOfRuntime { rt.release() }
    }

    /// Runs record `r`'s block on `queue`; whether it was the last record in flight of the
    /// queue and of the runtime (whose retains the caller drops). Takes and releases the lock.
    @inline(__always)
    private func runRecord(_ r: UnsafeMutablePointer<BlockRecord>, on queue: QueueObject) -> (Bool, Bool) {
        let slot = r.pointee.slot, barrier = r.pointee.barrier
        pushFrame(queue, barrier)
        defer { ld_frame_pop() }
        let requested = acquireForBlock()
        ledger.blockRecords.give(r)
        queue.queuedRecords.addUnderLock(-1)
        if startLua() {
            // Untraced (requested is 0), the block runs through a copy of `runLuaBlock` from
            // which the compiler drops every tracing step.
            if requested == 0 {
                runLuaBlock(on: queue, barrier: barrier, kind: .async, flow: 0, requested: 0) { T in ld_record_take(T, r) }
            } else {
                runLuaBlock(on: queue, barrier: barrier, kind: .async, flow: ledger.blockRecords.flows[Int(slot)],
                            requested: requested) { T in ld_record_take(T, r) }
            }
            finishLua()
        }
        let lastOfQueue = queue.records.addUnderLock(-1) == 0
        let lastOfRuntime = ledger.recordsPending.addUnderLock(-1) == 0
        if lastOfRuntime { workDone() }
        release()
        return (lastOfQueue, lastOfRuntime)
    }
}

extension Atomic where Value == Int {
    /// Adds `delta` with a plain load and store, for a counter that only the interpreter lock's
    /// holder writes (others may read it); the new value.
    @inline(__always) @discardableResult
    func addUnderLock(_ delta: Int) -> Int {
        let value = load(ordering: .relaxed) &+ delta
        store(value, ordering: .relaxed)
        return value
    }
}
