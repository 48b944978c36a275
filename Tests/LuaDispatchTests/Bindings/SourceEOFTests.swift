import XCTest
@testable import LuaDispatch

/// End of file on read sources, and descriptors the runtime owns.
final class SourceEOFTests: XCTestCase {
    /// libdispatch drops a pipe's hang-up that comes without data (epoll reports EPOLLHUP alone):
    /// a handler waiting for "" waited for ever in about 2 runs of 3. Every run must see it,
    /// whether the writer closes right after writing or while the source is idle.
    func testPipeEOFIsDeliveredInEveryWriteThenCloseRun() {
        let out = IOHarness().run("""
            local ok, lost, bytes = 0, 0, 0
            for i = 1, 1000 do
              local r, w = dispatch.fd.pipe()
              local q = dispatch.queue("eof")
              local done = dispatch.semaphore(0)
              local s
              s = dispatch.source.read{fd = r, queue = q, handler = function()
                local d = dispatch.fd.read(r, 4096)
                if d == "" then s:cancel() else bytes = bytes + #d end
              end, cancel_handler = function() dispatch.fd.close(r); done:signal() end}
              s:resume()
              dispatch.fd.write(w, "hello ")
              if i % 4 == 0 then dispatch.sleep(0.001) end
              dispatch.fd.write(w, "world")
              if i % 3 == 0 then dispatch.sleep(0.001) end
              dispatch.fd.close(w)
              if done:wait(5) then ok = ok + 1 else lost = lost + 1; s:cancel() end
            end
            t.emit(ok, lost, bytes)
            """)
        XCTAssertEqual(out, ["1000 0 11000"])
    }

    /// A hang-up while the source is suspended is delivered after `resume`, with data 0.
    func testHangUpWhileSuspendedIsDeliveredOnResume() {
        let out = IOHarness().run("""
            local r, w = dispatch.fd.pipe()
            local q = dispatch.queue("eof")
            local s
            s = dispatch.source.read{fd = r, queue = q, handler = function()
              t.emit("handler")  -- before the read, which blocks on an empty pipe
              local d = dispatch.fd.read(r, 4096)
              t.emit("event", s.data, d == "" and "eof" or d)
              if d == "" then s:cancel() end
            end, cancel_handler = function() dispatch.fd.close(r) end}
            local registered = dispatch.semaphore(0)
            s:set_registration_handler(function() registered:signal() end)
            s:resume()
            registered:wait()
            s:suspend()
            t.emit("closed", tostring(dispatch.fd.close(w)))
            dispatch.sleep(0.05)
            t.emit("suspended")
            s:resume()
            """)
        // (Once, under AddressSanitizer on a loaded machine, this gave ["event 0 eof",
        // "suspended"]; "handler" and "closed" say, should it happen again, whether a handler
        // started before the suspend and whether this close was the one that hung up.)
        XCTAssertEqual(out, ["closed true", "suspended", "handler", "event 0 eof"])
    }

    /// `suspend` holds back every handler that has not started, including one whose event was
    /// already on its way (written just before the suspend): no handler runs while the script
    /// has the source suspended, and every byte is still read after `resume`. The guarantee
    /// `testHangUpWhileSuspendedIsDeliveredOnResume` relies on; without the check in
    /// `SourceObject.deliver` this loop saw a handler run while suspended 1 to 6 times in 2000.
    /// The handler tells when it started by its first instruction, which holds only without
    /// switching: a handler switched out before that instruction could read the flag set by a
    /// `suspend` that came after it started. So this script runs cooperatively.
    func testSuspendHoldsBackAnEventAlreadyOnItsWay() {
        let out = IOHarness().run("""
            dispatch.switch_interval(0)
            local r, w = dispatch.fd.pipe()
            local q = dispatch.queue("in flight")
            local suspended, violations, got = false, 0, 0
            local s = dispatch.source.read{fd = r, queue = q, handler = function()
              if suspended then violations = violations + 1 end
              got = got + #dispatch.fd.read(r, 4096)
            end, cancel_handler = function() dispatch.fd.close(r) end}
            s:resume()
            local rounds = 2000
            for i = 1, rounds do
              dispatch.fd.write(w, "x")              -- an event on its way
              if i % 2 == 0 then dispatch.sleep(0.0002) end
              s:suspend(); suspended = true
              dispatch.sleep(0.0005)                 -- a handler not started by now must wait
              suspended = false; s:resume()
            end
            local deadline = dispatch.now() + 10
            while got < rounds and dispatch.now() < deadline do dispatch.sleep(0.01) end
            t.emit(violations, got)
            s:cancel()
            dispatch.fd.close(w)
            """)
        XCTAssertEqual(out, ["0 2000"])
    }

    /// The source watches its own copy of the descriptor: a script may close its descriptor
    /// right after `cancel`, and a new descriptor that gets the same number at once is watched
    /// by a new registration (libdispatch keys its epoll entries by number).
    func testCloseRightAfterCancelAndNumberReuse() {
        let out = IOHarness().run("""
            local q = dispatch.queue("reuse")
            local fired, reused, cancels = 0, 0, 0
            local r, w = dispatch.fd.pipe()
            local s = dispatch.source.read{fd = r, queue = q, handler = function() end,
              cancel_handler = function() cancels = cancels + 1 end}
            s:resume()
            for i = 1, 300 do
              s:cancel()
              dispatch.fd.close(r); dispatch.fd.close(w)     -- before the cancel handler ran
              local r2, w2 = dispatch.fd.pipe()
              if r2 == r then reused = reused + 1 end
              r, w = r2, w2
              local got = dispatch.semaphore(0)
              local rr = r
              s = dispatch.source.read{fd = r, queue = q, handler = function()
                dispatch.fd.read(rr, 64); fired = fired + 1; got:signal()
              end, cancel_handler = function() cancels = cancels + 1 end}
              s:resume()
              dispatch.fd.write(w, "x")
              got:wait(5)
            end
            s:cancel()
            dispatch.fd.close(r); dispatch.fd.close(w)
            dispatch.main:after(0.2, function() t.emit(fired, reused > 100, cancels) end)
            """)
        XCTAssertEqual(out, ["300 true 301"])
    }
}

/// Pipe channels next to sources, with descriptors closed as early as a careless script does.
final class PipeChannelTests: XCTestCase {
    func testPipeChannelReadsCompleteWithEarlyClosesAndNumberReuse() {
        let out = IOHarness().run("""
            local q = dispatch.queue("io")
            local tick = dispatch.source.timer{interval = 0.001, queue = dispatch.queue("tick"), handler = function() end}
            tick:resume()
            local ok, lost, bytes = 0, 0, 0
            for i = 1, 300 do
              local a, b = dispatch.fd.pipe()
              local rs = dispatch.source.read{fd = a, queue = q, handler = function() end}
              rs:resume(); rs:cancel(); dispatch.fd.close(a); dispatch.fd.close(b)
              local r, w = dispatch.fd.pipe()
              local done = dispatch.semaphore(0)
              local ch = dispatch.io{fd = r, queue = q}
              ch:read(0, 11, q, function(finished, data, err)
                if data then bytes = bytes + #data end
                if finished then done:signal() end
              end)
              dispatch.fd.write(w, "hello world")
              dispatch.fd.close(w)
              if done:wait(5) then ok = ok + 1 else lost = lost + 1 end
              ch:close()
              dispatch.fd.close(r)                 -- before the channel's cleanup ran
            end
            tick:cancel()
            t.emit(ok, lost, bytes)
            """)
        XCTAssertEqual(out, ["300 0 3300"])
    }
}
