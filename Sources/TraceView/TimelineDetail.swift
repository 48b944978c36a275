/// A big trace's page: the SVG holds the merged overview only (`TimelineSVG.Detail.merged`), and
/// every slice and arrow travels packed in the page, for its script to draw the part in view
/// when zoomed in. One SVG element per block would make 200,000 blocks a 117 MB page that no
/// browser opens comfortably; packed, they take about 10 bytes each.
///
/// The packing (`json`), and the script that unpacks and draws it (`script`), side by side.
/// Times are integer nanoseconds from `t0`; each start is the delta from the previous one in its
/// row, so a run of short blocks costs a few digits apiece.
///
///     { "t0": µs, "rows": [row...], "infos": [[tooltip, label]...], "ys": [y...],
///       "flows": { "s": [start Δ...], "e": [end Δ...], "a": [ys index...], "b": [ys index...] } }
///     row: { "kind": "block" | "wait" | "lock", "thread": name, "y": top, "h": height, "fill": colour,
///            "t": [start Δ...], "d": [duration...], "i": [infos index...] }
///
/// A row holds the slices of one thread, depth, kind and name (queue): the groups
/// `TimelineSVG.merged` merges within, so the script, merging by the same rule at the scale in
/// view, draws at full zoom-out the same bars as the overview.
enum TimelineDetail {
    /// Above this many slices and arrows the page carries them packed, not as SVG elements.
    static let packedAbove = 5000

    static func json(_ svg: TimelineSVG) -> String {
        let model = svg.model
        let t0 = model.timeRange.0
        func ns(_ t: Double) -> Int { Int(((t - t0) * 1000).rounded()) }
        let lanes = svg.laneLayout
        let laneTop = Dictionary(uniqueKeysWithValues: lanes.map { ($0.tid, $0.top) })
        // Slices share a few tooltips: each is written once, found by what it is made of.
        var infos: [[String?]: Int] = [:], infoList: [String] = []
        func info(_ s: TraceModel.Slice) -> Int {
            let key = [s.kind.rawValue, s.name, s.args["kind"], s.args["source"], s.args["queue"]]
            if let i = infos[key] { return i }
            infos[key] = infoList.count
            infoList.append("[" + jsonString(TimelineSVG.info(s)) + "," + jsonString(s.kind == .block ? TimelineSVG.label(s) : "") + "]")
            return infoList.count - 1
        }

        var o = "{\"t0\":\(t0),\"rows\":[\n"
        let sorted = TimelineSVG.inRows(model.slices)
        var i = 0
        while i < sorted.count {
            let s = sorted[i]
            var j = i
            while j < sorted.count, TimelineSVG.sameRow(sorted[j], s) { j += 1 }
            defer { i = j }
            guard let top = laneTop[s.tid] else { continue }
            let y = top + 4 + Double(s.depth) * TimelineSVG.rowHeight
            var starts = Column(), durs = Column(), refs = Column(), last = 0
            for r in sorted[i..<j] {
                let start = ns(r.start)
                starts.append(start - last)
                durs.append(Int((r.dur * 1000).rounded()))
                refs.append(info(r))
                last = start
            }
            o += i == 0 ? "" : ",\n"
            o += "{\"kind\":\"\(s.kind.rawValue)\",\"thread\":\(jsonString(model.threads[s.tid] ?? "")),"
            o += "\"y\":\(f(s.kind == .lock ? y + 4 : y)),\"h\":\(f(s.kind == .lock ? 6 : TimelineSVG.rowHeight - 2)),"
            o += "\"fill\":\(jsonString(svg.fill(s))),\"t\":[\(starts)],\"d\":[\(durs)],\"i\":[\(refs)]}"
        }
        o += "],\n\"infos\":[" + infoList.joined(separator: ",") + "],\n"

        // Arrows in order of submission; each end's time as the delta from the previous arrow's.
        let blockRow = svg.blockRows
        var ys: [Double: Int] = [:], yList: [Double] = []
        func yIndex(_ y: Double) -> Int {
            if let k = ys[y] { return k }
            ys[y] = yList.count
            yList.append(y)
            return yList.count - 1
        }
        var starts = Column(), ends = Column(), a = Column(), b = Column(), lastStart = 0, lastEnd = 0
        for fl in model.flows.sorted(by: { $0.from!.ts < $1.from!.ts }) {
            guard let (y0, y1) = svg.flowYs(fl, laneTop: laneTop, blockRow: blockRow), let from = fl.from, let to = fl.to else { continue }
            let s = ns(from.ts), e = ns(to.ts)
            starts.append(s - lastStart)
            ends.append(e - lastEnd)
            a.append(yIndex(y0))
            b.append(yIndex(y1))
            (lastStart, lastEnd) = (s, e)
        }
        o += "\"ys\":[" + yList.map(f).joined(separator: ",") + "],\n"
        o += "\"flows\":{\"s\":[\(starts)],\n\"e\":[\(ends)],\n\"a\":[\(a)],\n\"b\":[\(b)]}}"
        return o
    }

    /// Defines `timelineDetail()`, which the page's script calls once: it unpacks the data and
    /// returns the function that draws the window `v0`...`v1` (µs), or shows the overview when
    /// `full`. Each row is drawn from the first slice that ends in view (a binary search on the
    /// running maximum of ends) to the last that starts in view, merging by the rule of
    /// `TimelineSVG.merged`, so at most a few elements per pixel are drawn however many blocks
    /// are in view. Arrows that start or end in view are drawn, up to `TimelineSVG.flowLimit`;
    /// arrows that only cross it are not (zoomed in on a long queue, most would).
    static let script = """
        window.timelineDetail = function () {
          "use strict";
          var data = JSON.parse(document.getElementById("trace-data").textContent);
          var NS = "http://www.w3.org/2000/svg", T0 = data.t0, LIMIT = \(TimelineSVG.flowLimit);
          var overview = document.getElementById("overview"), layer = document.getElementById("detail");
          var note = document.getElementById("note"), overviewNote = note.textContent;
          function unpack(deltas) {
            var out = new Float64Array(deltas.length), acc = 0;
            for (var i = 0; i < deltas.length; i++) { acc += deltas[i]; out[i] = T0 + acc / 1000; }
            return out;
          }
          data.rows.forEach(function (r) {
            var n = r.t.length, hi = -Infinity;
            r.s = unpack(r.t); r.e = new Float64Array(n); r.m = new Float64Array(n);
            for (var i = 0; i < n; i++) { r.e[i] = r.s[i] + r.d[i] / 1000; hi = Math.max(hi, r.e[i]); r.m[i] = hi; }
          });
          var fs = unpack(data.flows.s), fe = unpack(data.flows.e);
          function search(a, v, after) {  // the first index whose value is >= v (> v when after)
            var lo = 0, hi = a.length;
            while (lo < hi) { var mid = (lo + hi) >> 1; if (a[mid] < v || (after && a[mid] === v)) lo = mid + 1; else hi = mid; }
            return lo;
          }
          function el(tag, attrs, text) {
            var e = document.createElementNS(NS, tag);
            for (var k in attrs) e.setAttribute(k, attrs[k]);
            if (tag === "text") e.textContent = text;
            else { var t = document.createElementNS(NS, "title"); t.textContent = text; e.appendChild(t); }
            return e;
          }
          return function (v0, v1, X, fmt, full) {
            overview.setAttribute("display", full ? "inline" : "none");
            while (layer.firstChild) layer.removeChild(layer.firstChild);
            if (full) { note.textContent = overviewNote; return; }
            var k = (X(v1) - X(v0)) / (v1 - v0), out = document.createDocumentFragment(), blocks = 0, bars = 0;
            function bar(r, i, a, b, n) {
              var info = data.infos[r.i[i]], x = X(a), w = Math.max((b - a) * k, 1), block = r.kind === "block";
              var attrs = { "class": r.kind, x: x, y: r.y, width: w, height: r.h, fill: r.fill, "data-t0": a, "data-t1": b };
              if (block) attrs.stroke = "#0003"; else attrs.opacity = "0.8";
              if (n > 1) attrs["data-count"] = n;
              out.appendChild(el("rect", attrs, (n > 1 && block ? n + " blocks: " : "") + info[0] + "\\n" + r.thread +
                ", start " + fmt(a - T0) + ", " + fmt(b - a) + (n > 1 ? " in all" : "")));
              var label = (n > 1 ? n + " \\u00d7 " : "") + info[1];
              if (block && w >= label.length * 6 + 4) out.appendChild(el("text", { "class": "label", x: Math.max(x, X(v0)) + 2, y: r.y + 11 }, label));
              if (block) { blocks += n; bars++; }
            }
            data.rows.forEach(function (r) {
              var end = search(r.s, v1, true), first = 0, a = 0, b = 0, n = 0;
              for (var i = search(r.m, v0, false); i < end; i++) {
                if (r.e[i] < v0) continue;
                if (n > 0 && (r.e[i] - r.s[i]) * k < 1 && (r.s[i] - b) * k < 1 && (n > 1 || (b - a) * k < 1)) {
                  b = Math.max(b, r.e[i]); n++;
                  continue;
                }
                if (n > 0) bar(r, first, a, b, n);
                first = i; a = r.s[i]; b = r.e[i]; n = 1;
              }
              if (n > 0) bar(r, first, a, b, n);
            });
            var shown = 0, inView = 0;
            for (var j = 0, last = search(fs, v1, true); j < last; j++) {
              var ends = fs[j] >= v0 || (fe[j] >= v0 && fe[j] <= v1);  // arrows crossing the view are not drawn
              if (!ends || inView++ >= LIMIT) continue;
              shown++;
              out.appendChild(el("path", { "class": "flow", d: "M" + X(fs[j]) + "," + data.ys[data.flows.a[j]] + " L" + X(fe[j]) + "," +
                data.ys[data.flows.b[j]], stroke: "#333", "stroke-width": 1, fill: "none", "marker-end": "url(#arrow)", opacity: 0.6 },
                "submitted at " + fmt(fs[j] - T0) + ", started " + fmt(fe[j] - fs[j]) + " later"));
            }
            layer.appendChild(out);
            note.textContent = "In view: " + blocks + " blocks as " + bars + " bars (hover a merged bar for how many blocks it holds); " +
              (shown < inView ? "the first " + shown + " of " + inView + " arrows from or to them: zoom in for the others." : inView + " arrows.");
          };
        };
        """

    /// Integers separated by commas, written as bytes: these columns are most of a big page.
    struct Column: CustomStringConvertible {
        var bytes: [UInt8] = []

        mutating func append(_ n: Int) {
            if !bytes.isEmpty { bytes.append(UInt8(ascii: ",")) }
            if n < 0 { bytes.append(UInt8(ascii: "-")) }
            let m = n.magnitude
            var div: UInt = 1
            while div <= m / 10 { div *= 10 }
            while div > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(m / div % 10))
                div /= 10
            }
        }

        var description: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// A JSON string that is safe inside `<script>`: `<` escaped, so no `</script>` ends it early.
    static func jsonString(_ s: String) -> String {
        var o = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": o += "\\\""
            case "\\": o += "\\\\"
            case "<": o += "\\u003c"
            case "\n": o += "\\n"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                o += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: o.unicodeScalars.append(u)
            }
        }
        return o + "\""
    }
}
