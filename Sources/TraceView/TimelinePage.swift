/// The self-contained HTML page: the timeline's SVG, a summary, and a small inline script for
/// zoom (wheel, + and -), pan (drag, arrow keys), reset (double click, 0) and hover details.
/// Nothing is loaded from anywhere: the Content-Security-Policy forbids it. A big trace's page
/// draws a merged overview and carries the detail packed (`TimelineDetail`).
enum TimelinePage {
    static func render(_ model: TraceModel, title: String) -> String {
        let drawing = TimelineSVG(model: model, width: 1400)
        let packed = model.slices.count + model.flows.count > TimelineDetail.packedAbove
        let svg = drawing.render(interactive: true, detail: packed ? .merged : .every)
        let (t0, t1) = model.timeRange
        let blocks = model.slices.filter { $0.kind == .block }.count
        let waits = model.slices.filter { $0.kind == .wait }.count
        var summary = "\(model.threads.count) threads · \(blocks) blocks · \(model.flows.count) submissions · "
        summary += "\(waits) waits · \(ms(t1 - t0))"
        let dropped = model.dropped > 0
            ? "<p class=\"dropped\">\(model.dropped) events were dropped (the recorder's limit): the trace is incomplete.</p>" : ""
        var note = "", detail = ""
        if packed {
            note = "\n<p id=\"note\" class=\"help\">\(blocks) blocks: runs too narrow to tell apart are one bar (hover it for how many "
            note += "blocks it holds); zoom in to see each block. "
            note += model.flows.count > TimelineSVG.flowLimit ? "The first \(TimelineSVG.flowLimit) of \(model.flows.count) arrows.</p>" : "</p>"
            detail = "<script type=\"application/json\" id=\"trace-data\">\(TimelineDetail.json(drawing))</script>\n"
            detail += "<script>\n\(TimelineDetail.script)\n</script>\n"
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
            <title>\(esc(title)) — timeline</title>
            <style>
            body { font: 13px sans-serif; margin: 12px; color: #222; }
            h1 { font-size: 16px; margin: 0 0 4px; }
            .help { color: #666; margin: 0 0 8px; }
            .dropped { color: #d62728; }
            #wrap { overflow-x: auto; border: 1px solid #ddd; }
            #timeline { cursor: grab; user-select: none; display: block; }
            #tip { position: fixed; pointer-events: none; background: #222; color: #fff; padding: 4px 6px;
                   border-radius: 3px; white-space: pre; display: none; font-size: 12px; }
            </style></head>
            <body>
            <h1>\(esc(title))</h1>
            <p id="summary">\(esc(summary))</p>\(dropped)
            <p class="help">Wheel or + / − to zoom, drag or ← → to pan, double click or 0 to reset; hover a block for its details.</p>\(note)
            <div id="wrap">
            \(svg)</div>
            <div id="tip"></div>
            \(detail)<script>
            \(script)
            </script>
            </body></html>

            """
    }

    static let script = """
        (function () {
          "use strict";
          var svg = document.getElementById("timeline");
          var T0 = +svg.dataset.t0, T1 = +svg.dataset.t1, L = +svg.dataset.left, P = +svg.dataset.plot;
          var v0 = T0, v1 = T1;
          // A big trace's page draws the part in view from its packed data (TimelineDetail); the
          // merged overview at full zoom-out, unless the address asked for #view=START,END (µs
          // from the trace's start), which draws even the whole trace from the data.
          var detail = window.timelineDetail ? window.timelineDetail() : null, pinned = false;
          var view = /^#view=([0-9.]+),([0-9.]+)$/.exec(location.hash);
          if (view && +view[2] > +view[1]) { v0 = T0 + +view[1]; v1 = T0 + +view[2]; pinned = true; }
          var axis = document.getElementById("axis");
          var axisBottom = +(axis.querySelector("line") || { getAttribute: function () { return 0; } }).getAttribute("y2");
          var shapes = Array.prototype.filter.call(svg.querySelectorAll("[data-t0]"), function (e) { return e !== svg; });
          var NS = "http://www.w3.org/2000/svg";
          function X(t) { return L + (t - v0) * P / (v1 - v0); }
          function fmt(us) {
            var a = Math.abs(us);
            if (a >= 1e6) return (us / 1e6).toFixed(3) + " s";
            if (a >= 1e3) return (us / 1e3).toFixed(2) + " ms";
            return us.toFixed(0) + " \\u00b5s";
          }
          function drawAxis() {
            while (axis.firstChild) axis.removeChild(axis.firstChild);
            var raw = (v1 - v0) / Math.max(P / 90, 1), mag = Math.pow(10, Math.floor(Math.log10(raw)));
            var step = [1, 2, 5, 10].map(function (m) { return m * mag; }).filter(function (s) { return s >= raw; })[0];
            for (var t = T0 + Math.ceil((v0 - T0) / step) * step; t <= v1; t += step) {
              var x = X(t), line = document.createElementNS(NS, "line"), text = document.createElementNS(NS, "text");
              line.setAttribute("x1", x); line.setAttribute("x2", x); line.setAttribute("y1", 20);
              line.setAttribute("y2", axisBottom); line.setAttribute("stroke", "#ddd");
              text.setAttribute("x", x + 2); text.setAttribute("y", 16); text.setAttribute("fill", "#555");
              text.textContent = fmt(t - T0);
              axis.appendChild(line); axis.appendChild(text);
            }
          }
          function draw() {
            shapes.forEach(function (e) {
              var a = +e.dataset.t0, c = e.classList;
              if (c.contains("flow")) {
                e.setAttribute("d", "M" + X(a) + "," + e.dataset.y0 + " L" + X(+e.dataset.t1) + "," + e.dataset.y1);
              } else if (c.contains("instant")) {
                var x = X(a), y = +e.dataset.y;
                e.setAttribute("d", "M" + (x - 4) + "," + y + " L" + (x + 4) + "," + y + " L" + x + "," + (y + 7) + " z");
              } else if (e.tagName === "text") {
                var x0 = Math.max(X(a), L), x1 = X(+e.dataset.t1);
                e.setAttribute("x", x0 + 2);
                e.setAttribute("visibility", x1 - x0 > e.textContent.length * 6 + 4 ? "visible" : "hidden");
              } else {
                e.setAttribute("x", X(a));
                e.setAttribute("width", Math.max(X(+e.dataset.t1) - X(a), 1));
              }
            });
            if (detail) detail(v0, v1, X, fmt, v0 === T0 && v1 === T1 && !pinned);
            drawAxis();
          }
          function reset() { pinned = false; v0 = T0; v1 = T1; draw(); }
          function zoom(k, t) {
            var min = (T1 - T0) / 1e5;
            pinned = false;
            if (k < 1 && (v1 - v0) * k < min) return;
            v0 = t - (t - v0) * k; v1 = t + (v1 - t) * k;
            if (v1 - v0 > T1 - T0) { v0 = T0; v1 = T1; }
            draw();
          }
          function pan(dt) { pinned = false; v0 += dt; v1 += dt; draw(); }
          function timeAt(ev) {
            var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) * svg.viewBox.baseVal.width / r.width;
            return v0 + (px - L) * (v1 - v0) / P;
          }
          svg.addEventListener("wheel", function (ev) { ev.preventDefault(); zoom(ev.deltaY < 0 ? 0.8 : 1.25, timeAt(ev)); }, { passive: false });
          var drag = null;
          svg.addEventListener("mousedown", function (ev) { drag = ev.clientX; svg.style.cursor = "grabbing"; });
          window.addEventListener("mouseup", function () { drag = null; svg.style.cursor = ""; });
          window.addEventListener("mousemove", function (ev) {
            if (drag === null) return;
            var r = svg.getBoundingClientRect(), dx = (ev.clientX - drag) * svg.viewBox.baseVal.width / r.width;
            drag = ev.clientX;
            pan(-dx * (v1 - v0) / P);
          });
          svg.addEventListener("dblclick", reset);
          window.addEventListener("keydown", function (ev) {
            var mid = (v0 + v1) / 2, w = v1 - v0;
            if (ev.key === "+" || ev.key === "=") zoom(0.8, mid);
            else if (ev.key === "-") zoom(1.25, mid);
            else if (ev.key === "0") reset();
            else if (ev.key === "ArrowLeft") pan(-w / 10);
            else if (ev.key === "ArrowRight") pan(w / 10);
          });
          var tip = document.getElementById("tip");
          svg.addEventListener("mousemove", function (ev) {
            var e = ev.target, title = e.querySelector && e.querySelector("title");
            if (!title || drag !== null) { tip.style.display = "none"; return; }
            tip.textContent = title.textContent;
            tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
            tip.style.display = "block";
          });
          svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
          draw();
          document.body.setAttribute("data-drawn", shapes.length);
          document.body.setAttribute("data-resources", performance.getEntriesByType("resource").length);
        })();
        """
}
