#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// `trace view TRACE.json [-o FILE] [--svg]`: turns a trace into a self-contained HTML page
/// (or, with `--svg`, a static SVG picture). The one entry point the CLI calls. No Foundation:
/// the CLI does not load it.
public enum TraceView {
    public static let usage = "usage: luadispatch trace view TRACE.json [-o FILE.html] [--svg]"

    /// Runs `trace` with its arguments (after the word `trace`); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        var args = arguments[...]
        guard args.popFirst() == "view" else { return fail(usage) }
        var input: String?, output: String?, svg = false
        while let a = args.popFirst() {
            switch a {
            case "-o", "--output":
                guard let o = args.popFirst() else { return fail("option '-o' needs a file name\n\(usage)") }
                output = o
            case "--svg": svg = true
            case "-h", "--help":
                print(usage)
                return 0
            default:
                guard input == nil, !a.hasPrefix("-") || a == "-" else { return fail("unexpected argument '\(a)'\n\(usage)") }
                input = a
            }
        }
        guard let input else { return fail(usage) }
        guard let data = read(input == "-" ? nil : input) else {
            return fail("cannot read '\(input)': \(String(cString: strerror(errno)))")
        }
        let text: String
        do {
            text = try render(data, title: String(input.split(separator: "/").last ?? Substring(input)), svg: svg)
        } catch {
            return fail("'\(input)': \(error)")
        }
        let out = output ?? (stem(input) + (svg ? ".svg" : ".html"))
        guard write(text, to: out) else { return fail("cannot write '\(out)': \(String(cString: strerror(errno)))") }
        return 0
    }

    /// The page (or the static SVG) for the trace in `json`.
    public static func render(_ json: [UInt8], title: String, svg: Bool = false) throws -> String {
        let model = try TraceModel(json: json)
        return svg ? TimelineSVG(model: model).render(interactive: false, detail: .merged) : TimelinePage.render(model, title: title)
    }

    /// `path` without its extension (`t.json` -> `t`).
    static func stem(_ path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return path }
        return String(path[..<dot])
    }

    /// The whole file (standard input when nil).
    static func read(_ path: String?) -> [UInt8]? {
        guard let f = path.map({ fopen($0, "rb") }) ?? stdin else { return nil }
        defer { if path != nil { fclose(f) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            bytes.append(contentsOf: chunk[0..<n])
            if n < chunk.count { return ferror(f) != 0 ? nil : bytes }
        }
    }

    static func write(_ text: String, to path: String) -> Bool {
        guard let f = fopen(path, "wb") else { return false }
        var text = text
        let ok = text.withUTF8 { fwrite($0.baseAddress, 1, $0.count, f) == $0.count }
        return fclose(f) == 0 && ok
    }

    private static func fail(_ message: String) -> Int32 {
        fputs("luadispatch trace: \(message)\n", stderr)
        return 2
    }
}
