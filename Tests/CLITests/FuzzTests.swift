import Foundation
import XCTest

/// The API fuzzer (scripts/fuzz/fuzz.py) and the sequences it found that crashed or hung the
/// runtime, minimised (scripts/fuzz/regressions/*.lua). Each regression runs through the CLI
/// and must end by itself with status 0 or 1: never a signal, another status, or a hang.
final class FuzzTests: XCTestCase {
    static var regressions: URL { CLI.packageRoot.appendingPathComponent("scripts/fuzz/regressions") }

    func testRegressionsNeitherCrashNorHang() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.regressions.path)
            .filter { $0.hasSuffix(".lua") }.sorted()
        XCTAssertFalse(files.isEmpty, "no regression scripts")
        for file in files {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fuzzreg-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            // The scripts refer to their scratch directory as @TMP@, as the fuzzer writes them.
            let text = try String(contentsOf: Self.regressions.appendingPathComponent(file), encoding: .utf8)
                .replacingOccurrences(of: "@TMP@", with: dir.path)
            let script = dir.appendingPathComponent("seq.lua")
            try text.write(to: script, atomically: false, encoding: .utf8)
            _ = mkfifo(dir.appendingPathComponent("fifo").path, 0o600)
            let started = Date()
            let r = try CLI.run(["run", script.path], timeout: 60, directory: dir)
            XCTAssertTrue(r.status == 0 || r.status == 1,
                          "\(file): exit status \(r.status) after \(Date().timeIntervalSince(started)) s\n\(r.stderr.suffix(3000))")
        }
    }

    /// A bounded, seeded fuzzing run: the same sequences every time. Set LUADISPATCH_FUZZ_COUNT
    /// (0 skips it) or LUADISPATCH_FUZZ_SEED to change it.
    func testBoundedFuzzRun() throws {
        let env = ProcessInfo.processInfo.environment
        let count = env["LUADISPATCH_FUZZ_COUNT"] ?? "500"
        guard count != "0" else { throw XCTSkip("LUADISPATCH_FUZZ_COUNT=0") }
        // python3 from PATH (scripts/setup installs it when missing).
        guard let python = (env["PATH"] ?? "/usr/bin").split(separator: ":").map({ "\($0)/python3" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return XCTFail("python3 is not on PATH (scripts/setup installs it)") }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-\(UUID().uuidString)")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [CLI.packageRoot.appendingPathComponent("scripts/fuzz/fuzz.py").path,
                       "--binary", CLI.binary.path, "--seed", env["LUADISPATCH_FUZZ_SEED"] ?? "1", "--count", count,
                       "--jobs", "6", "--timeout", "60", "--time-limit", "240", "--out", out.path]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let summary = output.split(separator: "\n").filter { $0.hasPrefix("fuzz: ") }.joined(separator: "\n")
        print(summary)
        XCTAssertEqual(p.terminationStatus, 0, "fuzzer found failures (minimised in \(out.path)):\n" + output.suffix(6000))
        XCTAssertTrue(output.contains(" 0 failed"), output.suffix(2000).description)
    }
}
