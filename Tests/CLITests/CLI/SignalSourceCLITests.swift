import Foundation
import XCTest

/// Ctrl-C when a script watches SIGINT: the signal source owns it (the CLI's "interrupted!"
/// handling steps aside once a SIGINT source exists), during the main chunk and after it.
final class SignalSourceCLITests: XCTestCase {
    func testSIGINTSourceReceivesSelfSentSIGINTDuringAndAfterTheChunk() throws {
        let r = try CLI.run(["-e", """
            local dispatch = require("dispatch")
            local n = 0
            local s
            s = dispatch.source.signal{signal = "SIGINT", queue = dispatch.queue("q"), handler = function()
              n = n + s.data; print("SIGINT", n); if n >= 2 then s:cancel() end end}
            s:resume()
            dispatch.kill(dispatch.pid(), "SIGINT")
            dispatch.global():after(0.3, function() dispatch.kill(dispatch.pid(), "SIGINT") end)
            """], timeout: 30)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "SIGINT\t1\nSIGINT\t2\n")
    }

    func testCtrlCReachesASIGINTSourceInsteadOfInterrupting() throws {
        let r = try InterruptTests.interrupt(CLI.binary, """
            local dispatch = require("dispatch")
            local s
            s = dispatch.source.signal{signal = "SIGINT", queue = dispatch.main, handler = function()
              print("caught", s.data); s:cancel() end}
            s:resume()
            print("ready"); io.stdout:flush()
            """)
        XCTAssertEqual(r, InterruptTests.Outcome(status: 0, stdout: "ready\ncaught\t1\n", stderr: ""))
    }

    /// Without a SIGINT source, a self-sent SIGINT interrupts the chunk as in `lua`.
    func testWithoutASourceSIGINTStillInterrupts() throws {
        let r = try CLI.run(["-e", "local d = require('dispatch'); d.kill(d.pid(), 'SIGINT'); print('after')"], timeout: 30)
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stdout, "")
        XCTAssertTrue(r.stderr.contains("interrupted!"), r.stderr)
    }
}
