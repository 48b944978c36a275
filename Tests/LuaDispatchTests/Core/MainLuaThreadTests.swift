import XCTest
@testable import LuaDispatch

/// A chunk the host runs from the main OS thread runs on the interpreter's main Lua thread,
/// under lua.c's message handler, as `lua` runs its script.
final class MainLuaThreadTests: XCTestCase {
    func testTheChunkRunsOnTheMainLuaThread() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let r = try rt.run(string: """
            local co, ismain = coroutine.running()
            local ok, msg = pcall(coroutine.yield)
            return ismain, msg
            """)
        XCTAssertEqual(r, [.boolean(true), .string("attempt to yield from outside a coroutine")])
        let again = try rt.run(string: "return select(2, coroutine.running())")
        XCTAssertEqual(again, [.boolean(true)], "the main Lua thread is free again after a run")
    }

    func testAReaderThatRaisesGivesLoadAMessageNotATable() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let r = try rt.run(string: """
            local f, msg = load(function() error("hhi") end)
            return f, type(msg), msg:match("hhi") ~= nil
            """)
        XCTAssertEqual(r, [.nil, .string("string"), .boolean(true)])
    }

    func testErrorValuesAsLuaReportsThem() {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        XCTAssertThrowsError(try rt.run(string: "error('boom')", name: "=x")) { e in
            let e = e as! LuaScriptError
            XCTAssertEqual(e.message, "x:1: boom")
            XCTAssertTrue(e.traceback.hasPrefix("stack traceback:\n\t[C]: in function 'error'"), e.traceback)
        }
        XCTAssertThrowsError(try rt.run(string: "error(setmetatable({}, {__tostring = function() return 'custom' end}))")) { e in
            XCTAssertEqual((e as! LuaScriptError).message, "custom")
        }
        XCTAssertThrowsError(try rt.run(string: "error({})")) { e in
            XCTAssertEqual((e as! LuaScriptError).message, "(error object is a table value)")
        }
        // A message that quotes an older traceback keeps it; the last one is the handler's.
        XCTAssertThrowsError(try rt.run(string: "error('a\\nstack traceback:\\n\\told', 0)")) { e in
            let e = e as! LuaScriptError
            XCTAssertEqual(e.message, "a\nstack traceback:\n\told")
            XCTAssertTrue(e.traceback.contains("[C]: in function 'error'"), e.traceback)
        }
    }
}
