import XCTest
@testable import LuaDispatch

/// What a script causes to be allocated outside Lua's own allocations is charged to the memory
/// limit, in a Swift host: bindings' results raise Lua's memory error (status LUA_ERRMEM, so
/// the end has the `.memoryLimit` kind), Swift-side copies and native objects are charged while
/// they live and given back when they go, and `lastTerminationKind` reports the end.
final class MemoryChargeTests: XCTestCase {
    private let limit = 16 << 20

    func testAMemoryLimitEndIsTheLastTerminationKind() throws {
        let rt = TestRuntimes.make(limits: .init(memory: limit))
        defer { rt.close() }
        do {
            try rt.run(string: "local t = {} while true do t[#t + 1] = {} end")
            XCTFail("the script was not ended")
        } catch {
            XCTAssertEqual(error.kind, .memoryLimit, "\(error)")
        }
        XCTAssertEqual(rt.lastTerminationKind, .memoryLimit)
        XCTAssertEqual(try rt.run(string: "return 1"), [.integer(1)])
        XCTAssertNil(rt.lastTerminationKind, "a new run starts clean")
    }

    /// Strings a binding returns with no Lua allocation between them (a table constructor's
    /// registers): the call that passes the limit raises Lua's own memory error, which `pcall`
    /// catches, and an uncaught one has the memory limit's kind.
    func testResultsOfBindingsRaiseTheMemoryError() throws {
        let rt = TestRuntimes.make(limits: .init(memory: limit))
        defer { rt.close() }
        let attack = """
            local d = require('dispatch')
            local q = d.queue(('x'):rep(2 << 20))
            local t
            q:sync(function()
                t = {d.current_label(), d.current_label(), d.current_label(), d.current_label(), d.current_label(),
                     d.current_label(), d.current_label(), d.current_label(), d.current_label(), d.current_label()}
            end)
            """
        XCTAssertEqual(try rt.run(string: "local ok, e = pcall(load(...)) return ok, e", arguments: [attack]),
                       [.boolean(false), .string("not enough memory")])
        do {
            try rt.run(string: attack)
            XCTFail("the script was not ended")
        } catch {
            XCTAssertEqual(error.kind, .memoryLimit, "\(error)")
            XCTAssertEqual(error.message, "not enough memory")
        }
        XCTAssertEqual(rt.lastTerminationKind, .memoryLimit)
    }

    /// A refused copy (a label bigger than what is left) is the memory error too.
    func testARefusedCopyIsTheMemoryError() throws {
        let rt = TestRuntimes.make(limits: .init(memory: limit))
        defer { rt.close() }
        XCTAssertEqual(try rt.run(string: """
            local d = require('dispatch')
            local s = ('x'):rep(6 << 20)
            local ok, e = pcall(d.queue, s)
            return ok, e
            """), [.boolean(false), .string("not enough memory")])
    }

    /// Objects are charged while they live and given back when collected: the count returns to
    /// where it was.
    func testChargesAreGivenBackWhenObjectsGo() throws {
        let rt = TestRuntimes.make(limits: .init(memory: 64 << 20))
        defer { rt.close() }
        _ = try rt.run(string: "collectgarbage() collectgarbage()")
        let before = rt.memoryInUse
        _ = try rt.run(string: """
            local d = require('dispatch')
            local t = {}
            for i = 1, 2000 do t[i] = d.queue(('q'):rep(1000)) end
            t[2001] = d.channel()
            for i = 1, 100 do t[2001]:send(('m'):rep(10000)) end
            _G.held = t
            """)
        let holding = rt.memoryInUse
        // 2,000 queues charge their object and two copies of the label each, 100 messages their bytes.
        XCTAssertGreaterThan(holding - before, 2000 * (NativeCost.queue + 2000) + 100 * 10000)
        _ = try rt.run(string: "_G.held = nil collectgarbage() collectgarbage()")
        XCTAssertLessThan(rt.memoryInUse - before, 256 << 10, "held \(holding - before), left \(rt.memoryInUse - before)")
    }
}
