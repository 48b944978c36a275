/// A trace as the view draws it: threads, slices (blocks, waits, lock waits), flows, instants.
/// Read from Chrome trace event JSON as LuaDispatch writes it; events of other shapes are
/// skipped, so traces from elsewhere draw what they share with it.
struct TraceModel {
    struct Slice {
        enum Kind: String { case block, wait, lock }
        let kind: Kind
        let tid: Int
        let start: Double  // µs
        let dur: Double
        let name: String
        let args: [String: String]
        var depth = 0
        var end: Double { start + dur }
    }

    struct Flow {
        let id: Int
        var from: (tid: Int, ts: Double)?
        var to: (tid: Int, ts: Double)?
    }

    struct Instant {
        let tid: Int
        let ts: Double
        let name: String
        let subject: String
    }

    var threads: [Int: String] = [:]
    var slices: [Slice] = []
    var flows: [Flow] = []
    var instants: [Instant] = []
    var dropped = 0
    /// Queue labels in order of first appearance (colours are given in this order).
    var queues: [String] = []

    enum ReadError: Error, CustomStringConvertible {
        case notATrace(String)
        var description: String {
            switch self { case .notATrace(let why): "not a trace: \(why)" }
        }
    }

    init(json: [UInt8]) throws {
        let root: JSON
        do { root = try JSON.parse(json) } catch {
            throw ReadError.notATrace(error.description)
        }
        let events: [JSON]
        if root.object != nil {
            guard let list = root["traceEvents"]?.array else { throw ReadError.notATrace("no \"traceEvents\" array") }
            events = list
            dropped = root["otherData"]?["dropped"]?.int ?? 0
        } else if let list = root.array {
            events = list  // the JSON array form of the format
        } else {
            throw ReadError.notATrace("neither an object nor an array")
        }
        var flowIndex: [Int: Int] = [:]
        for e in events {
            guard let ph = e["ph"]?.string else { continue }
            let tid = e["tid"]?.int ?? 0
            let ts = e["ts"]?.double
            let name = e["name"]?.string ?? ""
            let args = (e["args"]?.object ?? [:]).compactMapValues { v -> String? in
                switch v {
                case .string(let s): s
                case .number(let d): d == d.rounded() && abs(d) < 9e15 ? String(Int(d)) : String(d)
                case .bool(let b): String(b)
                default: nil
                }
            }
            switch ph {
            case "M" where name == "thread_name":
                threads[tid] = args["name"] ?? "thread \(tid)"
            case "X":
                guard let ts, let dur = e["dur"]?.double else { continue }
                let kind: Slice.Kind = switch e["cat"]?.string {
                case "wait": .wait
                case "lock": .lock
                default: .block
                }
                if kind == .block, !queues.contains(name) { queues.append(name) }
                slices.append(Slice(kind: kind, tid: tid, start: ts, dur: dur, name: name, args: args))
            case "s", "f":
                guard let ts, let id = e["id"]?.int else { continue }
                let i = flowIndex[id] ?? {
                    flows.append(Flow(id: id))
                    flowIndex[id] = flows.count - 1
                    return flows.count - 1
                }()
                if ph == "s" { flows[i].from = (tid, ts) } else { flows[i].to = (tid, ts) }
            case "i", "I":
                guard let ts, tid != 0 else { continue }
                instants.append(Instant(tid: tid, ts: ts, name: name, subject: args["subject"] ?? ""))
            default:
                continue
            }
        }
        for s in slices where threads[s.tid] == nil { threads[s.tid] = "thread \(s.tid)" }
        flows.removeAll { $0.from == nil || $0.to == nil }
        // Colours in order of first start (the file is in order of ends).
        var first: [String: Double] = [:]
        for s in slices where s.kind == .block { first[s.name] = min(first[s.name] ?? .infinity, s.start) }
        queues.sort { first[$0, default: 0] < first[$1, default: 0] }
        assignDepths()
    }

    /// Slices on one thread nest: each gets the depth of its row (0: outermost).
    private mutating func assignDepths() {
        let order = slices.indices.sorted {
            let a = slices[$0], b = slices[$1]
            if a.tid != b.tid { return a.tid < b.tid }
            if a.start != b.start { return a.start < b.start }
            return a.dur > b.dur
        }
        var open: [Double] = []
        var tid = Int.min
        for i in order {
            if slices[i].tid != tid {
                tid = slices[i].tid
                open = []
            }
            // Lock waits end where their block starts: allow the rounding of 3 decimals.
            while let last = open.last, last <= slices[i].start + 0.0005 { open.removeLast() }
            slices[i].depth = open.count
            open.append(slices[i].end)
        }
    }

    /// Thread ids in lane order: the main thread first, then by number.
    var lanes: [Int] { threads.keys.sorted() }

    var timeRange: (Double, Double) {
        var lo = Double.infinity, hi = -Double.infinity
        for s in slices { lo = min(lo, s.start); hi = max(hi, s.end) }
        for f in flows { lo = min(lo, f.from!.ts); hi = max(hi, f.to!.ts) }
        for i in instants { lo = min(lo, i.ts); hi = max(hi, i.ts) }
        if lo > hi { return (0, 1) }
        return (lo, hi > lo ? hi : lo + 1)
    }

    /// The slice on `tid` starting at `ts` (a flow's end), innermost first.
    func depth(tid: Int, at ts: Double) -> Int {
        var best = 0
        for s in slices where s.tid == tid && s.kind == .block && abs(s.start - ts) < 0.0005 { best = max(best, s.depth) }
        return best
    }
}
