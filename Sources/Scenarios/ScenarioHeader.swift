/// What a scenario script declares in its leading comment:
///
///     -- title: Sync task on a serial queue
///     -- seed: 000 §3 (example 3.1, sync task on a serial queue)
///     -- expect: 3 checks, 2 s of delays, 0.5 s of work, 0.02 s per MiB
///
/// `expect` gives the number of `scenario.check` calls a correct run makes (the runner fails a
/// run that makes fewer or more) and the parts of its expected duration: tutorial delays (scaled
/// by `--scale`), fixed work, and work per MiB of `--size` (the file scenarios). The time limit
/// is a few times that duration.
struct ScenarioHeader {
    var title: String?
    var checks: Int?
    var delays = 0.0
    var work = 0.0
    var perMiB = 0.0

    /// The limit is this many times the expected duration ...
    static let limitFactor = 4.0
    /// ... plus this much, for starting the process and for a loaded machine.
    static let limitSlack = 5.0
    /// The file scenarios' input size when `--size` is not given (see the `scenario` module).
    static let defaultSize = 64 << 20

    init(path: String) throws(ScenarioError) {
        guard let bytes = Posix.readFile(path, limit: 16384) else {
            throw ScenarioError("cannot read \(path): \(Posix.errorText())")
        }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n").prefix(40) {
            guard line.hasPrefix("--") else { break }
            if let value = Self.field(line, "title") {
                title = value
            } else if let value = Self.field(line, "expect") {
                try parseExpect(value, path: path)
            }
        }
    }

    /// Seconds a correct run should take at `scale` with input files of `size` bytes.
    func expectedDuration(scale: Double, size: Int?) -> Double {
        delays * scale + work + perMiB * Double(size ?? Self.defaultSize) / Double(1 << 20)
    }

    func timeLimit(scale: Double, size: Int?) -> Double {
        Self.limitFactor * expectedDuration(scale: scale, size: size) + Self.limitSlack
    }

    private static func field(_ line: Substring, _ name: String) -> String? {
        let prefix = "-- \(name):"
        return line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)).trimmingSpaces() : nil
    }

    private mutating func parseExpect(_ value: String, path: String) throws(ScenarioError) {
        for item in value.split(separator: ",").map({ String($0).trimmingSpaces() }) {
            let words = item.split(separator: " ").map(String.init)
            guard let first = words.first, let number = Double(first), number >= 0 else {
                throw ScenarioError("\(path): bad 'expect' item '\(item)'")
            }
            switch words.dropFirst().joined(separator: " ") {
            case "check", "checks":
                guard let n = Int(first) else { throw ScenarioError("\(path): bad check count '\(first)'") }
                checks = n
            case "s of delays": delays = number
            case "s of work": work = number
            case "s per MiB": perMiB = number
            default: throw ScenarioError("\(path): bad 'expect' item '\(item)'")
            }
        }
    }
}
