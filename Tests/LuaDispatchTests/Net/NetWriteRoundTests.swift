import XCTest
@testable import LuaDispatch

/// Writes made by a poller's callbacks wait for the end of the round and go out together
/// (`NetPoller.corking`): what a script sees of that, and that closing, half-closing, write
/// callbacks and `on_drain` behave as when each write went out at once.
final class NetWriteRoundTests: XCTestCase {
    /// A reply written in a data callback is held until the round's callbacks have run; a write
    /// from elsewhere (a main-queue block) goes out at once.
    func testRepliesWaitForTheEndOfTheRound() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local server
            server = assert(net.serve({port = 0}, function(conn)
              conn:on_data(function(data)
                if not data then conn:close(); server:close(); return end
                assert(conn:write("pong"))
                t.emit("held in the round", conn.write_queue_size)
                dispatch.main:async(function()
                  t.emit("written after it", conn.write_queue_size)
                  assert(conn:write("!"))
                  t.emit("outside a round", conn.write_queue_size)
                end)
              end)
            end))
            net.dial({port = server.port}, function(c)
              assert(c:write("ping"))
              local got = ""
              c:on_data(function(data)
                got = got .. (data or "")
                if got == "pong!" then t.emit("client got " .. got); c:close() end
              end)
            end)
            """)
        XCTAssertEqual(out, ["held in the round 4", "written after it 0", "outside a round 0", "client got pong!"])
    }

    /// Held writes keep their order; their callbacks run after the data callback, in order;
    /// `on_drain` stays quiet, since the socket never made the queue wait.
    func testHeldWritesKeepOrderAndCallbacks() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local server
            server = assert(net.serve({port = 0}, function(conn)
              conn:on_drain(function() t.emit("drain") end)
              conn:on_data(function(data)
                if not data then conn:close(); server:close(); return end
                conn:write("a", function() t.emit("a written") end)
                conn:write("b", function() t.emit("b written") end)
                t.emit("callback returns")
              end)
            end))
            net.dial({port = server.port}, function(c)
              c:write("x")
              local got = ""
              c:on_data(function(data)
                got = got .. (data or "")
                if #got >= 2 then t.emit("client got " .. got); c:close() end
              end)
            end)
            """)
        XCTAssertEqual(out.filter { $0 != "client got ab" }, ["callback returns", "a written", "b written"])
        XCTAssertTrue(out.contains("client got ab"), "\(out)")
    }

    /// A reply followed at once by `close()`, `close{now = true}` or `shutdown()` reaches the
    /// peer, then the end of the stream.
    func testCloseAndShutdownAfterAHeldWrite() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local server, ended = nil, 0
            server = assert(net.serve({port = 0}, function(conn)
              conn:on_data(function(data)
                if not data then
                  conn:close()
                  ended = ended + 1
                  if ended == 3 then server:close() end
                  return
                end
                conn:write("bye:" .. data)
                if data == "close" then conn:close()
                elseif data == "now" then conn:close{now = true}
                else conn:shutdown() end
                if data ~= "half" then
                  ended = ended + 1
                  if ended == 3 then server:close() end
                end
              end)
            end))
            for _, how in ipairs{"close", "now", "half"} do
              net.dial({port = server.port}, function(c)
                c:write(how)
                local got = ""
                c:on_data(function(data)
                  if data then got = got .. data; return end
                  t.emit(how .. " got " .. got .. ", then the end")
                  c:close()
                end)
              end)
            end
            """)
        XCTAssertEqual(Set(out), ["close got bye:close, then the end", "now got bye:now, then the end",
                                  "half got bye:half, then the end"])
    }

    /// A write larger than a round holds goes to the socket at once, as outside a round.
    func testALargeWriteGoesOutAtOnce() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local big = string.rep("x", 1 << 20)
            local server
            server = assert(net.serve({port = 0}, function(conn)
              conn:on_data(function(data)
                if not data then conn:close(); server:close(); return end
                conn:write(big)
                t.emit("the socket took some at once", conn.write_queue_size < #big)
              end)
            end))
            net.dial({port = server.port}, function(c)
              c:write("go")
              local got = 0
              c:on_data(function(data)
                got = got + #(data or "")
                if got == #big then t.emit("client got all"); c:close() end
              end)
            end)
            """)
        XCTAssertEqual(out, ["the socket took some at once true", "client got all"])
    }
}
