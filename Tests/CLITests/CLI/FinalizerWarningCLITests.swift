import Foundation
import XCTest

/// A finalizer's error is a warning, as under `lua5.4`, unless the interpreter is ending its code
/// (then the end leaves the collection: control/finalizers.c, `FinalizerEndTests`). Side by side
/// with Debian's `lua5.4 -W`: the same warnings, output and status, with no limit and with a time
/// limit that does not fire, also for an error whose message is the limit's own.
final class FinalizerWarningCLITests: XCTestCase {
    static let lua = URL(fileURLWithPath: "/usr/bin/lua5.4")

    func testAFinalizersErrorIsAWarningAsUnderLua() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: Self.lua.path), "lua5.4 is not installed (scripts/setup --tests installs it)")
        let code = """
            setmetatable({}, {__gc = function() error('in gc') end}) collectgarbage()
            setmetatable({}, {__gc = function() error('time limit exceeded', 0) end}) collectgarbage()
            setmetatable({}, {__gc = function() error({}) end}) collectgarbage()
            print('after')
            """
        let theirs = try CLI.run(["-W", "-e", code], executable: Self.lua)
        XCTAssertEqual(theirs.stderr.components(separatedBy: "Lua warning: error in __gc").count, 4, theirs.stderr)
        for options in [[], ["--time-limit", "5"]] {
            let ours = try CLI.run(options + ["-W", "-e", code])
            XCTAssertEqual(ours.stdout, theirs.stdout, "\(options)")
            XCTAssertEqual(ours.stderr, theirs.stderr, "\(options)")
            XCTAssertEqual(ours.status, theirs.status, "\(options)")
        }
    }

    /// The chain of finalizers that make finalizers, under `--time-limit`: the limit's message,
    /// not the backstop's (it ran to the backstop, 3 s past the limit, before).
    func testAFinalizerChainEndsWithTheLimitsMessage() throws {
        let code = """
            local function mk() setmetatable({}, {__gc = function() mk() mk() end}) end
            mk()
            while true do collectgarbage() end
            """
        let started = Date()
        let r = try CLI.run(["--time-limit", "1", "-e", code], timeout: 60)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("time limit exceeded"), r.stderr)
        XCTAssertFalse(r.stderr.contains("cannot interrupt"), r.stderr)
        // The end's clean-up runs the finalizers left pending for a second before exit.
        XCTAssertLessThan(Date().timeIntervalSince(started), 3.5)
    }
}
