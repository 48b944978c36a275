import Dispatch
import Foundation
import Synchronization
import XCTest
@testable import LuaDispatch

/// `dispatch.io.read` on a pipe completes with what has arrived, as libdispatch's `dispatch_read`
/// does (its convenience read "completes on EAGAIN" once it has data), instead of waiting for
/// the whole length; reads queued on one pipe take turns.
final class IOStreamReadTests: XCTestCase {
    /// The reference, side by side: plain Swift's `DispatchIO.read` on a pipe that got 3 bytes
    /// delivers them while the writer is still open.
    func testNativeReadOnAPipeDeliversWhatHasArrived() {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let got = DispatchSemaphore(value: 0)
        let size = Mutex(-1)
        DispatchIO.read(fromFileDescriptor: fds[0], maxLength: 100, runningHandlerOn: .global()) { data, _ in
            size.withLock { $0 = data.count }
            got.signal()
        }
        _ = "abc".withCString { write(fds[1], $0, 3) }
        XCTAssertEqual(got.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(size.withLock { $0 }, 3)
    }

    func testOneShotReadOnAPipeDeliversWhatHasArrived() {
        let out = IOHarness().run("""
            local r, w = dispatch.fd.pipe()
            local got = dispatch.semaphore(0)
            dispatch.io.read(r, 100, dispatch.global(), function(data, err)
              t.emit(#data, data:bytes(), err)
              got:signal()
            end)
            dispatch.fd.write(w, "abc")
            t.emit(got:wait(5))
            dispatch.fd.close(w)
            dispatch.io.read(r, 100, dispatch.global(), function(data, err)
              t.emit("eof", #data, err)
              dispatch.fd.close(r)
            end)
            """)
        XCTAssertEqual(out, ["3 abc 0", "true", "eof 0 0"])
    }

    /// Five reads queued at once on a pipe: each gets the piece written after the previous one
    /// was delivered, in submission order; a read never takes what a later one should.
    func testQueuedReadsOnAPipeTakeTurns() {
        let out = IOHarness().run("""
            local r, w = dispatch.fd.pipe()
            local delivered = dispatch.semaphore(0)
            local results, got = dispatch.queue("results"), {}
            for i = 1, 5 do
              dispatch.io.read(r, 100, dispatch.global(), function(data, err)
                results:sync(function() got[i] = data:bytes() end)
                delivered:signal()
              end)
            end
            for i = 1, 5 do
              dispatch.fd.write(w, string.rep(string.char(96 + i), i))
              delivered:wait(5)
            end
            dispatch.fd.close(w)
            dispatch.fd.close(r)
            t.emit(table.concat(got, ","))
            """)
        XCTAssertEqual(out, ["a,bb,ccc,dddd,eeeee"])
    }
}
