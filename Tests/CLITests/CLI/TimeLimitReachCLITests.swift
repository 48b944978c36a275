import Foundation
import XCTest

/// `--time-limit` ends code wherever its time goes: long C loops of the string, table and utf8
/// libraries, message handlers, hooks, finalizers, `__close`, an error's `__tostring`, code
/// nested past 256 running states, loops in bindings. Each ends with the limit's own message,
/// well before the CLI's backstop (the limit plus 3 s, whose message says "cannot interrupt").
/// Each of these ran past the limit to the backstop before.
final class TimeLimitReachCLITests: XCTestCase {
    /// (what, code): each runs for ever (or for hours) without a limit.
    static let attacks: [(String, String)] = [
        ("find backtracking", #"string.find(("a"):rep(40), ("a*"):rep(20) .. "b")"#),
        ("match backtracking", #"string.match(("a"):rep(40), ("a*"):rep(20) .. "b")"#),
        ("gmatch backtracking", #"for _ in string.gmatch(("a"):rep(40), ("a*"):rep(20) .. "b") do end"#),
        ("gsub backtracking", #"string.gsub(("a"):rep(40), ("a*"):rep(20) .. "b", "")"#),
        ("find quadratic", #"(("a"):rep(1e6)):find(".-b")"#),
        ("plain find quadratic", #"(("a"):rep(1e6)):find(("a"):rep(5e5) .. "b", 1, true)"#),
        ("table.move", "table.move({}, 1, math.maxinteger - 1, 1)"),
        ("table.remove", "table.remove(setmetatable({}, {__len = function() return math.maxinteger end}), 1)"),
        ("table.insert", "table.insert(setmetatable({}, {__len = function() return math.maxinteger - 1 end}), 1, 0)"),
        ("xpcall handler", #"xpcall(function() error("x") end, function(m) while true do end end)"#),
        ("xpcall handler of the limit's error", "xpcall(function() while true do end end, function(m) while true do end end)"),
        ("hook", "debug.sethook(function() while true do end end, 'l')\nlocal x = 1"),
        ("__gc", #"setmetatable({}, {__gc = function() while true do end end}) collectgarbage()"#),
        ("many __gc", #"for i = 1, 100 do setmetatable({}, {__gc = function() while true do end end}) end collectgarbage()"#),
        ("__close", #"local x <close> = setmetatable({}, {__close = function() while true do end end}) error("y")"#),
        ("error's __tostring", "error(setmetatable({}, {__tostring = function() while true do end end}))"),
        ("nested syncs", """
            local d = require("dispatch")
            local function g(n) if n == 0 then while true do end end d.global():sync(function() g(n - 1) end) end
            g(190)
            """),
        ("nested coroutines and syncs", """
            local d = require("dispatch")
            local function g(n)
              if n == 0 then while true do end end
              coroutine.wrap(function() d.global():sync(function() g(n - 1) end) end)()
            end
            g(150)
            """),
        ("concurrent_map tasks", #"require("dispatch").concurrent_map(5e6, function() end, {chunk = 1})"#),
        // The end's signal, every millisecond, once re-marked all 240,000 calls (over a
        // millisecond's work): the collection it interrupted never went on.
        ("full collections on a deep stack", """
            local t = {} for i = 1, 5e5 do t[i] = {} end
            local function f(n) if n == 0 then while true do collectgarbage() end end return 1 + f(n - 1) end
            f(240000)
            """),
    ]

    func testEachEndsWithTheLimitsMessageBeforeTheBackstop() throws {
        for (what, code) in Self.attacks {
            let started = Date()
            let r = try CLI.run(["--time-limit", "1", "-e", code], timeout: 60)
            let took = Date().timeIntervalSince(started)
            XCTAssertEqual(r.status, 1, "\(what): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("time limit exceeded"), "\(what): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("cannot interrupt"), "\(what): ended by the backstop: \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("PANIC") || r.stderr.contains("AddressSanitizer"), "\(what): \(r.stderr)")
            // 1.5 s promised; the rest is a loaded machine's start-up and exit (under
            // AddressSanitizer beside the plain suite, 3.3 s: its start and leak check at exit).
            XCTAssertLessThan(took, StockLua.sanitizerRuntime != nil ? 5.0 : 3.0, what)
        }
    }

    /// Ctrl-C ends a long C loop on the main thread as it ends Lua code: "interrupted!".
    func testCtrlCEndsALongCLoop() throws {
        let code = #"print('ready') io.stdout:flush() string.find(("a"):rep(40), ("a*"):rep(20) .. "b")"#
        let started = Date()
        let r = try InterruptTests.interrupt(CLI.binary, code)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("interrupted!\nstack traceback:\n\t[C]: in function 'string.find'"), r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
    }

    /// What used to take minutes no longer does: a data object of 2^18 regions lists them in
    /// linear time, `string.rep` of nothing is "" at once however many times.
    func testQuadraticAndEmptyWorkIsQuick() throws {
        let started = Date()
        let r = try CLI.run(["-e", """
            local d = require("dispatch")
            local x = d.data("ab")
            for _ = 1, 18 do x = x .. x end
            local n, bytes = 0, 0
            for _, region in x:regions() do n = n + 1; bytes = bytes + #region end
            print(n, bytes, string.rep("", 2^62) == "", string.rep("", 2^62, "") == "")
            """], timeout: 60)
        XCTAssertEqual(r.stdout, "262144\t524288\ttrue\ttrue\n", r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20)
    }

    /// A trace keeps at most 256 bytes of each string (labels, messages are the script's, and
    /// each event writes its strings in full): a megabyte label on a million blocks made a
    /// terabyte to write after the limit.
    func testATraceKeepsStringsShort() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("short-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try CLI.run(["--trace", path, "-e", "local d = require('dispatch') d.queue(('q'):rep(2^20)):sync(function() end)"],
                            timeout: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        let json = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(json.contains("\"" + String(repeating: "q", count: 256) + "...\""), String(json.prefix(500)))
        XCTAssertLessThan(json.utf8.count, 100_000)
    }
}

extension TimeLimitReachCLITests {
    /// A big trace is written after the limit in what time is left: cut short (and saying so)
    /// instead of seconds of writing that ran into the backstop. A million blocks' trace, and
    /// blocks with long labels; each trace still reads.
    func testABigTraceIsWrittenWithinTheLimit() throws {
        let scripts = [
            ("a million blocks", "local d = require'dispatch' local q = d.queue'x' for i = 1, 1e6 do q:async(function() end) end"),
            ("long labels", "local d = require'dispatch' local q = d.queue(('q'):rep(1e6)) for i = 1, 1e6 do q:async(function() end) end"),
        ]
        let dir = FileManager.default.temporaryDirectory
        for (what, code) in scripts {
            let path = dir.appendingPathComponent("big-\(getpid()).json").path
            let page = dir.appendingPathComponent("big-\(getpid()).html").path
            defer {
                try? FileManager.default.removeItem(atPath: path)
                try? FileManager.default.removeItem(atPath: page)
            }
            let started = Date()
            let r = try CLI.run(["--trace", path, "--time-limit", "1", "-e", code], timeout: 60)
            let took = Date().timeIntervalSince(started)
            XCTAssertEqual(r.status, 1, "\(what): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("time limit exceeded (1 s)"), "\(what): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("cannot interrupt"), "\(what): ended by the backstop: \(r.stderr)")
            // 1.5 s promised; the rest is a loaded machine's start-up and exit (under
            // AddressSanitizer beside the plain suite, 3.3 s: its start and leak check at exit).
            XCTAssertLessThan(took, StockLua.sanitizerRuntime != nil ? 5.0 : 3.0, what)
            let view = try CLI.run(["trace", "view", path, "-o", page], timeout: 120)
            XCTAssertEqual(view.status, 0, "\(what): \(view.stderr)")
        }
    }
}
