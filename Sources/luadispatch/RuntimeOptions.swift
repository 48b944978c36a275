#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// What `luadispatch` adds to `lua`'s options, before the script: `--trace FILE`, `--sandbox`.
/// They are taken out of the command line before lua.c parses the rest (its options, in its
/// order and with its messages), and end where lua.c's do: at the script, `--` or `-`.
struct RuntimeOptions {
    var sandbox = false

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
                    guard i + 1 < args.count else { return .failure(Failure("\(programName): '\(a)' needs argument\n")) }
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
}
