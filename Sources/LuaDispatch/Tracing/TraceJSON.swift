#if canImport(Glibc)
import Glibc
#endif

/// Chrome trace event JSON (`{"traceEvents": [...]}`, times in microseconds), the format that
/// Perfetto and chrome://tracing open. See docs/tracing.md for the shape.
extension Tracer {
    func json(processName: String = "luadispatch") -> String {
        var out = "{\"traceEvents\":[\n"
        let pid = Int(getpid())
        var first = true
        func add(_ s: String) {
            if !first { out += ",\n" }
            first = false
            out += s
        }
        add("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":\(pid),\"tid\":0,\"args\":{\"name\":\(Self.quote(processName))}}")
        var tids = Set<UInt16>()
        for e in events { tids.insert(e.tid) }
        for tid in tids.sorted() {
            let name = tid == 1 ? "main thread" : "worker \(tid)"
            add("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":\(pid),\"tid\":\(tid),\"args\":{\"name\":\"\(name)\"}}")
            add("{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":\(pid),\"tid\":\(tid),\"args\":{\"sort_index\":\(tid)}}")
        }
        for e in events {
            let head = "\"pid\":\(pid),\"tid\":\(e.tid),\"ts\":\(Self.micro(e.ts))"
            let name = Self.quote(strings[Int(e.name)])
            switch e.phase {
            case .complete:
                switch e.category {
                case .block:
                    if e.id != 0 {  // the flow from the block's submission ends where it starts
                        add("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"submit\",\"id\":\(e.id),\(head)}")
                    }
                    add("{\"ph\":\"X\",\"cat\":\"block\",\"name\":\(name),\(head),\"dur\":\(Self.micro(e.dur)),"
                        + "\"args\":{\"queue\":\(name),\"kind\":\(arg(e.arg1)),\"source\":\(arg(e.arg2))"
                        + (e.unfinished ? ",\"unfinished\":true}}" : "}}"))
                case .lock:
                    add("{\"ph\":\"X\",\"cat\":\"lock\",\"name\":\"lock\",\(head),\"dur\":\(Self.micro(e.dur)),"
                        + "\"args\":{\"queue\":\(arg(e.arg1))}}")
                default:
                    add("{\"ph\":\"X\",\"cat\":\"wait\",\"name\":\(name),\(head),\"dur\":\(Self.micro(e.dur)),"
                        + "\"args\":{\"kind\":\(arg(e.arg1))}}")
                }
            case .flowStart:
                add("{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\(name),\"id\":\(e.id),\(head)}")
            case .instant:
                add("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"event\",\"name\":\(name),\(head),\"args\":{\"subject\":\(arg(e.arg1))}}")
            }
        }
        if dropped > 0 {
            add("{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"event\",\"name\":\"events dropped\",\"pid\":\(pid),\"tid\":0,"
                + "\"ts\":0,\"args\":{\"dropped\":\(dropped),\"limit\":\(limit)}}")
        }
        out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"recorder\":\"luadispatch\",\"events\":\(events.count),"
            + "\"dropped\":\(dropped),\"limit\":\(limit)}}\n"
        return out
    }

    private func arg(_ i: Int32) -> String { i < 0 ? "null" : Self.quote(strings[Int(i)]) }

    /// Microseconds with nanosecond digits.
    static func micro(_ ns: UInt64) -> String {
        let frac = ns % 1000
        let f = String(frac)
        return "\(ns / 1000)." + String(repeating: "0", count: 3 - f.count) + f
    }

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
