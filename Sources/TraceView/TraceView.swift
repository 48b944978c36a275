import Foundation

/// `trace view TRACE.json [-o FILE] [--svg]`: turns a trace into a self-contained HTML page
/// (or, with `--svg`, a static SVG picture). The one entry point the CLI calls.
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
        let data: Data
        do {
            data = input == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: input))
        } catch {
            return fail("cannot read '\(input)': \(error.localizedDescription)")
        }
        let text: String
        do {
            text = try render(data, title: (input as NSString).lastPathComponent, svg: svg)
        } catch {
            return fail("'\(input)': \(error)")
        }
        let out = output ?? ((input as NSString).deletingPathExtension + (svg ? ".svg" : ".html"))
        do { try text.write(toFile: out, atomically: true, encoding: .utf8) } catch {
            return fail("cannot write '\(out)': \(error.localizedDescription)")
        }
        return 0
    }

    /// The page (or the static SVG) for the trace in `json`.
    public static func render(_ json: Data, title: String, svg: Bool = false) throws -> String {
        let model = try TraceModel(json: json)
        return svg ? TimelineSVG(model: model).render(interactive: false) : TimelinePage.render(model, title: title)
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("luadispatch trace: \(message)\n".utf8))
        return 2
    }
}
