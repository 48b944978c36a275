import Foundation
import XCTest

/// Switching under the CLI: the main chunk (run by lua.c's driver on the main Lua thread) gives
/// the interpreter up to a waiting block, and `LUADISPATCH_SWITCH_INTERVAL` sets the interval.
final class SwitchingCLITests: XCTestCase {
    private static let script = """
        local dispatch = require("dispatch")
        local ticks = 0
        local timer = dispatch.source.timer{interval = 0.01, queue = dispatch.queue("ticker"),
                                            handler = function() ticks = ticks + 1 end}
        timer:resume()
        dispatch.sleep(0.05)
        -- Switching on, until 15 ticks have run (10 s: only a chunk keeping the interpreter
        -- waits that long); off, for 0.5 s.
        local before, x = ticks, 0
        local deadline = dispatch.now() + (dispatch.switch_interval() > 0 and 10 or 0.5)
        while dispatch.now() < deadline and ticks - before < 15 do x = x + 1 end
        print(dispatch.switch_interval(), ticks - before >= 15, ticks - before <= 2)
        timer:cancel()
        """

    func testMainChunkSwitches() throws {
        let r = try CLI.run(["-e", Self.script], environment: ["LUADISPATCH_SWITCH_INTERVAL": "0.005"])
        XCTAssertEqual(r.stdout, "0.005\ttrue\tfalse\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    func testEnvironmentSetsTheInterval() throws {
        let off = try CLI.run(["-e", Self.script], environment: ["LUADISPATCH_SWITCH_INTERVAL": "0"])
        XCTAssertEqual(off.stdout, "0.0\tfalse\ttrue\n", off.stderr)
        let short = try CLI.run(["-e", Self.script], environment: ["LUADISPATCH_SWITCH_INTERVAL": "0.001"])
        XCTAssertEqual(short.stdout, "0.001\ttrue\tfalse\n", short.stderr)
    }

    func testUnreadableEnvironmentValueWarnsAndUsesTheDefault() throws {
        let r = try CLI.run(["-e", "print(require('dispatch').switch_interval())"],
                            environment: ["LUADISPATCH_SWITCH_INTERVAL": "soon"])
        XCTAssertEqual(r.stdout, "0.005\n")
        XCTAssertTrue(r.stderr.contains("LUADISPATCH_SWITCH_INTERVAL: a number of seconds >= 0 expected, got 'soon'"), r.stderr)
        XCTAssertEqual(r.status, 0)
    }
}
