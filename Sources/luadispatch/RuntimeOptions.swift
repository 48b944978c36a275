#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// What `luadispatch` adds to `lua`'s options, before the script: `--trace FILE`, `--sandbox`,
/// `--memory-limit SIZE`, `--time-limit SECONDS`, `--help`.
/// They are taken out of the command line before lua.c parses the rest (its options, in its
/// order and with its messages), and end where lua.c's do: at the script, `--` or `-`.
import CLuaCLI
import LuaDispatch

struct RuntimeOptions {
    var sandbox = false
    var help = false
    var limits = Runtime.Limits()

    /// One option: its name, whether it takes the next argument, and what it sets (nil, or a
    /// message for an argument it refuses).
    struct Option: Sendable {
        let name: String
        let takesArgument: Bool
        let apply: @Sendable (inout RuntimeOptions, String) -> String?
    }

    static let options: [Option] = [
        // The runtime reads LUADISPATCH_TRACE when it starts.
        Option(name: "--trace", takesArgument: true) { _, file in setenv("LUADISPATCH_TRACE", file, 1); return nil },
        Option(name: "--sandbox", takesArgument: false) { o, _ in o.sandbox = true; return nil },
        Option(name: "--help", takesArgument: false) { o, _ in o.help = true; return nil },
        Option(name: "--memory-limit", takesArgument: true) { o, text in
            guard let bytes = size(text) else { return "a size in bytes expected (e.g. 64M), got '\(text)'" }
            o.limits.memory = bytes
            ldcli_return_freed_memory()
            return nil
        },
        Option(name: "--time-limit", takesArgument: true) { o, text in
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                return "a number of seconds > 0 expected, got '\(text)'"
            }
            o.limits.time = seconds
            return nil
        },
    ]

    /// Takes the runtime's options out of `args`; what is left is lua's command line. On an
    /// option without its argument or with a bad one, a message for standard error.
    static func take(_ args: [String], programName: String) -> Result<(RuntimeOptions, [String]), Failure> {
        var result = RuntimeOptions()
        var out = [args[0]]
        var i = 1
        while i < args.count {
            let a = args[i]
            if let option = options.first(where: { $0.name == a }) {
                var argument = ""
                if option.takesArgument {
                    guard i + 1 < args.count else {
                        return .failure(Failure("\(programName): '\(a)' needs argument\n" + Help.text(programName)))
                    }
                    argument = args[i + 1]
                }
                if let message = option.apply(&result, argument) {
                    return .failure(Failure("\(programName): '\(a)': \(message)\n"))
                }
                i += option.takesArgument ? 2 : 1
                continue
            }
            out.append(a)
            i += 1
            // Options end at the script name, "--" or "-"; -e and -l take the next argument.
            if !a.hasPrefix("-") || a == "--" || a == "-" { break }
            if (a == "-e" || a == "-l") && i < args.count {
                out.append(args[i])
                i += 1
            }
        }
        out.append(contentsOf: args[i...])
        return .success((result, out))
    }

    struct Failure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// "1048576", "64K", "64M", "1G" (powers of 1024; a "B" or "iB" after the letter is allowed).
    static func size(_ text: String) -> Int? {
        var t = text.uppercased()
        for suffix in ["IB", "B"] where t.hasSuffix(suffix) && t.count > suffix.count { t.removeLast(suffix.count) }
        let scales: [Character: Double] = ["K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024]
        var scale = 1.0
        if let last = t.last, let s = scales[last] {
            scale = s
            t.removeLast()
        }
        guard let n = Double(t), n > 0, n.isFinite, n * scale < 9e18 else { return nil }
        return Int(n * scale)
    }

    /// A time limit as the CLI's message shows it: "2 s", "0.5 s".
    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }
}
