import Foundation
import XCTest
@testable import LuaDispatch

/// The main loop serving the main queue's sockets itself (Net/NetPollerMainLoop.swift).
extension NetConnectionTests {
    /// A server on the main queue, served by the main loop while a timer on the main queue keeps
    /// firing: 40,000 pipelined requests sent one byte at a time get 40,000 replies, in order,
    /// each once (a readiness served twice or lost would break the sequence of INCR's counts).
    func testMainLoopServesBesideATimerEachRequestOnce() {
        let servedBefore = NetPoller.mainLoopDeliveries.load(ordering: .relaxed)
        let (out, replies) = serve("""
            local proto = dofile(\(IOHarness.lua(Self.protocolFile)))
            local store, ticks, first = {}, 0, nil
            local timer = dispatch.source.timer{deadline = 0, interval = 0.002, queue = dispatch.main}
            timer:set_event_handler(function() ticks = ticks + 1 end)
            timer:resume()
            local server
            server = assert(dispatch.net.serve({port = 0}, function(conn)
              local feed = proto.resp(store)
              conn:on_data(function(data)
                if data then
                  first = first or ticks
                  local replies = feed(data)
                  if replies then conn:write(replies) end
                  return
                end
                conn:close()
                server:close()
                timer:cancel()
                t.emit("ticks while serving", ticks - first >= 10)
              end)
            end))
            clients.start(server.port)
            """) { port in
            let c = RawClient(port: port)
            let n = 40_000
            for byte in String(repeating: "INCR n\r\n", count: n).utf8 { c.send([byte]) }
            var expected = ""
            for i in 1...n { expected += ":\(i)\r\n" }
            let got = c.receive(until: { $0.count >= expected.utf8.count })
            c.close()
            return [got == expected ? "all \(n) once, in order" : "wrong: \(got.utf8.count) bytes"]
        }
        XCTAssertEqual(replies, ["all 40000 once, in order"])
        XCTAssertEqual(out, ["ticks while serving true"])
        XCTAssertGreaterThan(NetPoller.mainLoopDeliveries.load(ordering: .relaxed), servedBefore,
                             "the main loop served no socket itself")
    }

    /// While the main loop waits on the main queue's sockets, work queued on the main queue
    /// from other threads runs at once: 200 hops between a global queue and the main queue,
    /// a connection open and idle meanwhile, take well under a second. On Linux the loop waits
    /// on the set alone, the main queue's handle in it: were the handle not in the set, each
    /// hop would wait for the loop's 50 ms timeout (10 s in all).
    func testMainQueueWorkWakesTheLoopWaitingOnTheSet() {
        let waitsBefore = NetPoller.mainLoopSetWaits.load(ordering: .relaxed)
        let (out, replies) = serve("""
            local server
            server = assert(dispatch.net.serve({port = 0}, function(conn)
              conn:on_data(function(data)
                if data then return end
                conn:close()
                server:close()
              end)
              local hops, start = 0, dispatch.now()
              local function hop()
                hops = hops + 1
                if hops == 200 then
                  t.emit("hops under a second", dispatch.now() - start < 1)
                  return conn:write("done\\n")
                end
                dispatch.global():async(function() dispatch.main:async(hop) end)
              end
              hop()
            end))
            clients.start(server.port)
            """) { port in
            let c = RawClient(port: port)
            let got = c.receive(until: { $0.count >= 5 })
            c.close()
            return [got]
        }
        XCTAssertEqual(replies, ["done\n"])
        XCTAssertEqual(out, ["hops under a second true"])
        #if os(Linux)
        XCTAssertGreaterThan(NetPoller.mainLoopSetWaits.load(ordering: .relaxed), waitsBefore,
                             "the main loop never waited on the set alone")
        #endif
    }

    /// A host driving the main queue with `run(.default)` (what `dispatch.run` does) serves the
    /// main queue's sockets on its own thread too: four clients, each making 300 requests one
    /// after the other, get every reply once and in order, and the run served the set itself
    /// (`hostRunServes`).
    func testHostRunServesTheMainQueueSockets() throws {
        try hostRunServes { rt in XCTAssertFalse(rt.run(.default), "work left after the run") }
    }

    /// The same through `run(.once)` over and over, as a host with a loop of its own does: each
    /// call returns after a delivery, the set handed back to its source in between.
    func testHostRunOnceServesTheMainQueueSockets() throws {
        try hostRunServes { rt in
            var calls = 0
            while rt.run(.once) { calls += 1 }
            XCTAssertGreaterThan(calls, 4, "run(.once) served everything in one call")
        }
    }

    private func hostRunServes(_ drive: (Runtime) -> Void) throws {
        let rt = TestRuntimes.make()
        let values = try rt.run(string: """
            local dispatch = require("dispatch")
            local proto = dofile(\(IOHarness.lua(Self.protocolFile)))
            local store, ended = {}, 0
            local server
            server = assert(dispatch.net.serve({port = 0}, function(conn)
              local feed = proto.resp(store)
              conn:on_data(function(data)
                if data then
                  local replies = feed(data)
                  if replies then conn:write(replies) end
                  return
                end
                conn:close()
                ended = ended + 1
                if ended == 4 then server:close() end
              end)
            end))
            return server.port
            """)
        guard case .integer(let port)? = values.first else { return XCTFail("no port: \(values)") }
        let servedBefore = NetPoller.mainLoopDeliveries.load(ordering: .relaxed)
        let results = Locked<[String]>([])
        let clients = DispatchGroup()
        for k in 0..<4 {
            DispatchQueue.global().async(group: clients) {
                let c = RawClient(port: Int(port))
                var wrong = 0
                for i in 1...300 {
                    c.send(Array("INCR k\(k)\r\n".utf8))
                    let reply = ":\(i)\r\n"
                    if c.receive(until: { $0.count >= reply.utf8.count }) != reply { wrong += 1 }
                }
                c.close()
                results.mutate { $0.append("\(wrong) wrong") }
            }
        }
        drive(rt)
        XCTAssertEqual(clients.wait(timeout: .now() + 60), .success, "clients did not finish")
        XCTAssertEqual(results.get(), Array(repeating: "0 wrong", count: 4))
        XCTAssertGreaterThan(NetPoller.mainLoopDeliveries.load(ordering: .relaxed), servedBefore,
                             "the run served no socket itself")
    }
}
