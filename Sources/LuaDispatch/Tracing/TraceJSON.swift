#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Chrome trace event JSON (`{"traceEvents": [...]}`, times in microseconds), the format that
/// Perfetto and chrome://tracing open. See docs/tracing.md for the shape.
///
/// Written as bytes: a trace of a million blocks is a few million events, and building it as
/// a Swift `String` by interpolation took most of a traced run's time.
extension Tracer {
    func json(processName: String = "luadispatch") -> String {
        String(decoding: jsonBytes(processName: processName), as: UTF8.self)
    }

    func jsonBytes(processName: String = "luadispatch") -> [UInt8] { jsonBytes(processName: processName, until: .max).bytes }

    /// The trace, written until `deadline` (`Tracer.clock()`) at most: events past it are left
    /// out, counted as dropped, and `cut` says how many (the trace then says it was cut short).
    /// A run the time limit ended writes its trace after the limit, and a million blocks' worth
    /// took seconds.
    func jsonBytes(processName: String = "luadispatch", until deadline: UInt64) -> (bytes: [UInt8], cut: Int) {
        var out = JSONBytes(capacity: events.count * 160 + 4096)
        var cut = 0
        // The clock is read once per 4096 events: a few microseconds' writing.
        func late(_ i: Int) -> Bool { i & 4095 == 0 && deadline != .max && Tracer.clock() > deadline }
        // Every string the events name, quoted once.
        let quoted = strings.map { Array(Self.quote($0).utf8) }
        let pid = Int(getpid())
        var first = true
        func next() {
            if !first { out.add(",\n") }
            first = false
        }
        func head(_ tid: UInt16, _ ts: UInt64) {
            out.add("\"pid\":"); out.add(pid); out.add(",\"tid\":"); out.add(Int(tid))
            out.add(",\"ts\":"); out.micro(ts)
        }
        func arg(_ i: Int32) { if i < 0 { out.add("null") } else { out.add(quoted[Int(i)]) } }

        out.add("{\"traceEvents\":[\n")
        next()
        out.add("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":"); out.add(pid)
        out.add(",\"tid\":0,\"args\":{\"name\":"); out.add(Self.quote(processName)); out.add("}}")
        let workers = workerSlices.withLock { $0 }
        var tids = Set<UInt16>()
        for e in events { tids.insert(e.tid) }
        for tid in workers.lanes.keys { tids.insert(tid) }
        for tid in tids.sorted() {
            next()
            out.add("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":"); out.add(pid); out.add(",\"tid\":"); out.add(Int(tid))
            out.add(",\"args\":{\"name\":"); out.add(Self.quote(workers.lanes[tid] ?? (tid == 1 ? "main thread" : "worker \(tid)"))); out.add("}}")
            next()
            out.add("{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":"); out.add(pid); out.add(",\"tid\":"); out.add(Int(tid))
            out.add(",\"args\":{\"sort_index\":"); out.add(Int(tid)); out.add("}}")
        }
        for (i, e) in events.enumerated() {
            if late(i) {
                cut = events.count - i
                break
            }
            switch e.phase {
            case .complete:
                switch e.category {
                case .block:
                    if e.id != 0 {  // the flow from the block's submission ends where it starts
                        next()
                        out.add("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"submit\",\"id\":"); out.add(e.id)
                        out.add(","); head(e.tid, e.ts); out.add("}")
                    }
                    next()
                    out.add("{\"ph\":\"X\",\"cat\":\"block\",\"name\":"); arg(e.name); out.add(","); head(e.tid, e.ts)
                    out.add(",\"dur\":"); out.micro(e.dur)
                    out.add(",\"args\":{\"queue\":"); arg(e.name); out.add(",\"kind\":"); arg(e.arg1)
                    out.add(",\"source\":"); arg(e.arg2); out.add(e.unfinished ? ",\"unfinished\":true}}" : "}}")
                case .lock:
                    next()
                    out.add("{\"ph\":\"X\",\"cat\":\"lock\",\"name\":\"lock\","); head(e.tid, e.ts)
                    out.add(",\"dur\":"); out.micro(e.dur); out.add(",\"args\":{\"queue\":"); arg(e.arg1); out.add("}}")
                default:
                    next()
                    out.add("{\"ph\":\"X\",\"cat\":\"wait\",\"name\":"); arg(e.name); out.add(","); head(e.tid, e.ts)
                    out.add(",\"dur\":"); out.micro(e.dur); out.add(",\"args\":{\"kind\":"); arg(e.arg1); out.add("}}")
                }
            case .flowStart:
                next()
                out.add("{\"ph\":\"s\",\"cat\":\"flow\",\"name\":"); arg(e.name); out.add(",\"id\":"); out.add(e.id)
                out.add(","); head(e.tid, e.ts); out.add("}")
            case .instant:
                next()
                out.add("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"event\",\"name\":"); arg(e.name); out.add(","); head(e.tid, e.ts)
                out.add(",\"args\":{\"subject\":"); arg(e.arg1); out.add("}}")
            }
        }
        for (i, w) in workers.slices.enumerated() {
            if cut > 0 || late(i) {
                cut += workers.slices.count - i
                break
            }
            if w.flow != 0 {
                next()
                out.add("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"submit\",\"id\":"); out.add(w.flow)
                out.add(","); head(w.tid, w.ts); out.add("}")
            }
            next()
            out.add("{\"ph\":\"X\",\"cat\":\"block\",\"name\":"); out.add(Self.quote(w.name)); out.add(","); head(w.tid, w.ts)
            out.add(",\"dur\":"); out.micro(w.dur)
            out.add(",\"args\":{\"queue\":"); out.add(Self.quote(w.name)); out.add(",\"kind\":"); out.add(Self.quote(w.kind))
            out.add(",\"source\":"); out.add(Self.quote(w.source)); out.add("}}")
        }
        let dropped = dropped + workers.dropped + cut
        if dropped > 0 {
            next()
            out.add("{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"event\",\"name\":\"events dropped\",\"pid\":"); out.add(pid)
            out.add(",\"tid\":0,\"ts\":0,\"args\":{\"dropped\":"); out.add(dropped); out.add(",\"limit\":"); out.add(limit); out.add("}}")
        }
        out.add("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"recorder\":\"luadispatch\",\"events\":"); out.add(events.count + workers.slices.count - cut)
        out.add(",\"dropped\":"); out.add(dropped); out.add(",\"limit\":"); out.add(limit)
        if cut > 0 { out.add(",\"cut\":"); out.add(cut) }
        out.add("}}\n")
        return (out.bytes, cut)
    }

    /// `s` as a JSON string literal, quotes included.
    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let h = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}

/// A growing UTF-8 buffer with the few appends the trace needs.
struct JSONBytes {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func add(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func add(_ s: String) { bytes.append(contentsOf: s.utf8) }

    mutating func add(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    mutating func add(_ n: Int) {
        if n < 0 { bytes.append(UInt8(ascii: "-")) }
        add(UInt64(n.magnitude))
    }

    mutating func add(_ n: UInt64) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0, v = n
            repeat {
                digits[count] = UInt8(truncatingIfNeeded: v % 10) &+ UInt8(ascii: "0")
                v /= 10
                count += 1
            } while v > 0
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(digits[i]) }
        }
    }

    /// Nanoseconds as microseconds with three decimals.
    mutating func micro(_ ns: UInt64) {
        add(ns / 1000)
        let frac = ns % 1000
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(truncatingIfNeeded: frac / 100) &+ UInt8(ascii: "0"))
        bytes.append(UInt8(truncatingIfNeeded: frac / 10 % 10) &+ UInt8(ascii: "0"))
        bytes.append(UInt8(truncatingIfNeeded: frac % 10) &+ UInt8(ascii: "0"))
    }
}
