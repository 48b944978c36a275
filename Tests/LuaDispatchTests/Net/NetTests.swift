import Foundation
import XCTest
@testable import LuaDispatch

/// `dispatch.net`: sockets made, connected and refused; every peer is on loopback or a
/// Unix-domain path in a temporary directory.
final class NetTests: XCTestCase {
    func testTCPListenConnectAccept() throws {
        let h = IOHarness()
        let out = h.run("""
            local net = dispatch.net
            local lfd, port = net.listen{}
            t.emit("listen", math.type(lfd), port > 0)
            t.emit("idle", net.accept(lfd))
            local q = dispatch.queue("net.client")
            net.connect({host = "127.0.0.1", port = port}, q, function(fd, err)
              t.emit("connected", math.type(fd), err, dispatch.current_label())
              local c, peer
              repeat c, peer = net.accept(lfd) until c
              t.emit("peer", peer:match("^127%.0%.0%.1:(%d+)$") ~= nil)
              t.emit("write", dispatch.fd.write(fd, "ping"))
              local got = ""
              repeat got = got .. (dispatch.fd.read(c, 10) or "") until #got == 4
              t.emit("read", got)
              t.emit("fds", fd, c, lfd)
            end)
            """)
        XCTAssertEqual(Array(out.prefix(6)), [
            "listen integer true", "idle nil EAGAIN EAGAIN", "connected integer nil net.client", "peer true",
            "write 4", "read ping",
        ])
        let fds = try XCTUnwrap(out.last).split(separator: " ").dropFirst().compactMap { Int32($0) }
        XCTAssertEqual(fds.count, 3)
        for fd in fds {
            XCTAssertNotEqual(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "fd \(fd) is blocking")
            XCTAssertNotEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0, "fd \(fd) is not close-on-exec")
            close(fd)
        }
    }

    func testIPv6LoopbackAndNames() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd, port = net.listen{host = "::1"}
            local q = dispatch.queue("net.client")
            net.connect({host = "[::1]", port = port}, q, function(fd, err)
              local c, peer
              repeat c, peer = net.accept(lfd) until c
              t.emit("v6", math.type(fd), peer:match("^%[::1%]:%d+$") ~= nil)
              dispatch.fd.close(fd); dispatch.fd.close(c); dispatch.fd.close(lfd)
            end)
            -- "localhost" goes through the resolver (without the interpreter held).
            local l4, p4 = net.listen{host = "localhost"}
            net.connect({host = "localhost", port = p4}, q, function(fd, err)
              t.emit("name", math.type(fd), err)
              dispatch.fd.close(fd); dispatch.fd.close(l4)
            end)
            """)
        XCTAssertEqual(out.sorted(), ["name integer nil", "v6 integer true"])
    }

    func testUnixDomain() {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/s.sock"
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd, p = net.listen{path = \(IOHarness.lua(path))}
            t.emit("path", p == \(IOHarness.lua(path)))
            t.emit("again", select(3, net.listen{path = \(IOHarness.lua(path))}))
            net.connect({path = \(IOHarness.lua(path))}, dispatch.queue("u"), function(fd, err)
              local c, peer
              repeat c, peer = net.accept(lfd) until c
              t.emit("peer", peer == \(IOHarness.lua(path)))
              dispatch.fd.write(c, "over unix")
              local got = ""
              repeat got = got .. (dispatch.fd.read(fd, 100) or "") until #got == 9
              t.emit(got)
              dispatch.fd.close(fd); dispatch.fd.close(c); dispatch.fd.close(lfd)
              os.remove(\(IOHarness.lua(path)))
              net.connect({path = \(IOHarness.lua(path))}, dispatch.queue("u"), function(fd, err, code)
                t.emit("gone", fd, code, err:find("ENOENT", 1, true) ~= nil)
              end)
            end)
            """)
        XCTAssertEqual(out, ["path true", "again EADDRINUSE", "peer true", "over unix", "gone nil ENOENT true"])
    }

    /// A full backlog makes a Unix-domain connect fail at once with EAGAIN (TCP waits instead):
    /// the connect tries again until the listener accepts.
    func testUnixConnectWaitsForAFullBacklog() {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = IOHarness.lua(dir + "/b.sock")
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd = net.listen{path = \(path), backlog = 0}
            local q, n, fds = dispatch.queue("clients"), 0, {}
            for i = 1, 6 do
              net.connect({path = \(path)}, q, function(fd, err)
                n = n + 1; fds[#fds + 1] = fd or err
                if n == 6 then
                  t.emit("connected", #fds, math.type(fds[1]), math.type(fds[6]))
                  for _, fd in ipairs(fds) do dispatch.fd.close(fd) end
                end
              end)
            end
            dispatch.sleep(0.3)
            q:sync(function() t.emit("before accepting", n < 6) end)
            local accepted = 0
            local src = dispatch.source.read{fd = lfd, queue = q}
            src:set_event_handler(function()
              while net.accept(lfd) do accepted = accepted + 1 end
              if accepted == 6 then
                t.emit("accepted", accepted)
                src:cancel(); dispatch.fd.close(lfd)
              end
            end)
            src:resume()
            """)
        XCTAssertEqual(out.count, 3, "\(out)")
        XCTAssertEqual(out.first, "before accepting true")
        XCTAssertEqual(Set(out.dropFirst()), ["connected 6 integer integer", "accepted 6"])
    }

    /// A TCP listener whose backlog is full drops new handshakes: those connects stay in
    /// progress (waiting in the runtime's descriptor watcher) until the listener accepts and the
    /// client's handshake is sent again (after about 1 s), then complete.
    func testTCPConnectInProgressCompletes() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd, port = net.listen{backlog = 1}
            local q, n, fds = dispatch.queue("clients"), 0, {}
            for i = 1, 4 do
              net.connect({port = port}, q, function(fd, err)
                n = n + 1; fds[#fds + 1] = fd or err
                if n == 4 then
                  local ok = 0
                  for _, fd in ipairs(fds) do if math.type(fd) == "integer" then ok = ok + 1; dispatch.fd.close(fd) end end
                  t.emit("connected", ok)
                end
              end)
            end
            dispatch.sleep(0.3)
            q:sync(function() t.emit("before accepting", n < 4) end)
            local accepted = 0
            local src = dispatch.source.read{fd = lfd, queue = q}
            src:set_event_handler(function()
              while true do
                local c = net.accept(lfd)
                if not c then break end
                accepted = accepted + 1
                dispatch.fd.close(c)
              end
              if accepted == 4 then src:cancel(); dispatch.fd.close(lfd) end
            end)
            src:resume()
            """)
        XCTAssertEqual(out, ["before accepting true", "connected 4"])
    }

    func testUDP() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local a, pa = net.udp()
            local b, pb = net.udp{host = "127.0.0.1", port = 0}
            t.emit(pa > 0, pb > 0, pa ~= pb)
            t.emit("empty", net.recvfrom(b, 100))
            t.emit("sent", net.sendto(a, "one", "127.0.0.1", pb), net.sendto(a, dispatch.data("two!"), "localhost", pb))
            local function recv()
              while true do
                local d, host, port = net.recvfrom(b, 100)
                if d then return d, host, port == pa end
                dispatch.sleep(0.001)
              end
            end
            t.emit(recv()); t.emit(recv())
            t.emit("truncated", net.sendto(b, "abcdef", "127.0.0.1", pa), (function() dispatch.sleep(0.05); return (net.recvfrom(a, 3)) end)())
            dispatch.fd.close(a); dispatch.fd.close(b)
            """)
        XCTAssertEqual(out, ["true true true", "empty nil EAGAIN EAGAIN", "sent 3 4", "one 127.0.0.1 true",
                             "two! 127.0.0.1 true", "truncated 6 abc"])
    }

    func testShutdownHalfClose() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd, port = net.listen{}
            net.connect({port = port}, dispatch.queue("c"), function(fd)
              local c; repeat c = net.accept(lfd) until c
              dispatch.fd.write(fd, "request")
              t.emit("shutdown", net.shutdown(fd, "write"))
              local got, chunk = ""
              repeat chunk = dispatch.fd.read(c, 100); got = got .. (chunk or "") until chunk == ""
              t.emit("server read to EOF", got)
              t.emit("server still writes", dispatch.fd.write(c, "reply"))
              local back = ""
              repeat back = back .. (dispatch.fd.read(fd, 100) or "") until #back == 5
              t.emit("client reads", back)
              t.emit("write after shutdown", select(3, dispatch.fd.write(fd, "x")))
              dispatch.fd.close(c)
              dispatch.sleep(0.05)
              t.emit("peer gone", select(3, dispatch.fd.write(fd, "y")))
              dispatch.fd.close(fd); dispatch.fd.close(lfd)
            end)
            """)
        XCTAssertEqual(out, ["shutdown true", "server read to EOF request", "server still writes 5", "client reads reply",
                             "write after shutdown EPIPE", "peer gone EPIPE"])
    }

    func testSystemFailures() {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd, port = net.listen{}
            local _, msg, code = net.listen{port = port}
            t.emit("in use", code, msg == "127.0.0.1:" .. port .. ": Address already in use")
            local u, up = net.udp()
            t.emit("udp in use", select(3, net.udp{port = up}))
            dispatch.fd.close(u)
            -- A label longer than DNS allows (63): the resolver refuses the name without asking a
            -- server, so the test stays on this machine, as every net test does.
            local nowhere = ("x"):rep(64) .. ".invalid"
            t.emit("unknown host", select(3, net.listen{host = nowhere}))
            t.emit("not local", select(3, net.listen{host = "192.0.2.1"}))
            t.emit("no dir", select(3, net.listen{path = \(IOHarness.lua(dir + "/no/such.sock"))}))
            t.emit("accept non-socket", select(3, net.accept(0)))
            t.emit("accept closed", select(3, net.accept(1000000)))
            local r, w = dispatch.fd.pipe()
            t.emit("shutdown a pipe", select(3, net.shutdown(r, "write")))
            dispatch.fd.close(r); dispatch.fd.close(w)
            dispatch.fd.close(lfd)
            local q = dispatch.queue("c")
            net.connect({port = port}, q, function(fd, err, code)
              t.emit("refused", fd, code, err == "connect 127.0.0.1:" .. port .. ": ECONNREFUSED (Connection refused)")
            end)
            net.connect({host = nowhere, port = 80}, q, function(fd, err, code)
              t.emit("unresolved", fd, code, err:find(nowhere, 1, true) ~= nil)
            end)
            """)
        XCTAssertEqual(out, [
            "in use EADDRINUSE true", "udp in use EADDRINUSE", "unknown host EAI_NONAME", "not local EADDRNOTAVAIL",
            "no dir ENOENT", "accept non-socket ENOTSOCK", "accept closed EBADF", "shutdown a pipe ENOTSOCK",
            "refused nil ECONNREFUSED true", "unresolved nil EAI_NONAME true",
        ])
    }

    func testBadArgumentsRaise() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local q = dispatch.queue("q")
            local function try(f, ...) local ok, err = pcall(f, ...); t.emit(ok and "ok" or err) end
            try(net.listen)
            try(net.listen, {port = 65536})
            try(net.listen, {port = -1})
            try(net.listen, {port = 1.5})
            try(net.listen, {host = "a b"})
            try(net.listen, {host = ""})
            try(net.listen, {host = 1})
            try(net.listen, {path = "/tmp/x", port = 1})
            try(net.listen, {path = string.rep("p", 200)})
            try(net.listen, {backlog = -1})
            try(net.listen, {colour = "red"})
            try(net.connect, {host = "127.0.0.1"}, q, print)
            try(net.connect, {port = 0}, q, print)
            try(net.connect, {port = 70000}, q, print)
            try(net.connect, {port = 80}, "q", print)
            try(net.connect, {port = 80}, q)
            try(net.udp, {port = 65536})
            try(net.udp, {path = "/tmp/x"})
            try(net.sendto, 0, "x", "h o", 1)
            try(net.sendto, 0, "x", "localhost", 0)
            try(net.sendto, 0, {}, "localhost", 1)
            try(net.recvfrom, 0, 0)
            try(net.accept, -1)
            try(net.accept, "x")
            try(net.shutdown, 0, "sideways")
            """)
        let expected = [
            "bad argument #1 to 'listen' (table expected, got no value)",
            "bad argument #1 to 'listen' (option 'port': out of range (0-65535), got 65536)",
            "bad argument #1 to 'listen' (option 'port': out of range (0-65535), got -1)",
            "bad argument #1 to 'listen' (option 'port': integer expected, got number)",
            "bad argument #1 to 'listen' (option 'host': invalid host 'a b')",
            "bad argument #1 to 'listen' (option 'host': invalid host '')",
            "bad argument #1 to 'listen' (option 'host': string expected, got number)",
            "bad argument #1 to 'listen' (option 'path' excludes 'host' and 'port')",
            "bad argument #1 to 'listen' (option 'path': longer than 107 bytes (200))",
            "bad argument #1 to 'listen' (option 'backlog': must be >= 0, got -1)",
            "bad argument #1 to 'listen' (unknown option 'colour')",
            "bad argument #1 to 'connect' (option 'port' expected)",
            "bad argument #1 to 'connect' (option 'port': out of range (1-65535), got 0)",
            "bad argument #1 to 'connect' (option 'port': out of range (1-65535), got 70000)",
            "bad argument #2 to 'connect' (dispatch.queue expected, got string)",
            "bad argument #3 to 'connect' (function expected, got no value)",
            "bad argument #1 to 'udp' (option 'port': out of range (0-65535), got 65536)",
            "bad argument #1 to 'udp' (unknown option 'path')",
            "bad argument #3 to 'sendto' (invalid host 'h o')",
            "bad argument #4 to 'sendto' (port out of range (1-65535), got 0)",
            "bad argument #2 to 'sendto' (dispatch.data or string expected, got table)",
            "bad argument #2 to 'recvfrom' (length must be >= 1, got 0)",
            "bad argument #1 to 'accept' (invalid file descriptor -1)",
            "bad argument #1 to 'accept' (number expected, got string)",
            "bad argument #2 to 'shutdown' (invalid option 'sideways' (\"read\", \"write\" or \"both\" expected))",
        ]
        XCTAssertEqual(out.count, expected.count, "\(out)")
        for (got, want) in zip(out, expected) { XCTAssertTrue(got.hasSuffix(want), "\(got) does not end with \(want)") }
    }

    /// Writing to a socket whose peer has gone is an EPIPE, never a SIGPIPE that ends the process.
    func testWriteToAClosedPeerIsEPIPE() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd, port = net.listen{}
            net.connect({port = port}, dispatch.queue("c"), function(fd)
              local c; repeat c = net.accept(lfd) until c
              dispatch.fd.close(c); dispatch.fd.close(lfd)
              local codes = {}
              for i = 1, 3 do
                local n, _, code = dispatch.fd.write(fd, string.rep("x", 100000))
                codes[#codes + 1] = code or "ok"
                dispatch.sleep(0.02)
              end
              t.emit(table.concat(codes, " "))
              dispatch.fd.close(fd)
            end)
            """)
        XCTAssertEqual(out.count, 1)
        XCTAssertTrue(out.first?.contains("EPIPE") == true || out.first?.contains("ECONNRESET") == true, "\(out)")
    }

    /// The listening socket a read source watches is closed by the script: the source keeps
    /// the runtime's duplicate, so it still fires and `accept` on the closed number fails
    /// (EBADF, or EINVAL once a new descriptor took the number) instead of crashing; once the
    /// source is cancelled the socket is gone (connects are refused).
    func testListeningSocketClosedUnderAReadSource() {
        let out = IOHarness().run("""
            local net = dispatch.net
            local lfd, port = net.listen{}
            local q = dispatch.queue("server")
            local src = dispatch.source.read{fd = lfd, queue = q}
            src:set_event_handler(function()
              t.emit("fired", net.accept(lfd) == nil)
              src:cancel()
            end)
            src:set_cancel_handler(function()
              net.connect({port = port}, q, function(fd, err, code) t.emit("after cancel", code) end)
            end)
            src:resume()
            dispatch.fd.close(lfd)
            net.connect({port = port}, q, function(fd) if fd then dispatch.fd.close(fd) end end)
            """)
        XCTAssertEqual(out, ["fired true", "after cancel ECONNREFUSED"])
    }

    /// 10,000 connections made and closed (ten chains of 1,000 at once, a read source accepting)
    /// leave no descriptor behind.
    func testTenThousandConnectCloseCyclesLeakNothing() {
        let script = """
            local net = dispatch.net
            local lfd, port = net.listen{backlog = 256}
            local server = dispatch.queue("server")
            local accepted, closed, failures = 0, 0, {}
            local src = dispatch.source.read{fd = lfd, queue = server}
            src:set_event_handler(function()
              while true do
                local c = net.accept(lfd)
                if not c then break end
                accepted = accepted + 1
                dispatch.fd.close(c)
              end
            end)
            src:resume()
            local clients = dispatch.queue{label = "clients", concurrent = true}
            local group = dispatch.group()
            local function cycle(left)
              if left == 0 then return group:leave() end
              net.connect({port = port}, clients, function(fd, err)
                if fd then dispatch.fd.close(fd) end
                server:async(function()
                  closed = closed + 1
                  if err then failures[#failures + 1] = err end
                end)
                cycle(left - 1)
              end)
            end
            for i = 1, chains do group:enter(); cycle(cycles) end
            group:notify(server, function()
              -- every connection the clients closed has reached the listener's queue by now
              local deadline = dispatch.now() + 10
              local function finish()
                if accepted < chains * cycles and dispatch.now() < deadline then return server:after(0.01, finish) end
                t.emit(closed, accepted, #failures, failures[1])
                src:cancel(); dispatch.fd.close(lfd)
              end
              finish()
            end)
            """
        // A first round makes what the runtime keeps for good (the descriptor watcher's epoll).
        IOHarness().run("local chains, cycles = 1, 1\n" + script)
        let before = IOHarness.openDescriptorCount()
        let out = IOHarness().run("local chains, cycles = 10, 1000\n" + script)
        XCTAssertEqual(out, ["10000 10000 0 nil"])
        XCTAssertEqual(IOHarness.openDescriptorCount(), before, "descriptors leaked")
    }
}
