import CLua
import CLuaShim
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a traced block was: `args.kind` in the trace.
enum TraceKind: UInt8 {
    case async, barrier, sync, after, notify, source, io, apply, mainChunk, task, workItem, handler, call

    var name: String {
        switch self {
        case .async: "async"
        case .barrier: "barrier"
        case .sync: "sync"
        case .after: "after"
        case .notify: "notify"
        case .source: "source"
        case .io: "io"
        case .apply: "apply"
        case .mainChunk: "main chunk"
        case .task: "task"
        case .workItem: "work_item"
        case .handler: "handler"
        case .call: "call"
        }
    }
}

/// The recorder of one interpreter's execution timeline.
///
/// Every event is recorded by a thread that holds the interpreter lock (a block, a binding, a
/// wait that has just taken the lock back), so the one buffer needs no synchronisation of its
/// own. Strings (labels, sources, messages) are interned; an event is a few machine words.
/// The buffer is bounded: past `limit` events, new ones are counted as dropped, and the trace
/// says so. As in `Runtime`, the lock is what makes access exclusive: Swift's dynamic
/// exclusivity checks would double the cost of recording.
final class Tracer: @unchecked Sendable {
    enum Phase: UInt8 { case complete, flowStart, instant }
    enum Category: UInt8 { case block, wait, lock, flow, event }

    /// 40 bytes: a traced block costs two events (its submission's flow start, and its complete
    /// event, which also ends that flow), and every byte is written while the block runs.
    struct Event {
        /// Nanoseconds since `origin`.
        var ts: UInt64
        /// Complete events: the duration.
        var dur: UInt64 = 0
        /// Flow starts: the flow's id. Complete blocks: the flow that started the block, which
        /// ends where the block starts (0: none).
        var id: UInt64 = 0
        /// String indexes: the event's name and two arguments (-1: none).
        var name: Int32
        var arg1: Int32 = -1
        var arg2: Int32 = -1
        var tid: UInt16
        /// Phase, category and `unfinished`, packed.
        private var bits: UInt8

        init(phase: Phase, category: Category, tid: Int32, name: Int32, arg1: Int32 = -1, arg2: Int32 = -1,
             ts: UInt64, dur: UInt64 = 0, id: UInt64 = 0) {
            self.ts = ts
            self.dur = dur
            self.id = id
            self.name = name
            self.arg1 = arg1
            self.arg2 = arg2
            self.tid = UInt16(truncatingIfNeeded: tid)
            bits = phase.rawValue | category.rawValue << 2
        }

        var phase: Phase { Phase(rawValue: bits & 3)! }
        var category: Category { Category(rawValue: (bits >> 2) & 7)! }
        /// A block the process ended in the middle of.
        var unfinished: Bool {
            get { bits & 0x20 != 0 }
            set { bits = newValue ? bits | 0x20 : bits & ~0x20 }
        }
    }

    /// A block that has started: what its complete event needs at the end.
    struct Open {
        let serial: Int
        let start: UInt64
        let tid: Int32
        let name: Int32
        let kind: Int32
        let source: Int32
        /// The flow that started the block (0: none).
        let flow: UInt64
    }

    /// `requested` for a block that took the lock without waiting (see `Runtime.acquireForBlock`).
    static let uncontended: UInt64 = 1

    /// Where the trace is written when the process ends (nil: only on request).
    let path: String?
    let limit: Int
    let origin: UInt64
    @exclusivity(unchecked) private(set) var events: [Event] = []
    @exclusivity(unchecked) private(set) var dropped = 0
    @exclusivity(unchecked) private(set) var strings: [String] = []
    @exclusivity(unchecked) private var stringIndex: [String: Int32] = [:]
    @exclusivity(unchecked) private var sourceIndex: [SourceKey: Int32] = [:]
    @exclusivity(unchecked) private var nextFlow: UInt64 = 0
    /// Blocks started and not ended, by slot (`Open.serial`): written as unfinished if the
    /// process ends first. Slots are reused through `freeSlots`, so this costs no hashing.
    @exclusivity(unchecked) private var running: [Open?] = []
    @exclusivity(unchecked) private var freeSlots: [Int] = []
    /// Strings every block uses, interned once: "submit", "lock", and the kinds by raw value.
    @exclusivity(unchecked) private var submitName: Int32 = 0, lockName: Int32 = 0
    @exclusivity(unchecked) private var kindNames: [Int32] = []
    /// The last label and source looked up: consecutive blocks of one queue skip the hashing.
    @exclusivity(unchecked) private var lastLabel = "", lastLabelIndex: Int32 = -1
    @exclusivity(unchecked) private var lastSource: SourceKey?, lastSourceIndex: Int32 = -1
    /// Set once the trace went to `path`.
    @exclusivity(unchecked) var written = false
    /// What pool workers ran, recorded without the interpreter lock (see `WorkerLanes.swift`).
    let workerSlices = Mutex(WorkerSlices())

    private struct SourceKey: Hashable {
        let chunk: UnsafePointer<CChar>
        let line: Int32
    }

    init(path: String?, limit: Int) {
        self.path = path
        self.limit = max(limit, 16)
        origin = Tracer.clock()
        // Reserved, not touched: growing by doubling would copy (and fault in) it all again.
        events.reserveCapacity(min(self.limit, 1 << 20))
        submitName = intern("submit")
        lockName = intern("lock")
        var k: UInt8 = 0
        while let kind = TraceKind(rawValue: k) {
            kindNames.append(intern(kind.name))
            k += 1
        }
    }

    /// Monotonic nanoseconds, never 0 (0 means "not traced" to callers).
    @inline(__always) static func clock() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec) | 1
    }

    @inline(__always) private func relative(_ t: UInt64) -> UInt64 { t > origin ? t - origin : 0 }

    private func append(_ e: Event) {
        guard events.count < limit else {
            dropped += 1
            return
        }
        events.append(e)
    }

    /// The longest string a trace keeps, in UTF-8 bytes: labels and messages are the script's,
    /// and each event writes its strings out in full (a 1 MiB label on every block of a million
    /// made a terabyte of trace, written after the time limit).
    static let longestString = 256

    func intern(_ s: String) -> Int32 {
        let s = s.utf8.count <= Tracer.longestString ? s
            : String(decoding: s.utf8.prefix(Tracer.longestString), as: UTF8.self) + "..."
        if let i = stringIndex[s] { return i }
        let i = Int32(strings.count)
        strings.append(s)
        stringIndex[s] = i
        return i
    }

    /// `file:line` of the Lua function on top of `T` (left there).
    private func source(_ T: OpaquePointer) -> Int32 {
        guard lua_type(T, -1) == LUA_TFUNCTION else { return intern("?") }
        var ar = lua_Debug()
        lua_pushvalue(T, -1)
        guard lua_getinfo(T, ">S", &ar) != 0, let chunk = ar.source else { return intern("?") }
        let key = SourceKey(chunk: chunk, line: ar.linedefined)
        if key == lastSource { return lastSourceIndex }
        if let i = sourceIndex[key] {
            lastSource = key
            lastSourceIndex = i
            return i
        }
        var name = String(cString: chunk)
        if name.hasPrefix("@") || name.hasPrefix("=") {
            name.removeFirst()
        } else {
            name = "[string]"
        }
        let i = intern(ar.linedefined > 0 ? "\(name):\(ar.linedefined)" : (ar.what.map { String(cString: $0) } == "C" ? "[C]" : name))
        // The chunk's source string lives as long as the function's prototype; a later chunk at
        // the same address would only reuse a name, never crash.
        sourceIndex[key] = i
        return i
    }

    /// `file:line` of the Lua function on top of `T` (left there).
    func sourceName(_ T: OpaquePointer) -> String { strings[Int(source(T))] }

    // MARK: recording (lock held)

    /// A block whose function is on top of `T` starts now; it asked for the lock at `requested`.
    /// Without `T`, `source` names the function (or it is unknown).
    func begin(_ T: OpaquePointer?, requested: UInt64, label: String?, kind: TraceKind, flow: UInt64, source: String? = nil) -> Open {
        let now = Tracer.clock()
        let tid = Int32(ld_thread_number())
        let name: Int32
        if let label, label == lastLabel, lastLabelIndex >= 0 {
            name = lastLabelIndex
        } else {
            name = intern(label ?? "(no queue)")
            if let label {
                lastLabel = label
                lastLabelIndex = name
            }
        }
        // Waits for the lock shorter than a microsecond are the uncontended lock itself.
        if requested != Tracer.uncontended, now > requested + 1_000 {
            let from = relative(requested)
            append(Event(phase: .complete, category: .lock, tid: tid, name: lockName, arg1: name,
                         ts: from, dur: relative(now) - from))
        }
        let slot = freeSlots.popLast() ?? running.count
        let open = Open(serial: slot, start: relative(now), tid: tid, name: name, kind: kindNames[Int(kind.rawValue)],
                        source: T.map(self.source) ?? intern(source ?? "?"), flow: flow)
        if slot == running.count { running.append(open) } else { running[slot] = open }
        return open
    }

    func end(_ open: Open) {
        running[open.serial] = nil
        freeSlots.append(open.serial)
        let now = relative(Tracer.clock())
        append(Event(phase: .complete, category: .block, tid: open.tid, name: open.name, arg1: open.kind,
                     arg2: open.source, ts: open.start, dur: now > open.start ? now - open.start : 0, id: open.flow))
    }

    /// Ends, as unfinished, every block still running (the process is ending).
    func endRunning() {
        for case let open? in running.sorted(by: { ($0?.start ?? 0) < ($1?.start ?? 0) }) {
            end(open)
            events[events.count - 1].unfinished = true
        }
    }

    /// A submission from the calling thread: the start of a flow; returns its id.
    func flowStart() -> UInt64 {
        nextFlow += 1
        append(Event(phase: .flowStart, category: .flow, tid: Int32(ld_thread_number()), name: submitName,
                     ts: relative(Tracer.clock()), id: nextFlow))
        return nextFlow
    }

    /// A blocking call `call` (a wait of `kind`) that started at `started` and is over now.
    func wait(_ call: String, kind: String, started: UInt64) {
        let now = Tracer.clock()
        append(Event(phase: .complete, category: .wait, tid: Int32(ld_thread_number()), name: intern(call),
                     arg1: intern(kind), ts: relative(started), dur: now > started ? now - started : 0))
    }

    /// A block of queue `label` gave the interpreter up for a waiting one (a switch) at
    /// `started`, and has it back now: time it waited for the interpreter, a `lock` event.
    func switched(started: UInt64, label: String?) {
        let now = Tracer.clock()
        append(Event(phase: .complete, category: .lock, tid: Int32(ld_thread_number()), name: lockName,
                     arg1: intern(label ?? "(no queue)"), ts: relative(started), dur: now > started ? now - started : 0))
    }

    /// An instant: `what` (`suspend`, `resume`, `activate`, `cancel`, `error`) about `subject`.
    func instant(_ what: String, _ subject: String) {
        append(Event(phase: .instant, category: .event, tid: Int32(ld_thread_number()), name: intern(what),
                     arg1: intern(subject), ts: relative(Tracer.clock())))
    }
}
