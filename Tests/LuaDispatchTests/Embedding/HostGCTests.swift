import Synchronization
import XCTest
@testable import LuaDispatch

/// A host type that counts its live instances.
final class Tracked: LuaUserData {
    static let live = Atomic<Int>(0)
    init() { Self.live.wrappingAdd(1, ordering: .relaxed) }
    deinit { Self.live.wrappingSubtract(1, ordering: .relaxed) }
    static let luaType = LuaType<Tracked>("Tracked") { _ in }
}

/// The `__gc` of host objects and host functions (reached through `debug.getmetatable` and
/// `debug.getupvalue`) releases only a userdata of its own kind: a time value, io.stdout or
/// another host type's object is left alone; a host function whose box it released raises.
final class HostGCTests: XCTestCase {
    func testHostObjectGCLeavesOtherValuesAlone() {
        let run = runLua("""
            local host = require("host")
            local a, l = host.account, host.ledger
            local _, box = debug.getupvalue(t.record, 2)
            for _, gc in ipairs{debug.getmetatable(a).__gc, debug.getmetatable(l).__gc, debug.getmetatable(box).__gc} do
              for _, v in ipairs{dispatch.now(), io.stdout, dispatch.queue("q"), dispatch.data("x"), 1, "s", {}} do gc(v) end
            end
            debug.getmetatable(l).__gc(a)
            debug.getmetatable(a).__gc(box)
            t.record(a.owner, l:size(), io.stdout:write("") == io.stdout)
            """, setup: { rt in
                rt.register(module: "host") { m in
                    m.value("account", LuaValue.object(Account(owner: "ann")))
                    m.value("ledger", LuaValue.object(Ledger()))
                }
            })
        assertClean(run)
        XCTAssertEqual(run.records.first, ["ann", 0, true])
    }

    /// A script calling the box's `__gc` itself leaves the box alone: the function still works.
    func testHostFunctionBoxGCCalledByAScriptLeavesIt() {
        let run = runLua("""
            local record = t.record
            local _, box = debug.getupvalue(record, 2)
            debug.getmetatable(box).__gc(box)
            record("still")
            """)
        assertClean(run)
        XCTAssertEqual(run.strings, ["still"])
    }

    /// The collector's own call still releases: a host object dropped by Lua is deinitialised.
    func testCollectedHostObjectsAreReleased() {
        let before = Tracked.live.load(ordering: .relaxed)
        let run = runLua("""
            local make = require("host").make
            for i = 1, 100 do make() end
            collectgarbage(); collectgarbage()
            """, setup: { rt in
                rt.register(module: "host") { m in m.function("make") { () in Tracked() } }
            })
        assertClean(run)
        XCTAssertEqual(Tracked.live.load(ordering: .relaxed), before)
    }
}
