import Foundation
import XCTest

/// Runs the built `luadispatch` binary and captures what it prints.
struct CLIResult {
    let status: Int32
    let stdout: String
    let stderr: String
    /// Whether the child ended by a signal (then `status` is the signal's number).
    var signalled = false
    /// Whether it outlived its timeout (and was terminated).
    var timedOut = false
}

enum CLI {
    /// The products directory: where this test binary and `luadispatch` are built.
    static var productsDirectory: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent()
    }

    /// Writing to a child that has exited must not kill the test process with SIGPIPE.
    static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN); return () }()

    static var binary: URL { productsDirectory.appendingPathComponent("luadispatch") }

    /// The repository root (for the bundled scenarios).
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Runs `executable` (default: `luadispatch`) with `arguments`. `timeout` nil waits for ever;
    /// a child still running at the timeout is terminated, and fails the test unless
    /// `failOnTimeout` is false. With `mergeOutput`, standard error goes to the same pipe as
    /// standard output (so their order is kept), and `stderr` is empty.
    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
                    timeout: TimeInterval? = 120, failOnTimeout: Bool = true, mergeOutput: Bool = false,
                    directory: URL? = nil, executable: URL? = nil,
                    started: ((Process) -> Void)? = nil) throws -> CLIResult {
        let p = Process()
        p.executableURL = executable ?? binary
        p.arguments = arguments
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        p.currentDirectoryURL = directory ?? packageRoot
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = mergeOutput ? out : err
        p.standardInput = input
        _ = ignoreBrokenPipes
        try p.run()
        // A child may exit without reading its standard input (`lua -v` does): then the write
        // fails with EPIPE, which is no failure of the test.
        if let stdin { try? input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        started?(p)
        // Read both pipes while the child runs, so a full pipe cannot block it.
        let group = DispatchGroup()
        let collected = Collected()
        for (handle, key) in [(out.fileHandleForReading, 0), (err.fileHandleForReading, 1)] where key == 0 || !mergeOutput {
            DispatchQueue.global().async(group: group) { collected.set(key, handle.readDataToEndOfFile()) }
        }
        var timedOut = false
        if let timeout {
            let deadline = Date().addingTimeInterval(timeout)
            while p.isRunning && Date() < deadline { usleep(10_000) }
            if p.isRunning {
                timedOut = true
                p.terminate()
                if failOnTimeout {
                    XCTFail("\(p.executableURL!.lastPathComponent) \(arguments) did not finish within \(timeout) s")
                }
            }
        }
        p.waitUntilExit()
        group.wait()
        return CLIResult(status: p.terminationStatus, stdout: collected.string(0), stderr: collected.string(1),
                         signalled: p.terminationReason == .uncaughtSignal, timedOut: timedOut)
    }

    /// Writes `code` to a temporary .lua file and runs it with `luadispatch run`.
    static func script(_ code: String, arguments: [String] = [], stdin: String? = nil) throws -> CLIResult {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString).lua")
        try code.write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try run(["run", file.path] + arguments, stdin: stdin)
    }

    /// `body` for each of `items`, up to `width` at once (for children that each run on their
    /// own and mostly wait, such as the ports); the results in the order of `items`.
    static func each<T: Sendable, R>(_ items: [T], width: Int, _ body: @escaping @Sendable (T) throws -> R) throws -> [R] {
        let results = Results<R>(count: items.count)
        let slots = DispatchSemaphore(value: width)
        let group = DispatchGroup()
        for (i, item) in items.enumerated() {
            slots.wait()
            DispatchQueue.global().async(group: group) {
                defer { slots.signal() }
                results.set(i, Result { try body(item) })
            }
        }
        group.wait()
        return try results.all()
    }
}

private final class Results<R>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<R, Error>?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ r: Result<R, Error>) { lock.withLock { slots[i] = r } }
    func all() throws -> [R] { try lock.withLock { try slots.map { try $0!.get() } } }
}

final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var data: [Int: Data] = [:]
    func set(_ key: Int, _ d: Data) { lock.withLock { data[key] = d } }
    func string(_ key: Int) -> String { lock.withLock { String(decoding: data[key] ?? Data(), as: UTF8.self) } }
}
