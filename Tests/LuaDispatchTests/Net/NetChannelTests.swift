import Foundation
import XCTest
@testable import LuaDispatch

/// `dispatch.io` channels and one-shot operations on sockets: both directions at once at full
/// speed (libdispatch alone stalls them), order per direction, half-close, resets, closing with
/// writes pending. Every peer is on loopback.
final class NetChannelTests: XCTestCase {
    /// An echo server in Lua: a read source on a listening socket, a channel per connection
    /// writing back each chunk it reads and half-closing after the last. Defines `port` and
    /// `stop_server()`; `served` counts the connections that ended (on `accepts`).
    static let echoServer = """
        local net = dispatch.net
        local lfd, port = assert(net.listen{backlog = 1024})
        local accepts = dispatch.queue("accepts")
        local server = dispatch.queue{label = "server", concurrent = true}
        local served = 0
        local listener = dispatch.source.read{fd = lfd, queue = accepts}
        listener:set_event_handler(function()
          while true do
            local c = net.accept(lfd)
            if not c then return end
            local ch = dispatch.io{fd = c, queue = server, cleanup = function()
              dispatch.fd.close(c)
              accepts:async(function() served = served + 1 end)
            end}
            ch:read(0, math.huge, server, function(done, data, err)
              if #data > 0 then ch:write(0, data, server, function() end) end
              if done then
                ch:barrier(function() net.shutdown(c, "write") end)
                ch:close()
              end
            end)
          end
        end)
        listener:resume()
        local function stop_server() listener:cancel(); dispatch.fd.close(lfd) end

        -- size bytes that differ for each connection `i` and never repeat within one.
        local function payload(i, size)
          local parts = {}
          for k = 1, size // 8 do parts[k] = string.pack("<i8", k * 2654435761 + i) end
          return dispatch.data(table.concat(parts))
        end

        """

    /// A client: connects, writes `data` (half-closing once written), reads the echo to EOF;
    /// `fn(ok, what)` runs on `queue` with whether the echo matched byte for byte.
    static let echoClient = """
        local function echo(queue, data, fn)
          net.connect({port = port}, queue, function(fd, err)
            if not fd then return fn(false, err) end
            local got = dispatch.data()
            local ch = dispatch.io{fd = fd, queue = queue, cleanup = function() dispatch.fd.close(fd) end}
            ch:write(0, data, queue, function(done, _, werr)
              if done then net.shutdown(fd, "write") end
            end)
            ch:read(0, math.huge, queue, function(done, chunk, rerr)
              got = got .. chunk
              if done then
                ch:close()
                fn(rerr == 0 and got == data, rerr == 0 and (#got .. " of " .. #data) or dispatch.errno_name(rerr))
              end
            end)
          end)
        end

        """

    /// `connected(q, fn)`: runs `fn(fd, c)` on `q` with both ends of a new loopback connection.
    static let connected = """
        local net = dispatch.net
        local function connected(q, fn)
          local lfd, port = net.listen{}
          net.connect({port = port}, q, function(fd, err)
            assert(fd, err)
            local c; repeat c = net.accept(lfd) until c
            dispatch.fd.close(lfd)
            fn(fd, c)
          end)
        end

        """

    override func setUp() {
        // 1,000 connections at once take about 6,000 descriptors (each end's own and the
        // runtime's two duplicates): use what the hard limit allows.
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
    }

    /// The load test: 1,000 connections at once echoing 64 KiB each and 4 echoing 8 MiB each,
    /// byte for byte, in one process. One channel per socket reading and writing at once:
    /// without a descriptor per direction libdispatch stalls these (0 of 4 in 30 s).
    func testEchoLoadByteForByte() {
        let run = runLua(Self.echoServer + Self.echoClient + """
            local clients = dispatch.queue{label = "clients", concurrent = true}
            local tally = dispatch.queue("tally")
            local results = {small = 0, big = 0, bad = {}}
            local group = dispatch.group()
            local base = payload(0, 64 * 1024)
            local function start(kind, data)
              group:enter()
              echo(clients, data, function(ok, what)
                tally:async(function()
                  if ok then results[kind] = results[kind] + 1 else results.bad[#results.bad + 1] = what end
                  group:leave()
                end)
              end)
            end
            for i = 1, 4 do start("big", payload(i, 8 * 1024 * 1024)) end
            for i = 1, 1000 do start("small", dispatch.data(string.pack("<i8", i)) .. base:sub(9)) end
            group:notify(tally, function()
              t.record(results.small, results.big, #results.bad, results.bad[1])
              stop_server()
            end)
            """, timeout: 120)
        assertClean(run)
        XCTAssertEqual(run.records.first?.map(\.description), ["1000", "4", "0", "nil"])
    }

    /// `dispatch.io.read` and `dispatch.io.write` on one socket at once (writes go through a
    /// runtime channel, reads through the read lane), against the echo server. As with
    /// dispatch_read, a read completes with what has arrived: the client reads until end of file.
    func testOneShotReadAndWriteAtOnce() {
        let run = runLua(Self.echoServer + """
            local q = dispatch.queue{label = "client", concurrent = true}
            local data = payload(7, 4 * 1024 * 1024)
            net.connect({port = port}, q, function(fd)
              local g = dispatch.group()
              g:enter()
              dispatch.io.write(fd, data, q, function(remaining, err)
                t.record("written", #remaining, err)
                net.shutdown(fd, "write")
                g:leave()
              end)
              g:enter()
              local got = dispatch.data()
              local function read(chunk, err)
                got = got .. chunk
                if #chunk > 0 and err == 0 then return dispatch.io.read(fd, #data + 1, q, read) end
                t.record("read", #got == #data and got == data, err)
                g:leave()
              end
              dispatch.io.read(fd, #data + 1, q, read)
              g:notify(q, function() dispatch.fd.close(fd); stop_server() end)
            end)
            """, timeout: 60)
        assertClean(run)
        XCTAssertEqual(Set(run.records.map { $0.map(\.description).joined(separator: " ") }),
                       ["\"written\" 0 0", "\"read\" true 0"])
        XCTAssertEqual(IODescriptors.count, 0)
    }

    /// Operations in one direction keep their order: 300 numbered lines through a channel's
    /// writes and `dispatch.io.write` alternately, while the channel reads what the peer sends.
    func testOrderPerDirection() {
        let run = runLua(Self.connected + """
            local q = dispatch.queue{label = "q", concurrent = true}
            connected(q, function(fd, c)
              -- The peer: reads every line, then sends a megabyte back and closes.
              local peer = dispatch.io{fd = c, queue = q, cleanup = function() dispatch.fd.close(c) end}
              local text = dispatch.data()
              peer:read(0, math.huge, q, function(done, data)
                text = text .. data
                if done then
                  local lines = {}
                  for line in text:bytes():gmatch("[^\\n]+") do lines[#lines + 1] = line end
                  local inOrder = #lines == 300
                  for i = 1, #lines do inOrder = inOrder and lines[i] == "line " .. i end
                  t.record("peer got them in order", inOrder)
                  peer:write(0, string.rep("x", 1000000), q, function(wdone) if wdone then peer:close() end end)
                end
              end)
              local ch = dispatch.io{fd = fd, queue = q, cleanup = function() dispatch.fd.close(fd) end}
              local back = 0
              ch:read(0, math.huge, q, function(done, data)
                back = back + #data
                if done then t.record("read back", back); ch:close() end
              end)
              local written = 0
              local w = dispatch.queue("writes")   -- the submissions, in order
              for i = 1, 300 do
                local line = "line " .. i .. "\\n"
                local function wrote() w:async(function()
                  written = written + 1
                  if written == 300 then net.shutdown(fd, "write") end
                end) end
                if i % 2 == 0 then ch:write(0, line, q, function(done) if done then wrote() end end)
                else dispatch.io.write(fd, line, q, function() wrote() end) end
              end
            end)
            """, timeout: 60)
        assertClean(run)
        XCTAssertEqual(Set(run.records.map { $0.map(\.description).joined(separator: " ") }),
                       ["\"peer got them in order\" true", "\"read back\" 1000000"])
    }

    /// A barrier on a socket channel spans both directions: it runs once the write before it
    /// has completed (its bytes are at the peer), and the write after it starts only once the
    /// barrier has returned.
    func testBarrierSpansBothDirections() {
        let run = runLua(Self.connected + """
            local q = dispatch.queue("q")
            local state = dispatch.queue("state")
            local barrierDone = false
            connected(q, function(fd, c)
              local ch = dispatch.io{fd = fd, queue = q, cleanup = function() dispatch.fd.close(fd) end}
              ch:write(0, string.rep("a", 1000), q, function() end)
              ch:barrier(function()
                t.record("before the barrier, at the peer", #(dispatch.fd.read(c, 100000) or ""))
                dispatch.sleep(0.1)
                state:sync(function() barrierDone = true end)
              end)
              ch:write(0, string.rep("b", 1000), q, function(done)
                if done then
                  t.record("after the barrier", state:sync(function() return barrierDone end))
                  ch:close()
                  dispatch.fd.close(c)
                end
              end)
            end)
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records.map { $0.map(\.description).joined(separator: " ") },
                       ["\"before the barrier, at the peer\" 1000", "\"after the barrier\" true"])
    }

    /// `close` right after `barrier` (the echo server's last step): the channel's cleanup runs
    /// after the barrier, as libdispatch orders a channel's. Before, a socket channel's close
    /// went ahead of a barrier already under way: the cleanup closed the descriptor, its
    /// number went to a new connection, and the barrier's `shutdown` half-closed that one.
    func testCloseAfterBarrierWaitsForIt() {
        let run = runLua(Self.connected + """
            local q = dispatch.queue("q")
            local order = dispatch.queue("order")
            local events = {}
            local function note(e) order:sync(function() events[#events + 1] = e end) end
            connected(q, function(fd, c)
              local ch = dispatch.io{fd = fd, queue = q, cleanup = function()
                note("cleanup")
                dispatch.fd.close(fd)
                dispatch.fd.close(c)
                order:async(function() t.record(table.concat(events, " ")) end)
              end}
              ch:write(0, "x", q, function() end)
              ch:barrier(function()
                note("barrier")
                dispatch.sleep(0.2)
                note("barrier done")
              end)
              ch:close()
            end)
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records.map { $0.map(\.description).joined(separator: " ") },
                       ["\"barrier barrier done cleanup\""])
    }

    /// Half-close both ways: the client half-closes and still reads the reply; the server
    /// half-closes while the client still writes, and the client's read handler gets EOF first.
    func testHalfClose() {
        let run = runLua(Self.connected + """
            local q = dispatch.queue("q")
            connected(q, function(fd, c)
              local server = dispatch.io{fd = c, queue = q, cleanup = function() dispatch.fd.close(c) end}
              local client = dispatch.io{fd = fd, queue = q, cleanup = function() dispatch.fd.close(fd) end}
              -- The server says hello and half-closes at once, then reads the request to EOF.
              server:write(0, "hello", q, function(done) if done then net.shutdown(c, "write") end end)
              local request = ""
              server:read(0, math.huge, q, function(done, data, err)
                request = request .. data:bytes()
                if done then t.record("server read", request, err); server:close() end
              end)
              -- The client reads to EOF (the server's half-close), then still writes its request.
              local hello = ""
              client:read(0, math.huge, q, function(done, data, err)
                hello = hello .. data:bytes()
                if done then
                  t.record("client read", hello, err)
                  client:write(0, "request after EOF", q, function(wdone, _, werr)
                    if wdone then
                      t.record("client wrote", werr)
                      net.shutdown(fd, "write")
                      client:close()
                    end
                  end)
                end
              end)
            end)
            """, timeout: 30)
        assertClean(run)
        XCTAssertEqual(run.records.map { $0.map(\.description).joined(separator: " ") },
                       ["\"client read\" \"hello\" 0", "\"client wrote\" 0", "\"server read\" \"request after EOF\" 0"])
    }

    /// A peer that resets the connection mid-stream (it closes with bytes unread, so the
    /// kernel sends RST): both handlers end, the reset reported (the kernel reports it once, to
    /// whichever direction asks first: the other sees end of file, or EPIPE for a write), the
    /// cleanup runs, and nothing is left behind.
    func testPeerResetMidStream() {
        let run = runLua(Self.connected + """
            local q = dispatch.queue("q")
            connected(q, function(fd, c)
              local ch = dispatch.io{fd = fd, queue = q, cleanup = function(err)
                dispatch.fd.close(fd)
                t.record("cleanup")
              end}
              ch:read(0, math.huge, q, function(done, data, err)
                if done then t.record("read", dispatch.errno_name(err)) end
              end)
              ch:write(0, string.rep("z", 64 * 1024 * 1024), q, function(done, remaining, err)
                if done then
                  t.record("write", dispatch.errno_name(err), #remaining > 0)
                  ch:close()
                end
              end)
              -- The peer takes a little of the stream and closes with the rest unread: once
              -- more has arrived (a close with nothing unread sends FIN, not RST, and the
              -- writer then sees EPIPE and the reader end of file, which a loaded machine
              -- made happen).
              dispatch.sleep(0.05)
              dispatch.fd.read(c, 1000)
              local unread = dispatch.source.read{fd = c, queue = q}
              unread:set_event_handler(function() unread:cancel() end)
              unread:set_cancel_handler(function() dispatch.fd.close(c) end)
              unread:resume()
            end)
            """, timeout: 30)
        assertClean(run)
        let lines = run.records.map { $0.map(\.description).joined(separator: " ") }
        XCTAssertEqual(lines.count, 3, "\(lines)")
        let read = lines.first { $0.hasPrefix("\"read\"") }, write = lines.first { $0.hasPrefix("\"write\"") }
        XCTAssertTrue(["\"read\" \"ECONNRESET\"", "\"read\" \"OK\""].contains(read), "\(lines)")
        XCTAssertTrue(["\"write\" \"EPIPE\" true", "\"write\" \"ECONNRESET\" true"].contains(write), "\(lines)")
        XCTAssertTrue(read!.contains("ECONNRESET") || write!.contains("ECONNRESET"), "the reset was not reported: \(lines)")
        XCTAssertEqual(lines.last, "\"cleanup\"")
        XCTAssertEqual(IODescriptors.count, 0)
    }

    /// A channel closed with writes pending: `close{stop=true}` ends them with ECANCELED at
    /// once, a plain `close` lets them finish first; either way the cleanup runs once and every
    /// descriptor is given back. (Both channels are on one descriptor: libdispatch runs the
    /// first one's cleanup once it lets go of the descriptor, after the second one closed.)
    func testCloseWithWritesPending() {
        // What the runtime keeps for good (the descriptor watcher's epoll) is made first.
        IOHarness().run("""
            local lfd, port = dispatch.net.listen{}
            dispatch.net.connect({port = port}, nil, function(fd) dispatch.fd.close(fd); dispatch.fd.close(lfd) end)
            """)
        let before = IOHarness.openDescriptorCount()
        let run = runLua(Self.connected + """
            local q = dispatch.queue("q")
            connected(q, function(fd, c)
              -- Nobody reads c: 64 MiB cannot all be written.
              local ch = dispatch.io{fd = fd, queue = q, cleanup = function(err)
                t.record("stopped cleanup", err)
              end}
              ch:write(0, string.rep("s", 64 * 1024 * 1024), q, function(done, remaining, err)
                if done then t.record("stopped write", dispatch.errno_name(err), #remaining > 0) end
              end)
              dispatch.sleep(0.05)
              ch:close{stop = true}
              dispatch.sleep(0.05)
              -- A plain close waits for the write, which completes once the peer reads.
              local ch2 = dispatch.io{fd = fd, queue = q, cleanup = function(err)
                t.record("plain cleanup", err)
                dispatch.fd.close(fd)
              end}
              ch2:write(0, string.rep("p", 4 * 1024 * 1024), q, function(done, remaining, err)
                if done then
                  t.record("plain write", err, #remaining)
                  net.shutdown(fd, "write")  -- the peer then reads to EOF
                end
              end)
              ch2:close()
              local drained = 0
              local peer = dispatch.io{fd = c, queue = dispatch.queue("peer"), cleanup = function()
                dispatch.fd.close(c)
              end}
              peer:read(0, math.huge, nil, function(done, data) if done then peer:close() end end)
            end)
            """, timeout: 30)
        assertClean(run)
        let lines = run.records.map { $0.map(\.description).joined(separator: " ") }
        XCTAssertEqual(lines.first, "\"stopped write\" \"ECANCELED\" true")
        XCTAssertEqual(lines.sorted(), [
            "\"plain cleanup\" 0", "\"plain write\" 0 0", "\"stopped cleanup\" 0", "\"stopped write\" \"ECANCELED\" true",
        ])
        XCTAssertEqual(IODescriptors.count, 0)
        XCTAssertEqual(IOHarness.openDescriptorCount(), before, "descriptors leaked")
    }
}
