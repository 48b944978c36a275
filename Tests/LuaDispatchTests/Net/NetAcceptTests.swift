import Foundation
import XCTest
@testable import LuaDispatch

/// Connections a server accepts: `TCP_NODELAY` (inherited from the listening socket where the
/// kernel passes it on, set on each connection otherwise) and one-request connections closed by
/// the server, and reading at once after an accept (Net/ServerObject.swift,
/// Net/ConnectionObject.swift).
extension NetConnectionTests {
    /// Every accepted TCP connection has `nodelay`: the first, which tells whether the kernel
    /// passed it on from the listening socket, and those after it.
    func testAcceptedConnectionsHaveNodelay() {
        let (out, replies) = serve("""
            local server, n = nil, 0
            server = assert(dispatch.net.serve({port = 0}, function(conn)
              n = n + 1
              t.emit("nodelay " .. n, conn:get_option("nodelay"))
              conn:on_data(function(data)
                if data then return conn:write(data) end
                conn:close()
                if n == 3 then server:close() end
              end)
            end))
            clients.start(server.port)
            """) { port in
            (0..<3).map { i in
                let c = RawClient(port: port)
                c.send(Array("\(i)\n".utf8))
                let got = c.receive(until: { $0.last == 10 })
                c.close()
                return got
            }
        }
        XCTAssertEqual(replies, ["0\n", "1\n", "2\n"])
        XCTAssertEqual(out, ["nodelay 1 true", "nodelay 2 true", "nodelay 3 true"])
    }

    /// A connection whose client spoke first is read as soon as it is accepted: its data callback
    /// runs before the main queue's next block, without a wait for readiness in between.
    func testAnAcceptedConnectionIsReadAtOnce() {
        let (out, replies) = serve("""
            local server
            server = assert(dispatch.net.serve({port = 0}, function(conn)
              dispatch.main:async(function() t.emit("the main queue's next block") end)
              conn:on_data(function(data)
                if data then t.emit("data " .. data); return conn:write(data) end
                conn:close()
                server:close()
              end)
            end))
            clients.start(server.port)
            local until_ = dispatch.now() + 0.3   -- the client connects and sends meanwhile
            while dispatch.now() < until_ do end
            """) { port in
            let c = RawClient(port: port)
            c.send(Array("ping".utf8))
            let got = c.receive(until: { $0.count >= 4 })
            c.close()
            return [got]
        }
        XCTAssertEqual(replies, ["ping"])
        XCTAssertEqual(out, ["data ping", "the main queue's next block"])
    }

    /// 600 connections of one request each, 30 at a time, each closed by the server after its
    /// reply (as an HTTP/1.0 server does): every reply arrives and no descriptor is left open.
    /// The server closes them without taking them out of the set first: closing does that.
    func testOneRequestConnectionsClosedByTheServer() {
        let (out, replies) = serve("""
            local server, closed = nil, 0
            server = assert(dispatch.net.serve({port = 0, backlog = 64}, function(conn)
              conn:on_data(function(data)
                if data then conn:write("ok " .. data) end
                conn:close()
                closed = closed + 1
                if closed == 600 then
                  server:close()
                  t.emit("closed", closed)
                end
              end)
            end))
            clients.start(server.port)
            """) { port in
            let ok = Locked(0)
            DispatchQueue.concurrentPerform(iterations: 30) { k in
                for i in 0..<20 {
                    let c = RawClient(port: port)
                    let request = "\(k).\(i)\n"
                    c.send(Array(request.utf8))
                    if c.receive(until: { $0.last == 10 }) == "ok " + request { ok.mutate { $0 += 1 } }
                    c.close()
                }
            }
            return ["\(ok.get()) of 600"]
        }
        XCTAssertEqual(replies, ["600 of 600"])
        XCTAssertEqual(out, ["closed 600"])
    }
}
