import CLua
import CLuaShim
import Dispatch

/// What a block submitted by `q:async(fn)` needs when it runs. Submitted with libdispatch's
/// `dispatch_async_f` and a pointer to one of these, instead of a Swift closure that Swift's
/// Dispatch would turn into a block (two allocations and two frees per block); the records come
/// from a free list (docs/performance.md has the figures). 16 bytes: every pending block holds
/// one, and a script that submits in a loop keeps them all pending at once. The runtime is not
/// stored: it is at the start of the record's slab (`BlockRecords.owner(of:)`).
struct BlockRecord {
    /// While the block is pending: its queue, retained as a closure would capture it. While the
    /// record is free: the next free record.
    var link: UnsafeMutableRawPointer?
    var ref: Int32 = LUA_NOREF
    var barrier = false
}

/// A runtime's block records: taken when a block is submitted and given back when it starts,
/// both under the interpreter lock, so the free list needs no lock of its own. Slabs are never
/// moved or freed while the runtime lives (every pending block retains the runtime, once for
/// all records in flight: `Runtime.recordsInFlight`).
final class BlockRecords {
    /// A slab is aligned to its size; its first slot holds the owning runtime (unretained), the
    /// others are records.
    private static let slabBytes = 8192
    private static let slabSize = slabBytes / MemoryLayout<BlockRecord>.stride
    @exclusivity(unchecked) private var free: UnsafeMutablePointer<BlockRecord>?
    @exclusivity(unchecked) private var slabs: [UnsafeMutableRawPointer] = []

    /// Lock held; `owner` is the runtime these records belong to.
    @inline(__always) func take(for owner: Runtime) -> UnsafeMutablePointer<BlockRecord> {
        if let r = free {
            free = r.pointee.link?.assumingMemoryBound(to: BlockRecord.self)
            return r
        }
        return grow(owner)
    }

    /// Lock held.
    @inline(__always) func give(_ r: UnsafeMutablePointer<BlockRecord>) {
        r.pointee.link = free.map { UnsafeMutableRawPointer($0) }
        free = r
    }

    /// The runtime that owns `r`: the pointer at the start of its slab.
    @inline(__always) static func owner(of r: UnsafeMutablePointer<BlockRecord>) -> Unmanaged<Runtime> {
        let slab = UnsafeRawPointer(bitPattern: UInt(bitPattern: r) & ~UInt(slabBytes - 1))!
        return Unmanaged.fromOpaque(slab.load(as: UnsafeRawPointer.self))
    }

    /// Slabs allocated so far (each holds `slabSize - 1` records); lock held.
    var slabCount: Int { slabs.count }

    private func grow(_ owner: Runtime) -> UnsafeMutablePointer<BlockRecord> {
        let slab = UnsafeMutableRawPointer.allocate(byteCount: Self.slabBytes, alignment: Self.slabBytes)
        slab.storeBytes(of: Unmanaged.passUnretained(owner).toOpaque(), as: UnsafeMutableRawPointer.self)
        let records = (slab + MemoryLayout<BlockRecord>.stride).bindMemory(to: BlockRecord.self, capacity: Self.slabSize - 1)
        records.initialize(repeating: BlockRecord(), count: Self.slabSize - 1)
        slabs.append(slab)
        for i in 1..<(Self.slabSize - 1) { give(records + i) }
        return records
    }

    deinit {
        for slab in slabs { slab.deallocate() }
    }
}

/// The C objects that Swift's Dispatch wrappers hold, for the C functions it does not expose.
enum RawDispatch {
    /// The `dispatch_object_t` a `DispatchQueue` or `DispatchGroup` wraps, or nil if this
    /// Dispatch lays its wrappers out otherwise. swift-corelibs-libdispatch's wrappers hold it
    /// as their only stored property (`__wrapped`), right after the object's header; that is
    /// checked once, on the main queue, whose C object the C API names. (Reading it through
    /// `Mirror` instead cost every start-up dozens of protocol-conformance lookups.)
    static func pointer(_ object: AnyObject) -> UnsafeMutableRawPointer? {
        layoutHolds ? wrapped(object) : nil
    }

    private static let layoutHolds: Bool = wrapped(DispatchQueue.main) == ld_main_queue_object()

    private static func wrapped(_ object: AnyObject) -> UnsafeMutableRawPointer? {
        Unmanaged.passUnretained(object).toOpaque()
            .load(fromByteOffset: 2 * MemoryLayout<UInt>.size, as: UnsafeMutableRawPointer?.self)
    }

    /// The `dispatch_queue_t` of `queue`, checked against its label; nil if it cannot be found.
    static func queue(_ queue: DispatchQueue) -> UnsafeMutableRawPointer? {
        guard let p = pointer(queue), let label = ld_queue_label(p), String(cString: label) == queue.label else { return nil }
        return p
    }
}

extension Runtime {
    /// Submits the function at registry `ref` as one Dispatch block on `q` (in `group`, as a
    /// barrier) with dispatch_async_f; false if the queue's C object is unknown or tracing is
    /// on (then the caller submits a Swift closure). Lock held; `q` is kept alive by the caller.
    @inline(__always)
    func submitRecord(_ ref: Int32, on q: Unmanaged<QueueObject>, group: GroupObject?, barrier: Bool) -> Bool {
        // A traced submission carries its flow in a closure (QueueBinding.submit).
        guard tracer == nil, let raw = q._withUnsafeGuaranteedRef({ $0.rawQueue }) else { return false }
        var rawGroup: UnsafeMutableRawPointer?
        if let group {
            guard !barrier, let g = group.rawGroup else { return false }
            rawGroup = g
        }
        let r = blockRecords.take(for: self)
        // One retain of the runtime covers every record in flight (cheaper than one per block).
        if recordsInFlight.wrappingAdd(1, ordering: .relaxed).oldValue == 0 {
            _ = Unmanaged.passUnretained(self).retain()
        }
        r.pointee.link = q.retain().toOpaque()
        r.pointee.ref = ref
        r.pointee.barrier = barrier
        workAdded()
        q._withUnsafeGuaranteedRef { $0.queued.wrappingAdd(1, ordering: .relaxed) }
        ld_async_f(raw, rawGroup, barrier ? 1 : 0, r, Runtime.runRecord)
        return true
    }

    /// `q:async(fn)` with the queue at 1 and the function at 2, nothing else: false if not
    /// submitted (then the binding's general path runs). A method of the runtime, so that no
    /// reference is counted on the way.
    static func submitPlain(_ L: OpaquePointer) -> Bool {
        Unmanaged<Runtime>.fromOpaque(ld_extraspace(L).pointee!)._withUnsafeGuaranteedRef { $0.submitPlain(L) }
    }

    /// `submitPlain` as the C fast path of `q:async` (`ld_push_binding_fast`): 0 results when
    /// submitted, -1 to run the binding's general path.
    static let submitPlainFast: ld_fast_fn = { L in submitPlain(L!) ? 0 : -1 }

    private func submitPlain(_ L: OpaquePointer) -> Bool {
        guard let q = objects.unmanaged(L, 1, .queue, as: QueueObject.self) else { return false }
        lua_pushvalue(L, 2)
        let ref = luaL_ref(L, ld_registryindex())
        if submitRecord(ref, on: q, group: nil, barrier: false) { return true }
        luaL_unref(L, ld_registryindex(), ref)
        return false
    }

    /// The work function of every record block: runs it as `runBlock` would run a closure.
    /// No strong references are formed: the record's retains keep both objects alive, and are
    /// dropped last.
    static let runRecord: ld_work_fn = { context in
        let r = context!.assumingMemoryBound(to: BlockRecord.self)
        let rt = BlockRecords.owner(of: r), q = Unmanaged<QueueObject>.fromOpaque(r.pointee.link!)
        let ref = r.pointee.ref, barrier = r.pointee.barrier
        rt._withUnsafeGuaranteedRef { runtime in
            q._withUnsafeGuaranteedRef { queue in
                runtime.runBlock(ref, on: queue, barrier: barrier, consume: true, queued: true, record: r)
            }
        }
        q.release()
        // A submitter that takes the count from 0 to 1 meanwhile retains again: each 0 -> 1
        // has its own 1 -> 0, and the runtime lives while any record is in flight.
        if rt._withUnsafeGuaranteedRef({ $0.recordsInFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue }) == 0 {
            rt.release()
        }
    }
}
