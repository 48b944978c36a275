import Dispatch
import Foundation
import XCTest
@testable import LuaDispatch

/// A Swift host's time limit ends code wherever its time goes, as the CLI's does
/// (CLITests/TimeLimitReachCLITests.swift), with no backstop to fall back on: long C loops of
/// the string, table and utf8 libraries, message handlers, hooks, finalizers, `__close`, an
/// error's `__tostring`, code nested past 256 running states, loops in bindings. Each ran for
/// minutes or for ever before.
final class TimeLimitReachTests: XCTestCase {
    static let attacks: [(String, String)] = [
        ("find backtracking", #"string.find(("a"):rep(40), ("a*"):rep(20) .. "b")"#),
        ("gsub backtracking", #"string.gsub(("a"):rep(40), ("a*"):rep(20) .. "b", "")"#),
        ("gmatch backtracking", #"for _ in (("a"):rep(40)):gmatch(("a*"):rep(20) .. "b") do end"#),
        ("find quadratic", #"(("a"):rep(1e6)):find(".-b")"#),
        ("table.move", "table.move({}, 1, math.maxinteger - 1, 1)"),
        ("table.remove", "table.remove(setmetatable({}, {__len = function() return math.maxinteger end}), 1)"),
        ("xpcall handler", #"xpcall(function() error("x") end, function(m) while true do end end)"#),
        ("hook", "debug.sethook(function() while true do end end, 'l')\nlocal x = 1"),
        ("__gc", #"setmetatable({}, {__gc = function() while true do end end}) collectgarbage()"#),
        ("many __gc", #"for i = 1, 100 do setmetatable({}, {__gc = function() while true do end end}) end collectgarbage()"#),
        ("__close", #"local x <close> = setmetatable({}, {__close = function() while true do end end}) error("y")"#),
        ("error's __tostring", "error(setmetatable({}, {__tostring = function() while true do end end}))"),
        // Blocking calls nest at most 200 deep (a Lua stack overflow past that): a coroutine in
        // each level takes the running states past 256.
        ("nested syncs", """
            local d = require("dispatch")
            local function g(n)
              if n == 0 then while true do end end
              coroutine.wrap(function() d.global():sync(function() g(n - 1) end) end)()
            end
            g(150)
            """),
        ("a long C loop in a block", """
            local d = require("dispatch")
            d.global():async(function() string.find(("a"):rep(40), ("a*"):rep(20) .. "b") end)
            """),
        ("concurrent_map tasks", #"require("dispatch").concurrent_map(5e6, function() end, {chunk = 1})"#),
        // Signals that each re-marked 240,000 calls held the collection back for ever.
        ("full collections on a deep stack", """
            local t = {} for i = 1, 5e5 do t[i] = {} end
            local function f(n) if n == 0 then while true do collectgarbage() end end return 1 + f(n - 1) end
            f(240000)
            """),
    ]

    func testEachEndsWithTheLimitsErrorWithinHalfASecond() throws {
        for (what, code) in Self.attacks {
            // A runtime each: the finalizers of one would run again in the next script.
            let rt = TestRuntimes.make(limits: .init(time: 0.5))
            let started = DispatchTime.now()
            do {
                _ = try rt.run(string: code)
                if !rt.waitUntilIdle(timeout: 10) { XCTFail("\(what): still running") }
                XCTAssertEqual(rt.lastTerminationKind, .timeLimit, what)
            } catch {
                XCTAssertEqual(error.kind, .timeLimit, "\(what): \(error)")
                XCTAssertTrue(error.message.contains("time limit exceeded"), "\(what): \(error.message)")
            }
            let took = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            // 0.5 s of limit and 0.5 s promised; the rest is a loaded machine's. Under
            // AddressSanitizer beside CI's other runs, building the deep stack's 500,000 tables
            // and the collections took 2.3 s in all (0.8 s idle; 21 s when the collection could
            // not go on).
            XCTAssertLessThan(took, underAddressSanitizer ? 4.0 : 2.0, what)
            XCTAssertTrue(rt.waitUntilIdle(timeout: 10), "\(what): the ended script's work drained")
            rt.close()
        }
    }

    /// `interrupt()` ends a long C loop as it ends Lua code.
    func testInterruptEndsALongCLoop() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { rt.interrupt() }
        let started = DispatchTime.now()
        do {
            _ = try rt.run(string: #"return string.find(("a"):rep(40), ("a*"):rep(20) .. "b")"#)
            XCTFail("not ended")
        } catch {
            XCTAssertEqual(error.kind, .interrupted, "\(error)")
        }
        XCTAssertLessThan(Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9, 3)
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        XCTAssertEqual(try rt.run(string: "return ('x'):rep(3)"), [.string("xxx")])
    }
}
