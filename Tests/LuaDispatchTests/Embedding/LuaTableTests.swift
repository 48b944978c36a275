import Dispatch
import XCTest
@testable import LuaDispatch

/// Live tables: Swift reads what Lua wrote and Lua sees what Swift wrote, by reference.
final class LuaTableTests: XCTestCase {
    func testReadsAndWritesAreSeenBothWays() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        try rt.run(string: "state = {count = 1, items = {'a'}}; function bump() state.count = state.count + 1 end")
        let state = try rt.globals.get("state", as: LuaTable.self)
        XCTAssertEqual(try state.get("count"), 1)
        try rt.call("bump")
        XCTAssertEqual(try state.get("count", as: Int.self), 2, "a copy would be stale here")
        try state.set("count", 10)
        try state.set("name", "from swift")
        let items = try state.get("items", as: LuaTable.self)
        try items.append("b")
        try items.set(3, ["nested": 1] as [String: Int])
        XCTAssertEqual(try rt.run(string: "return state.count, state.name, #state.items, state.items[2], state.items[3].nested"),
                       [10, "from swift", 3, "b", 1])
        XCTAssertEqual(try items.count, 3)
        XCTAssertEqual(try state.entries().map(\.key.stringValue).compactMap { $0 }.sorted(), ["count", "items", "name"])
        XCTAssertEqual(try state.get("items"), ["a", "b", ["nested": 1]], "get without a type copies")
    }

    /// get and set go through metamethods (in protected mode); the raw forms do not.
    func testMetamethodsAndTheirErrors() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        try rt.run(string: """
            log = {}
            proxy = setmetatable({}, {
              __index = function(_, k) if k == 'boom' then error('no ' .. k) end return 'default ' .. k end,
              __newindex = function(t, k, v) log[#log + 1] = k; rawset(t, k, v) end,
              __len = function() return 42 end,
            })
            """, name: "=setup")
        let proxy = try rt.globals.get("proxy", as: LuaTable.self)
        XCTAssertEqual(try proxy.get("x", as: String.self), "default x")
        XCTAssertEqual(try proxy.rawGet("x", as: String?.self), nil)
        try proxy.set("y", 1)
        try proxy.rawSet("z", 2)
        XCTAssertEqual(try rt.run(string: "return #log, log[1], proxy.z"), [1, "y", 2])
        XCTAssertEqual(try proxy.length(), 42)
        XCTAssertEqual(try proxy.count, 0)
        XCTAssertThrowsError(try proxy.get("boom")) { e in
            let error = e as! LuaScriptError
            XCTAssertEqual(error.message, "setup:3: no boom")
            XCTAssertTrue(error.traceback.contains("setup:3:"), error.traceback)
        }
        XCTAssertThrowsError(try proxy.rawSet(.nil, 1)) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "table index is nil")
        }
    }

    func testConversionErrorsNameTheKey() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        try rt.run(string: "config = {port = 'eighty', servers = {{port = 80}, {port = 'x'}}}")
        let config = try rt.globals.get("config", as: LuaTable.self)
        XCTAssertThrowsError(try config.get("port", as: Int.self)) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "port: number expected, got string")
        }
        XCTAssertThrowsError(try config.get("servers", as: [[String: Int]].self)) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "servers[2].port: number expected, got string")
        }
        let servers = try config.get("servers", as: LuaTable.self)
        XCTAssertThrowsError(try servers.get(2, as: [String: Int].self)) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "[2].port: number expected, got string")
        }
    }

    /// A table made by Swift, filled from several threads while Lua reads it: each write is one
    /// access under the interpreter, so none is lost.
    func testWritesFromManyThreads() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let table = try rt.makeTable()
        try rt.globals.set("shared", table)
        DispatchQueue.concurrentPerform(iterations: 1000) { i in try! table.set(.integer(i + 1), i) }
        XCTAssertEqual(try rt.run(string: "local s = 0; for i = 1, #shared do s = s + shared[i] end; return #shared, s"),
                       [1000, .integer(999 * 1000 / 2)])
        XCTAssertEqual(try rt.globals.get("shared", as: LuaTable.self), table)
    }
}
