import XCTest
@testable import LuaDispatch
import CLua
import CLuaShim

#if canImport(Glibc)
import Glibc
#endif

/// The interpreter's request word (CLuaShim/control/requests.c) for Ctrl-C: the SIGINT handler
/// only sets bits and hooks the main Lua thread; "interrupted!" is raised once, by whoever acts
/// first (the hook at the next instruction, or a wait that clears it), and the process-wide count
/// of stop requests goes back to where it was.
final class RequestsTests: XCTestCase {
    /// Runs `code` on `L` in a protected call, as the CLI does: nil when it ran, else its error.
    private func run(_ L: OpaquePointer, _ code: String) -> String? {
        guard luaL_loadstring(L, code) == LUA_OK, lua_pcallk(L, 0, 0, 0, 0, nil) == LUA_OK else {
            defer { lua_settop(L, 0) }
            return lua_tolstring(L, -1, nil).map { String(cString: $0) } ?? "?"
        }
        return nil
    }

    /// SIGINT, delivered to this (the main) thread while `L` is armed; the handler is reset to the
    /// default afterwards, as lua.c's is.
    private func ctrlC(_ rt: Runtime, _ L: OpaquePointer) {
        ld_interrupt_arm(L, rt.lock)
        raise(SIGINT)
        ld_interrupt_disarm()
    }

    func testTheHookRaisesCtrlCOnceAtTheNextInstruction() {
        let rt = TestRuntimes.make()
        let before = ld_stop_request_count()
        rt.withMainLuaThread { L in
            ctrlC(rt, L)
            XCTAssertEqual(ld_interrupt_pending(rt.lock), 1)
            XCTAssertEqual(ld_stop_request_count(), before + 1, "a stop request is counted while pending")
            // The eventfd's reader sees it once; it stays pending for the hook.
            XCTAssertEqual(ld_interrupt_take(rt.lock), 1)
            XCTAssertEqual(ld_interrupt_take(rt.lock), 0)
            XCTAssertEqual(ld_interrupt_pending(rt.lock), 1)
            XCTAssertEqual(run(L, "local x = 1"), "interrupted!")
            XCTAssertEqual(ld_interrupt_pending(rt.lock), 0)
            XCTAssertNil(run(L, "local x = 1"), "one Ctrl-C, one error")
        }
        XCTAssertEqual(ld_stop_request_count(), before)
    }

    func testACtrlCClearedByAWaitRaisesNothingMore() {
        let rt = TestRuntimes.make()
        let before = ld_stop_request_count()
        rt.withMainLuaThread { L in
            ctrlC(rt, L)
            XCTAssertEqual(ld_interrupt_clear(rt.lock), 1, "the wait raises it")
            XCTAssertEqual(ld_interrupt_clear(rt.lock), 0)
            XCTAssertEqual(ld_interrupt_take(rt.lock), 0, "nothing left for the eventfd's reader")
            XCTAssertNil(run(L, "local x = 1"))
        }
        XCTAssertEqual(ld_stop_request_count(), before)
    }

    func testAClosingRuntimeDropsItsRequests() {
        let rt = TestRuntimes.make()
        let before = ld_stop_request_count()
        rt.withMainLuaThread { L in ctrlC(rt, L) }
        XCTAssertEqual(ld_stop_request_count(), before + 1)
        ld_interrupt_forget(rt.lock)
        XCTAssertEqual(ld_interrupt_pending(rt.lock), 0)
        XCTAssertEqual(ld_stop_request_count(), before)
        // No target any more: a SIGINT now only resets the handler.
        rt.withMainLuaThread { L in XCTAssertNil(run(L, "local x = 1")) }
    }
}
