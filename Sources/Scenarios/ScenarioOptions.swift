/// The command line of `luadispatch scenarios`:
/// `list [--dir D]`, `run ID... | --all [--check] [--scale F] [--size N] [--timeout S] [--dir D]`,
/// or `exec FILE [--check] [--scale F] [--size N] [--timeout S]` (one script, in this process).
/// Options may come before, after or between the ids, as `--name value` or `--name=value`.
struct ScenarioOptions {
    enum Action { case list, run, exec, help }

    var action = Action.help
    var ids: [String] = []
    var all = false
    var check = false
    var scale = 1.0
    var size: Int?
    /// Overrides the limit each scenario's header implies.
    var timeout: Double?
    var directory: String?
    /// Where `run` writes each scenario's trace (`ID.json`).
    var traceDirectory: String?

    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// Whether the usage text helps (a malformed command line, not a bad value).
        var showUsage = true
    }

    static func parse(_ arguments: [String]) throws(Failure) -> ScenarioOptions {
        var o = ScenarioOptions()
        guard let command = arguments.first else { throw Failure(description: "scenarios: 'list', 'run' or 'exec' expected") }
        switch command {
        case "list": o.action = .list
        case "run": o.action = .run
        case "exec": o.action = .exec
        case "-h", "--help", "help": return o
        default: throw Failure(description: "scenarios: unknown command '\(command)' ('list', 'run' or 'exec' expected)")
        }
        var rest = arguments.dropFirst()
        var onlyIds = false
        while let argument = rest.popFirst() {
            if onlyIds || !argument.hasPrefix("-") || argument == "-" {
                guard o.action != .list else { throw Failure(description: "scenarios list: unexpected argument '\(argument)'") }
                o.ids.append(argument)
                continue
            }
            var name = argument, inlineValue: String?
            if let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                inlineValue = String(argument[argument.index(after: eq)...])
            }
            func value() throws(Failure) -> String {
                if let inlineValue { return inlineValue }
                guard let next = rest.popFirst() else { throw Failure(description: "'\(name)' needs an argument") }
                return next
            }
            func flag() throws(Failure) {
                if inlineValue != nil { throw Failure(description: "'\(name)' takes no argument") }
            }
            func runOnly() throws(Failure) {
                if o.action == .list { throw Failure(description: "scenarios list: unrecognized option '\(name)'") }
            }
            switch name {
            case "--": try flag(); onlyIds = true
            case "-h", "--help": o.action = .help; return o
            case "--dir":
                if o.action == .exec { throw Failure(description: "scenarios exec: unrecognized option '--dir'") }
                o.directory = try value()
            case "--all":
                if o.action != .run { throw Failure(description: "unrecognized option '--all'") }
                try flag(); o.all = true
            case "--check": try runOnly(); try flag(); o.check = true
            case "--scale": try runOnly(); o.scale = try positive(name, try value())
            case "--timeout": try runOnly(); o.timeout = try positive(name, try value())
            case "--trace":
                if o.action != .run { throw Failure(description: "unrecognized option '--trace'") }
                o.traceDirectory = try value()
            case "--size":
                try runOnly()
                let text = try value()
                guard let n = Int(text), n > 0 else {
                    throw Failure(description: "bad value '\(text)' for '--size' (a positive integer expected)", showUsage: false)
                }
                o.size = n
            default: throw Failure(description: "unrecognized option '\(name)'")
            }
        }
        if o.action == .run && !o.all && o.ids.isEmpty {
            throw Failure(description: "scenarios run: name scenario ids or pass --all")
        }
        if o.action == .exec && o.ids.count != 1 {
            throw Failure(description: "scenarios exec: one script expected")
        }
        return o
    }

    private static func positive(_ name: String, _ text: String) throws(Failure) -> Double {
        guard let x = Double(text), x > 0, x.isFinite else {
            throw Failure(description: "bad value '\(text)' for '\(name)' (a positive number expected)", showUsage: false)
        }
        return x
    }
}
