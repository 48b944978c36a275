import CLuaShim

/// Bytes the runtime holds outside Lua on a script's behalf (a copy of its data, a native
/// object it made), charged to the interpreter's memory limit while the holder lives: charged
/// when made, given back when the holder (a class's stored property) goes.
///
/// A charge made in a binding is never refused where it is made (Swift frames, which an error
/// must not unwind through): past the limit, the binding raises Lua's memory error once it has
/// returned to C (`ld_memory_settle`). `Runtime.reserve` refuses up front, for copies big
/// enough to matter before they exist.
struct MemoryCharge: ~Copyable, @unchecked Sendable {
    private let budget: OpaquePointer?
    private let bytes: Int64

    static var none: MemoryCharge { MemoryCharge(nil, 0) }

    /// Charges `bytes` to `budget` (nothing without one).
    init(_ budget: OpaquePointer?, _ bytes: Int) {
        if let budget, bytes > 0 {
            ld_memory_charge(budget, Int64(bytes))
            self.budget = ld_budget_retain(budget)
            self.bytes = Int64(bytes)
        } else {
            self.budget = nil
            self.bytes = 0
        }
    }

    /// Takes over bytes already charged (by `Runtime.reserve`).
    fileprivate init(taking bytes: Int64, of budget: OpaquePointer) {
        self.budget = ld_budget_retain(budget)
        self.bytes = bytes
    }

    var count: Int { Int(bytes) }

    deinit {
        if let budget {
            if bytes > 0 { ld_memory_uncharge(budget, bytes) }
            ld_budget_release(budget)
        }
    }
}

/// What a script's objects cost outside Lua, measured as resident memory per object (100,000 of
/// each, less the Lua memory they took; debug build, 2026-11-28), rounded up: what the memory
/// limit charges for each while it lives, besides the script data it copies.
enum NativeCost {
    /// A queue: Dispatch's queue and the runtime's object; its label is held twice more
    /// (Swift's string and Dispatch's copy), charged by its length.
    static let queue = 400
    static let group = 200
    static let semaphore = 250
    static let workItem = 550
    static let data = 250
    /// One region of a data object (a record in Dispatch's list of a concatenation).
    static let dataRegion = 32
    static let channel = 200
    /// A key: the runtime's object and Dispatch's key (its name is charged by its length).
    static let specificKey = 200
    /// A source: Dispatch's source and its timer or watcher, the runtime's object and handlers.
    static let source = 1_300
    /// A task: its object, its step block and its coroutine's runtime state.
    static let task = 600
    /// A job: its object, its place in the pool's queue.
    static let job = 300
    /// A pending `after` block: Dispatch's timer and the runtime's record.
    static let after = 700
    /// A slab of block records: its own bytes, and for each record a pending block's
    /// continuation in Dispatch (measured: 95 bytes per pending block besides its function).
    static let slab = Int(LD_SLAB_BYTES) + (Int(LD_SLAB_BYTES) / Int(LD_RECORD_BYTES)) * 96
    /// A value copied between interpreters, besides its bytes (its graph, nodes and values).
    static let copied = 200
}

extension Runtime {
    /// A charge for `bytes` held on the script's behalf, never refused here (see `MemoryCharge`).
    func charge(_ bytes: Int) -> MemoryCharge { MemoryCharge(control.budget, bytes) }

    /// Lua's memory error (raised once the binding returns) if what the script holds is past the
    /// limit now: before a binding hands over a copy it made (a message, a job), so that a
    /// script that catches the error cannot pile up copies. With `LD_MEMORY_SLACK`: garbage
    /// another state of the interpreter (a worker) has yet to collect must not refuse the job
    /// that would collect it.
    func refuseIfOver() throws(LuaError) {
        guard let budget = control.budget, ld_budget_used(budget) > ld_budget_limit(budget) + Int64(LD_MEMORY_SLACK) else { return }
        ld_memory_refuse(budget)
        throw .message("not enough memory")
    }

    /// Whether what the script holds is past the memory limit (by more than the slack a
    /// binding's return allows): work that makes more copies stops (reads, map tasks).
    var pastMemoryLimit: Bool {
        guard let budget = control.budget else { return false }
        return ld_budget_used(budget) > ld_budget_limit(budget) + Int64(LD_MEMORY_SLACK)
    }

    /// `reserve`, after a full collection of `L` when the budget would refuse (as Lua collects
    /// before it refuses an allocation): for objects a script lists again and again.
    func reserveCollecting(_ L: OpaquePointer, _ bytes: Int) throws(LuaError) -> MemoryCharge {
        if let budget = control.budget, ld_budget_used(budget) + Int64(bytes) > ld_budget_limit(budget) { _ = ld_gc_collect(L) }
        return try reserve(bytes)
    }

    /// A charge for `bytes` about to be copied, refused with Lua's memory error if that would
    /// pass the limit (the binding then raises it once it has returned, as a failed allocation).
    func reserve(_ bytes: Int) throws(LuaError) -> MemoryCharge {
        guard let budget = control.budget, bytes > 0 else { return .none }
        guard ld_memory_try(budget, Int64(bytes)) != 0 else { throw .message("not enough memory") }
        return MemoryCharge(taking: Int64(bytes), of: budget)
    }
}

/// A charge a closure holds while Dispatch keeps it (an `after` block's).
final class HeldCharge: @unchecked Sendable {
    let charge: MemoryCharge
    init(_ charge: consuming MemoryCharge) { self.charge = charge }
}
