import Foundation
import LuaDispatch
import Synchronization

/// The project a rules script works on: the files of one directory. Lua sees it as `host.project`
/// (a `Project` userdata): `project.name` (read-write), `project.root`, `project:files()`,
/// `project:read(name)`, `project:write(name, text)`, `project:size(name)`, `#project`,
/// `tostring(project)`. Lua calls its methods from whichever thread runs the script's blocks, so
/// its state is behind a mutex.
final class Project: LuaUserData {
    let root: URL
    private let state: Mutex<(name: String, sizes: [String: Int])>

    init(root: URL, name: String) {
        self.root = root.standardizedFileURL
        state = Mutex((name, [:]))
    }

    var name: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }

    /// The files the watcher last saw, by name.
    var files: [String] { state.withLock { $0.sizes.keys.sorted() } }
    func size(_ name: String) -> Int? { state.withLock { $0.sizes[name] } }
    func update(_ sizes: [String: Int]) { state.withLock { $0.sizes = sizes } }

    /// `name` inside the project, or an error for a path that leaves it.
    func url(_ name: String) throws -> URL {
        let url = root.appendingPathComponent(name).standardizedFileURL
        guard url.path.hasPrefix(root.path + "/") else { throw ToolError("'\(name)' is not in the project") }
        return url
    }

    func read(_ name: String) throws -> String {
        try String(contentsOf: try url(name), encoding: .utf8)
    }

    func write(_ name: String, _ text: String) throws {
        try text.write(to: try url(name), atomically: true, encoding: .utf8)
    }

    static let luaType = LuaType<Project>("Project") { t in
        t.property("name", get: { $0.name }, set: { $0.name = $1 })
        t.property("root", get: { $0.root.path })
        t.method("files") { (p: Project) in p.files }
        t.method("size") { (p: Project, name: String) in p.size(name) }
        t.method("read") { (p: Project, name: String) throws in try p.read(name) }
        t.method("write") { (p: Project, name: String, text: String) throws in try p.write(name, text) }
        t.metamethod(.len) { (p: Project) in p.files.count }
        t.metamethod(.tostring) { (p: Project) in "Project \(p.name) (\(p.files.count) files)" }
    }
}

/// What changed in the project, as a rules script's `on_change` callbacks receive it:
/// `{kind = "modified", file = "notes.md", size = 120}`.
struct Change: LuaCodable, Equatable {
    enum Kind: String, Codable { case created, modified, deleted }
    var kind: Kind
    var file: String
    var size: Int?
}

/// The configuration a rules script returns.
struct RulesConfig: LuaCodable {
    /// The project's name.
    var name: String
    /// Which files to watch: shell patterns (`*.md`); all files when absent.
    var include: [String]?
    /// Seconds between two looks at the directory.
    var pollInterval: Double?

    enum CodingKeys: String, CodingKey {
        case name, include
        case pollInterval = "poll_interval"
    }
}

struct ToolError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
