import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LuaDispatch
import Synchronization

/// A file automation host: runs a user's rules script against a project directory, and calls
/// the script back whenever a file changes (docs/embedding.md walks through it).
///
///     embed-example [--once | --for SECONDS] DIR RULES.lua [ARGS...]
///
/// The script sees `host.project` (a Swift object), registers callbacks with
/// `host.on_change(fn)`, may `host.fetch(url)` (an async Swift function: inside a
/// `dispatch.task` it holds no thread while the request runs), `host.log(text)` and
/// `host.stop()`, and returns its configuration, which the tool decodes into a Codable struct.
/// `--once` looks once (every file is "created") and exits when the script's work is done;
/// otherwise the tool watches until `host.stop()` or for SECONDS.
final class Tool: @unchecked Sendable {
    let runtime = Runtime()
    let project: Project
    let rules: String
    let arguments: [String]
    let callbacks = Mutex<[LuaFunction]>([])
    let stopped = Atomic<Bool>(false)
    let wake = DispatchSemaphore(value: 0)
    let delivered = Atomic<Int>(0)
    let failures = Atomic<Int>(0)

    init(directory: URL, rules: String, arguments: [String]) {
        project = Project(root: directory, name: directory.lastPathComponent)
        self.rules = rules
        self.arguments = arguments
        runtime.register(module: "host") { m in
            m.value("project", project)
            m.function("on_change") { [unowned self] (f: LuaFunction) in callbacks.withLock { $0.append(f) } }
            m.function("log") { (text: String) in say("[rules] " + text) }
            m.function("stop") { [unowned self] () in stop() }
            m.asyncFunction("fetch") { (url: String) async throws -> String in try await fetch(url) }
        }
        runtime.uncaughtErrorHandler = { [unowned self] error in
            failures.add(1, ordering: .relaxed)
            say("[host] error in the rules' block on '\(error.label ?? "?")': \(error.message)\n\(error.traceback)", to: 2)
        }
    }

    /// Runs the tool; the process's exit status.
    func run(once: Bool, duration: Double?) -> Int32 {
        let config: RulesConfig
        do {
            let result = try runtime.run(file: rules, arguments: arguments)
            config = try LuaDecoder().decode(RulesConfig.self, from: result.first ?? .nil)
        } catch let error as LuaScriptError {
            say("[host] \(rules) failed: \(error.message)\n\(error.traceback)", to: 2)
            return 1
        } catch {
            say("[host] \(rules) returned a bad configuration: \(error)", to: 2)
            return 2
        }
        project.name = config.name
        let watcher = Watcher(root: project.root, patterns: config.include ?? [])
        watcher.start(every: config.pollInterval ?? 0.5) { [self] changes, sizes in
            project.update(sizes)
            for change in changes { deliver(change) }
        }
        say("[host] watching \(project.files.count) files of \(project.name)")
        if once {
            stop()
        } else if let duration {
            DispatchQueue.global().asyncAfter(deadline: .now() + duration) { [self] in stop() }
        }
        // The main thread services the main queue (the script may use dispatch.main) until
        // stopped, then until the script's work is done.
        while !stopped.load(ordering: .acquiring) {
            if runtime.pendingWork > 0 { runtime.run(.once) } else { _ = wake.wait(timeout: .now() + 0.05) }
        }
        watcher.stop()
        runtime.run(.default)
        say("[host] \(delivered.load(ordering: .relaxed)) changes delivered, \(failures.load(ordering: .relaxed)) failed")
        let status: Int32 = failures.load(ordering: .relaxed) > 0 ? 1 : 0
        runtime.close()
        return status
    }

    /// Calls every `on_change` callback with `change`, from the watcher's thread.
    func deliver(_ change: Change) {
        for callback in callbacks.withLock({ $0 }) {
            do {
                try callback.call(change)
                delivered.add(1, ordering: .relaxed)
            } catch {
                failures.add(1, ordering: .relaxed)
                say("[host] on_change failed: \(error.message)\n\(error.traceback)", to: 2)
            }
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }
}

/// `host.fetch(url)`: the body of a GET, through URLSession's async API.
@Sendable func fetch(_ url: String) async throws -> String {
    guard let u = URL(string: url) else { throw ToolError("not a URL: \(url)") }
    let (data, response) = try await URLSession.shared.data(from: u)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    guard status == 200 else { throw ToolError("GET \(url): HTTP \(status)") }
    return String(decoding: data, as: UTF8.self)
}

/// Writes a line at once (output is read by people and tests while the tool runs).
func say(_ line: String, to fd: Int32 = 1) {
    FileHandle(fileDescriptor: fd).write(Data((line + "\n").utf8))
}

enum EmbedExample {
    static func main() -> Never {
        var args = Array(CommandLine.arguments.dropFirst())
        var once = false, duration: Double?
        while let first = args.first, first.hasPrefix("--") {
            args.removeFirst()
            switch first {
            case "--once": once = true
            case "--for": duration = args.isEmpty ? nil : Double(args.removeFirst())
            default: usage()
            }
        }
        guard args.count >= 2 else { usage() }
        let tool = Tool(directory: URL(fileURLWithPath: args[0]), rules: args[1], arguments: Array(args.dropFirst(2)))
        exit(tool.run(once: once, duration: duration))
    }

    static func usage() -> Never {
        say("usage: embed-example [--once | --for SECONDS] DIR RULES.lua [ARGS...]", to: 2)
        exit(2)
    }
}
