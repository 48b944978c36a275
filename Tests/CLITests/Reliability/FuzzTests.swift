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
        let (status, output) = try fuzz(count: "500", ["--timeout", "60", "--time-limit", "240"])
        XCTAssertEqual(status, 0, "fuzzer found failures:\n" + output.suffix(6000))
        XCTAssertTrue(output.contains(" 0 failed"), output.suffix(2000).description)
    }

    /// The sandbox round (`fuzz.py --sandbox`): the sequences also try to get out, and run with
    /// `--sandbox`: no crash, no hang, no file of the sequence's directory created, removed or
    /// changed.
    func testBoundedSandboxFuzzRun() throws {
        let (status, output) = try fuzz(count: "300", ["--sandbox", "--timeout", "30", "--time-limit", "90"])
        XCTAssertEqual(status, 0, "fuzzer found failures:\n" + output.suffix(6000))
        XCTAssertTrue(output.contains(" 0 failed") && output.contains(" 0 escapes"), output.suffix(2000).description)
    }

    /// The limits round (`fuzz.py --sandbox --limits`): sandboxed sequences run with
    /// `--memory-limit 64M --time-limit 2`, and 40% of their hostile statements try to exhaust
    /// the process (memory bombs, endless loops, endless finalizers): each ends on its own or by a
    /// limit, within 4 s of the limit, with no crash, hang or escape.
    func testBoundedLimitsFuzzRun() throws {
        let (status, output) = try fuzz(count: "120", ["--sandbox", "--limits", "--timeout", "30", "--time-limit", "120"])
        XCTAssertEqual(status, 0, "fuzzer found failures:\n" + output.suffix(6000))
        XCTAssertTrue(output.contains(" 0 failed") && output.contains(" 0 escapes"), output.suffix(2000).description)
    }

    /// The same sequences run without `--sandbox` get out, and the round says so.
    func testSandboxFuzzRoundFindsEscapesWithoutTheSandbox() throws {
        let (status, output) = try fuzz(count: "8", fixed: true, ["--sandbox", "--unsandboxed", "--no-minimise", "--timeout", "30"])
        XCTAssertEqual(status, 1, output.suffix(2000).description)
        let escapes = output.split(separator: "\n").first { $0.hasPrefix("fuzz: seed") }?
            .split(separator: " ").dropLast().last.flatMap { Int($0) } ?? 0
        XCTAssertGreaterThan(escapes, 0, output.suffix(2000).description)
    }

    /// Runs scripts/fuzz/fuzz.py on the built binary; its status and output (the `fuzz: ` lines
    /// are printed). LUADISPATCH_FUZZ_COUNT replaces `count` unless `fixed` (0 always skips).
    private func fuzz(count defaultCount: String, fixed: Bool = false, _ arguments: [String]) throws -> (Int32, String) {
        let env = ProcessInfo.processInfo.environment
        let count = fixed && env["LUADISPATCH_FUZZ_COUNT"] != "0" ? defaultCount : env["LUADISPATCH_FUZZ_COUNT"] ?? defaultCount
        guard count != "0" else { throw XCTSkip("LUADISPATCH_FUZZ_COUNT=0") }
        // python3 from PATH (scripts/setup --tests installs it when missing).
        guard let python = (env["PATH"] ?? "/usr/bin").split(separator: ":").map({ "\($0)/python3" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { XCTFail("python3 is not on PATH (scripts/setup --tests installs it)"); return (-1, "") }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-\(UUID().uuidString)")
        let r = try CLI.run([CLI.packageRoot.appendingPathComponent("scripts/fuzz/fuzz.py").path,
                             "--binary", CLI.binary.path, "--seed", env["LUADISPATCH_FUZZ_SEED"] ?? "1", "--count", count,
                             "--jobs", "6", "--out", out.path] + arguments,
                            timeout: nil, mergeOutput: true, executable: URL(fileURLWithPath: python))
        let output = r.stdout
        print(output.split(separator: "\n").filter { $0.hasPrefix("fuzz: ") }.joined(separator: "\n"))
        print("(failures minimised in \(out.path))")
        return (r.status, output)
    }
}
