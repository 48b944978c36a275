#if canImport(Glibc)
import Glibc
#endif

/// Draws a `TraceModel` as one SVG: a lane per thread, slices in rows by nesting, blocks
/// coloured by queue, waits and lock waits shaded, arrows from submission to block, a time
/// axis and a legend. Every shape carries its times (`data-t0`, `data-t1`, in µs) so that the
/// page's script can zoom and pan by recomputing positions; the static picture needs no script.
struct TimelineSVG {
    let model: TraceModel
    var width = 1000.0
    static let labelWidth = 120.0
    static let rowHeight = 16.0
    static let axisHeight = 26.0
    static let palette = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
                          "#ff9da7", "#9c755f", "#e15759", "#8cd17d", "#499894", "#d37295"]

    func color(_ queue: String) -> String {
        let i = model.queues.firstIndex(of: queue) ?? 0
        return Self.palette[i % Self.palette.count]
    }

    /// Top of each lane and its height.
    var laneLayout: [(tid: Int, top: Double, height: Double)] {
        var rows: [Int: Int] = [:]
        for s in model.slices { rows[s.tid] = max(rows[s.tid] ?? 1, s.depth + 1) }
        var top = Self.axisHeight
        return model.lanes.map { tid in
            let h = Double(rows[tid] ?? 1) * Self.rowHeight + 8
            defer { top += h }
            return (tid, top, h)
        }
    }

    /// How much of the trace the picture draws: every slice and arrow (a small trace's page), or
    /// runs of slices too narrow to tell apart merged into one bar and the first arrows only (the
    /// static picture; a big trace's page, whose script draws the rest when zoomed in).
    enum Detail { case every, merged }

    func render(interactive: Bool, detail: Detail) -> String {
        let (t0, t1) = model.timeRange
        let plot = width - Self.labelWidth - 40  // room for the last tick's label
        let scale = plot / (t1 - t0)
        func x(_ t: Double) -> Double { Self.labelWidth + (t - t0) * scale }
        let lanes = laneLayout
        let laneTop = Dictionary(uniqueKeysWithValues: lanes.map { ($0.tid, $0.top) })
        let lanesBottom = (lanes.last.map { $0.top + $0.height } ?? Self.axisHeight)
        let legendRows = (model.queues.count + 3 + 2) / 3
        let height = lanesBottom + 16 + Double(legendRows) * 18 + (model.dropped > 0 ? 18 : 0)
        var o = ""
        o += "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"timeline\" width=\"\(f(width))\" height=\"\(f(height))\" "
        o += "viewBox=\"0 0 \(f(width)) \(f(height))\" font-family=\"sans-serif\" font-size=\"11\" "
        o += "data-t0=\"\(f(t0))\" data-t1=\"\(f(t1))\" data-left=\"\(f(Self.labelWidth))\" data-plot=\"\(f(plot))\">\n"
        o += """
            <defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6" orient="auto">\
            <path d="M0,0 L8,4 L0,8 z" fill="#333"/></marker>\
            <pattern id="hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
            <rect width="5" height="5" fill="#e8e8e8"/><line x1="0" y1="0" x2="0" y2="5" stroke="#999" stroke-width="2"/></pattern>\
            <clipPath id="plot"><rect x="\(f(Self.labelWidth))" y="0" width="\(f(plot + 10))" height="\(f(height))"/></clipPath></defs>
            <rect width="100%" height="100%" fill="#fff"/>

            """
        // Axis: ticks at a round step.
        o += "<g id=\"axis\" class=\"axis\">" + Self.ticks(t0: t0, t1: t1, x: x, plot: plot, bottom: lanesBottom) + "</g>\n"
        // Lanes.
        for (i, lane) in lanes.enumerated() {
            let name = model.threads[lane.tid] ?? "thread \(lane.tid)"
            o += "<g class=\"lane\" data-tid=\"\(lane.tid)\">"
            o += "<rect x=\"0\" y=\"\(f(lane.top))\" width=\"\(f(width))\" height=\"\(f(lane.height))\" fill=\"\(i % 2 == 0 ? "#f7f7f7" : "#fff")\"/>"
            o += "<text class=\"lane-name\" x=\"6\" y=\"\(f(lane.top + 15))\">\(esc(name))</text></g>\n"
        }
        o += "<g clip-path=\"url(#plot)\">\n"
        // A big trace's page shows this merged overview until zoomed in, then its script hides it
        // and draws the part in view from the page's packed data into the empty "detail" group.
        let overview = interactive && detail == .merged
        if overview { o += "<g id=\"overview\">\n" }
        // Slices: outer ones first so inner ones draw on top. Merging runs of slices too narrow
        // to see apart makes 200,000 iterations one bar, not 200,000 rects.
        let drawn = detail == .every ? model.slices.map { ($0, 1) } : Self.merged(model.slices, scale: scale)
        for (s, count) in drawn.sorted(by: { $0.0.depth < $1.0.depth }) {
            guard let top = laneTop[s.tid] else { continue }
            let y = top + 4 + Double(s.depth) * Self.rowHeight
            let w = max(s.dur * scale, 1)
            let thread = model.threads[s.tid] ?? ""
            let info = (count > 1 && s.kind == .block ? "\(count) blocks: " : "") + Self.info(s)
            let title = "\(info)\n\(thread), start \(ms(s.start - t0)), \(ms(s.dur))" + (count > 1 ? " in all" : "")
            let h = s.kind == .lock ? 6.0 : Self.rowHeight - 2
            o += "<rect class=\"\(s.kind.rawValue)\" x=\"\(f(x(s.start)))\" y=\"\(f(s.kind == .lock ? y + 4 : y))\" width=\"\(f(w))\" height=\"\(f(h))\" "
            o += "fill=\"\(fill(s))\"\(s.kind == .block ? " stroke=\"#0003\"" : " opacity=\"0.8\"") data-t0=\"\(f(s.start))\" data-t1=\"\(f(s.end))\""
            o += (count > 1 ? " data-count=\"\(count)\"" : "") + "><title>\(esc(title))</title></rect>"
            if s.kind == .block {
                var label = Self.label(s)
                if count > 1 { label = "\(count) × " + label }
                // A static picture cannot measure text: keep what fits at about 6 px a character.
                let fits = Int((w - 4) / 6)
                if !interactive && label.count > fits { label = fits >= 4 ? String(label.prefix(fits - 1)) + "…" : "" }
                o += "<text class=\"label\" x=\"\(f(x(s.start) + 2))\" y=\"\(f(y + 11))\" data-t0=\"\(f(s.start))\" data-t1=\"\(f(s.end))\""
                o += (w < Double(label.count) * 6 + 4 ? " visibility=\"hidden\"" : "") + ">\(esc(label))</text>"
            }
            o += "\n"
        }
        // Flows: from the submission to the start of the block it started.
        let blockRow = blockRows
        // A merged picture shows the first flows only: past a few hundred they are a grey wash.
        for fl in detail == .every ? model.flows[...] : model.flows.prefix(Self.flowLimit) {
            guard let (y0, y1) = flowYs(fl, laneTop: laneTop, blockRow: blockRow), let from = fl.from, let to = fl.to else { continue }
            o += "<path class=\"flow\" d=\"M\(f(x(from.ts))),\(f(y0)) L\(f(x(to.ts))),\(f(y1))\" stroke=\"#333\" stroke-width=\"1\" "
            o += "fill=\"none\" marker-end=\"url(#arrow)\" opacity=\"0.6\" data-t0=\"\(f(from.ts))\" data-t1=\"\(f(to.ts))\" "
            o += "data-y0=\"\(f(y0))\" data-y1=\"\(f(y1))\"><title>submitted at \(ms(from.ts - t0)), started \(ms(to.ts - from.ts)) later</title></path>\n"
        }
        if overview { o += "</g>\n<g id=\"detail\"></g>\n" }
        // Instants: a small triangle above the lane's first row.
        for i in model.instants {
            guard let top = laneTop[i.tid] else { continue }
            let cx = x(i.ts), y = top + 1
            o += "<path class=\"instant\" d=\"M\(f(cx - 4)),\(f(y)) L\(f(cx + 4)),\(f(y)) L\(f(cx)),\(f(y + 7)) z\" "
            o += "fill=\"\(i.name == "error" ? "#d62728" : "#222")\" data-t0=\"\(f(i.ts))\" data-y=\"\(f(y))\">"
            o += "<title>\(esc(i.name)) \(esc(i.subject)) at \(ms(i.ts - t0))</title></path>\n"
        }
        o += "</g>\n"
        // Legend.
        var items = model.queues.map { (color($0), $0, "block") }
        items += [("url(#hatch)", "blocking wait", "wait"), ("#d62728", "waiting for the interpreter", "lock"), ("#333", "submission → block", "flow")]
        o += "<g class=\"legend\">"
        for (n, item) in items.enumerated() {
            let lx = 10 + Double(n % 3) * (width - 20) / 3, ly = lanesBottom + 14 + Double(n / 3) * 18
            if item.2 == "flow" {
                o += "<path d=\"M\(f(lx)),\(f(ly + 5)) L\(f(lx + 14)),\(f(ly + 5))\" stroke=\"#333\" marker-end=\"url(#arrow)\"/>"
            } else {
                o += "<rect class=\"swatch\" x=\"\(f(lx))\" y=\"\(f(ly))\" width=\"14\" height=\"10\" fill=\"\(item.0)\"/>"
            }
            let text = item.1.count > 48 ? String(item.1.prefix(46)) + "…" : item.1
            o += "<text x=\"\(f(lx + 20))\" y=\"\(f(ly + 9))\">\(esc(text))</text>"
        }
        if model.dropped > 0 {
            o += "<text class=\"dropped\" x=\"10\" y=\"\(f(height - 6))\" fill=\"#d62728\">\(model.dropped) events were dropped (the recorder's limit): the trace is incomplete</text>"
        }
        o += "</g>\n</svg>\n"
        return o
    }

    /// The most arrows a merged picture draws (the page's detail view too).
    static let flowLimit = 400

    /// A slice's fill: its queue's colour for a block, hatched for a wait, red for a lock wait.
    func fill(_ s: TraceModel.Slice) -> String {
        switch s.kind {
        case .block: color(s.name)
        case .wait: "url(#hatch)"
        case .lock: "#d62728"
        }
    }

    /// The first line of a slice's tooltip.
    static func info(_ s: TraceModel.Slice) -> String {
        switch s.kind {
        case .block: "\(s.name) · \(s.args["kind"] ?? "") · \(s.args["source"] ?? "")"
        case .wait: "wait: \(s.name)" + (s.args["kind"].map { $0 == s.name ? "" : " (\($0))" } ?? "")
        case .lock: "waiting for the interpreter" + (s.args["queue"].map { " (block of \($0))" } ?? "")
        }
    }

    /// A block's label: its kind and the function's line (the tooltip has the whole source).
    static func label(_ s: TraceModel.Slice) -> String {
        let line = s.args["source"].flatMap { $0.split(separator: ":").last.map(String.init) } ?? ""
        return s.args["kind"] == "main chunk" || Int(line) == nil ? (s.args["kind"] ?? "") : "\(s.args["kind"] ?? "") :\(line)"
    }

    /// The row of the block starting at each (thread, time in ns): where an arrow ends.
    var blockRows: [Key: Int] {
        var rows: [Key: Int] = [:]
        for s in model.slices where s.kind == .block {
            let k = Key(tid: s.tid, ts: Int64((s.start * 1000).rounded()))
            rows[k] = max(rows[k] ?? 0, s.depth)
        }
        return rows
    }

    /// Where an arrow leaves (the submitting lane's first row) and arrives (the row of the block
    /// it started), as y coordinates; nil for an arrow between lanes not drawn.
    func flowYs(_ fl: TraceModel.Flow, laneTop: [Int: Double], blockRow: [Key: Int]) -> (Double, Double)? {
        guard let from = fl.from, let to = fl.to, let fromTop = laneTop[from.tid], let toTop = laneTop[to.tid] else { return nil }
        let row = blockRow[Key(tid: to.tid, ts: Int64((to.ts * 1000).rounded()))] ?? 0
        return (fromTop + 4 + Self.rowHeight / 2, toTop + 4 + Double(row) * Self.rowHeight + Self.rowHeight / 2)
    }

    /// Runs of same-row, same-queue slices each under a pixel wide and under a pixel apart,
    /// as one slice and how many it stands for.
    static func merged(_ slices: [TraceModel.Slice], scale: Double) -> [(TraceModel.Slice, Int)] {
        var out: [(TraceModel.Slice, Int)] = []
        for s in inRows(slices) {
            if let (last, n) = out.last, sameRow(last, s), s.dur * scale < 1, (s.start - last.end) * scale < 1,
               n > 1 || last.dur * scale < 1 {
                let end = max(last.end, s.end)
                out[out.count - 1] = (TraceModel.Slice(kind: last.kind, tid: last.tid, start: last.start, dur: end - last.start,
                                                       name: last.name, args: last.args, depth: last.depth), n + 1)
            } else {
                out.append((s, 1))
            }
        }
        return out
    }

    /// Slices grouped by what merges: thread, row, kind and name (lock waits interleaved with
    /// blocks merge among themselves); by start within a group.
    static func inRows(_ slices: [TraceModel.Slice]) -> [TraceModel.Slice] {
        slices.sorted {
            if ($0.tid, $0.depth, $0.kind.rawValue, $0.name) != ($1.tid, $1.depth, $1.kind.rawValue, $1.name) {
                return ($0.tid, $0.depth, $0.kind.rawValue, $0.name) < ($1.tid, $1.depth, $1.kind.rawValue, $1.name)
            }
            return $0.start < $1.start
        }
    }

    static func sameRow(_ a: TraceModel.Slice, _ b: TraceModel.Slice) -> Bool {
        a.tid == b.tid && a.depth == b.depth && a.kind == b.kind && a.name == b.name
    }

    struct Key: Hashable {
        let tid: Int
        let ts: Int64
    }

    /// Axis ticks and grid lines between `t0` and `t1` (µs); also built by the page's script.
    static func ticks(t0: Double, t1: Double, x: (Double) -> Double, plot: Double, bottom: Double) -> String {
        let span = t1 - t0
        let raw = span / max(plot / 90, 1)
        let mag = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * mag }.first { $0 >= raw } ?? 10 * mag
        var o = ""
        var t = t0  // ticks count from the trace's start
        while t <= t1 {
            let px = x(t)
            o += "<line x1=\"\(f(px))\" y1=\"\(f(axisHeight - 6))\" x2=\"\(f(px))\" y2=\"\(f(bottom))\" stroke=\"#ddd\"/>"
            o += "<text x=\"\(f(px + 2))\" y=\"\(f(axisHeight - 10))\" fill=\"#555\">\(esc(ms(t - t0)))</text>"
            t += step
        }
        return o
    }
}

/// A coordinate with at most 2 decimals.
func f(_ v: Double) -> String {
    let r = (v * 100).rounded() / 100
    return r == r.rounded() ? String(Int(r)) : String(r)
}

/// A duration in µs as the page shows it.
func ms(_ us: Double) -> String {
    if abs(us) >= 1_000_000 { return fixed(us / 1_000_000, 3) + " s" }
    if abs(us) >= 1000 { return fixed(us / 1000, 2) + " ms" }
    return fixed(us, 0) + " µs"
}

/// `v` with `digits` decimals (what `%.Nf` prints).
func fixed(_ v: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let n = Int((abs(v) * scale).rounded())
    var s = String(n / Int(scale))
    if digits > 0 {
        let frac = String(n % Int(scale))
        s += "." + String(repeating: "0", count: digits - frac.count) + frac
    }
    return (v < 0 && n != 0 ? "-" : "") + s
}

func esc(_ s: String) -> String {
    var o = ""
    for c in s {
        switch c {
        case "&": o += "&amp;"
        case "<": o += "&lt;"
        case ">": o += "&gt;"
        case "\"": o += "&quot;"
        default: o.append(c)
        }
    }
    return o
}
