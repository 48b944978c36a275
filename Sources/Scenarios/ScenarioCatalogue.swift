/// The scenario scripts: `<id>-<slug>.lua`, each opening with `-- title:` and `-- seed:` lines.
struct ScenarioCatalogue {
    struct Scenario {
        let id: String
        let title: String
        let path: String
    }

    let directory: String
    let scenarios: [Scenario]

    init(directory: String) throws(ScenarioError) {
        self.directory = directory
        guard let names = Posix.directoryEntries(directory) else {
            throw ScenarioError("cannot read \(directory): \(Posix.errorText())")
        }
        scenarios = names.filter { $0.hasSuffix(".lua") }.compactMap { file -> Scenario? in
            guard let dash = file.firstIndex(of: "-") else { return nil }
            let path = directory + "/" + file
            // A malformed header is reported when the scenario runs; the list shows the file.
            let title = (try? ScenarioHeader(path: path))?.title ?? file
            return Scenario(id: String(file[..<dash]), title: title, path: path)
        }.sorted { Self.order($0.id) < Self.order($1.id) || (Self.order($0.id) == Self.order($1.id) && $0.id < $1.id) }
    }

    func scenario(_ id: String) -> Scenario? { scenarios.first { $0.id == id } }

    /// Catalogue order: numbered sections, then the appendix, the Handbook, the guide, the book,
    /// the network scenarios, then the project's own (by id).
    static func order(_ id: String) -> (Int, Int) {
        let parts = id.split(separator: ".")
        let major = parts.first.map(String.init) ?? ""
        let minor = parts.count > 1 ? String(parts[1]) : ""
        let majorKey = Int(major) ?? (["A": 100, "H": 101, "G": 102, "B": 103, "N": 104][major] ?? 200)
        return (majorKey, Int(minor) ?? 1000)
    }

    /// The scripts' directory: `explicit`, `$LUADISPATCH_SCENARIOS`, `scripts/scenarios` under
    /// the current directory, or under one of the binary's ancestors (a build directory).
    static func locate(explicit: String?) -> String? {
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        if let env = Posix.environment("LUADISPATCH_SCENARIOS") { candidates.append(env) }
        candidates.append(Posix.currentDirectory() + "/scripts/scenarios")
        var dir = Posix.executablePath()
        for _ in 0..<6 {
            guard let slash = dir.lastIndex(of: "/") else { break }
            dir = String(dir[..<slash])
            candidates.append(dir + "/scripts/scenarios")
        }
        return candidates.first(where: Posix.isDirectory).flatMap(Posix.realPath)
    }
}

extension String {
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
