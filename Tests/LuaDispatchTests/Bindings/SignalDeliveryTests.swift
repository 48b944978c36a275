import XCTest
@testable import LuaDispatch
import CLuaShim

#if canImport(Glibc)
import Glibc
#endif

/// Signals sent to the process reach the signal sources watching them, whichever thread the
/// kernel picks and however soon after `resume` they are sent. Each test uses signals no other
/// test watches: libdispatch installs its own forwarding handler the first time a signal is
/// registered in the process, so only a signal's first source shows the registration window.
final class SignalDeliveryTests: XCTestCase {
    /// A signal sent right after `resume`, before libdispatch registered the source, was
    /// discarded (the disposition was SIG_IGN and no thread blocked it): 4 runs in 5 lost it.
    func testSignalSentRightAfterResumeReachesAFirstSource() {
        let out = IOHarness().run("""
            local got = {}
            for sig = 40, 47 do
              local q = dispatch.queue("sig" .. sig)
              local sem = dispatch.semaphore(0)
              local s
              s = dispatch.source.signal{signal = sig, queue = q,
                handler = function() got[#got + 1] = sig .. ":" .. s.data; s:cancel(); sem:signal() end}
              s:resume()
              dispatch.kill(dispatch.pid(), sig)
              if not sem:wait(5) then got[#got + 1] = sig .. ":lost"; s:cancel() end
            end
            t.emit(table.concat(got, " "))
            """)
        XCTAssertEqual(out, [(40...47).map { "\($0):1" }.joined(separator: " ")])
        XCTAssertTrue((40...47).allSatisfy { ld_signal_forwarding($0) == 0 }, "libdispatch's handler replaces the runtime's on registration")
    }

    /// 1,000 signals, each sent once the previous one was handled: every one is counted.
    func testThousandSelfSentSignalsAreAllCounted() {
        let out = IOHarness().run("""
            local q = dispatch.queue("sig48")
            local sem = dispatch.semaphore(0)
            local runs, total, lost = 0, 0, 0
            local s
            s = dispatch.source.signal{signal = 48, queue = q,
              handler = function() runs = runs + 1; total = total + s.data; sem:signal() end}
            s:resume()
            for i = 1, 1000 do
              dispatch.kill(dispatch.pid(), 48)
              if not sem:wait(5) then lost = lost + 1 end
            end
            s:cancel()
            t.emit(runs, total, lost)
            """)
        XCTAssertEqual(out, ["1000 1000 0"])
    }

    /// A handler the host installed is the host's: the runtime does not replace it.
    func testHostHandlerIsLeftAlone() {
        var old = sigaction()
        var mine = sigaction()
        mine.__sigaction_handler.sa_handler = { _ in }
        sigaction(50, &mine, &old)
        XCTAssertEqual(SignalHub.prepare(50), nil)
        XCTAssertEqual(ld_signal_forwarding(50), 0)
        var now = sigaction()
        sigaction(50, nil, &now)
        XCTAssertNotNil(now.__sigaction_handler.sa_handler)
        XCTAssertEqual(SignalHub.prepare(51), nil)
        XCTAssertEqual(ld_signal_forwarding(51), 1)
    }
}
