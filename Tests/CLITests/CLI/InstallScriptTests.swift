import Foundation
import XCTest

/// scripts/install puts the binary on a prefix's bin and takes it away again; scripts/setup
/// installs only what running needs unless asked for the tests' packages too.
final class InstallScriptTests: XCTestCase {
    static var scripts: URL { CLI.packageRoot.appendingPathComponent("scripts") }

    func testInstallAndUninstall() throws {
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("prefix-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: prefix) }
        let install = Self.scripts.appendingPathComponent("install")
        // --from: the binary this test suite built (a release build would take minutes here).
        let r = try CLI.run(["--prefix", prefix.path, "--from", CLI.productsDirectory.path], executable: install)
        XCTAssertEqual(r.status, 0, r.stderr)
        let installed = prefix.appendingPathComponent("bin/luadispatch")
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: installed.path), r.stdout)
        XCTAssertTrue(r.stdout.contains("installed \(installed.path) (LuaDispatch "), r.stdout)
        XCTAssertTrue(r.stdout.contains("remove it with: scripts/install --uninstall --prefix \(prefix.path)"), r.stdout)
        // It runs from there, away from the checkout.
        let hello = try CLI.run(["-e", "print(require('dispatch') ~= nil)"], directory: prefix, executable: installed)
        XCTAssertEqual(hello.stdout, "true\n", hello.stderr)
        let u = try CLI.run(["--uninstall", "--prefix", prefix.path], executable: install)
        XCTAssertEqual(u.status, 0, u.stderr)
        XCTAssertEqual(u.stdout, "removed \(installed.path)\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: installed.path))
        let bad = try CLI.run(["--bogus"], executable: install)
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stderr.hasPrefix("usage: scripts/install"), bad.stderr)
    }

    func testSetupInstallsWhatRunningNeedsUnlessAskedForTheTests() throws {
        let setup = Self.scripts.appendingPathComponent("setup")
        let run = try CLI.run(["--list"], executable: setup)
        XCTAssertEqual(run.status, 0, run.stderr)
        let runNeeds = Set(run.stdout.split(separator: "\n").map(String.init))
        XCTAssertEqual(runNeeds, ["liblua5.4-dev", "libreadline8", "libcurl4"])
        let tests = try CLI.run(["--tests", "--list"], executable: setup)
        XCTAssertEqual(tests.status, 0, tests.stderr)
        let testNeeds = Set(tests.stdout.split(separator: "\n").map(String.init))
        XCTAssertTrue(testNeeds.isSuperset(of: runNeeds.union(["lua5.4", "lua-busted", "luarocks", "python3", "chromium", "lua-luv", "lua-socket"])),
                      tests.stdout)
        // What CI and the README's test command run.
        let ci = try String(contentsOf: CLI.packageRoot.appendingPathComponent(".ci/run"), encoding: .utf8)
        XCTAssertTrue(ci.contains("\nscripts/setup --tests\n"), "CI sets up for the tests")
        let readme = try String(contentsOf: CLI.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertTrue(readme.contains("scripts/setup --tests && swift test --disable-swift-testing"), "the README's test command")
    }
}
