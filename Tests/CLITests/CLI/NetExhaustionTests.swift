import Foundation
import XCTest

/// A `dispatch.net.serve` listener out of descriptors (RLIMIT_NOFILE lowered for the child
/// process): it reports EMFILE once, pauses and retries without spinning, and serves the
/// waiting clients once descriptors are free again.
final class NetExhaustionTests: XCTestCase {
    static let script = """
        local dispatch = require("dispatch")
        local net = dispatch.net
        local q = dispatch.queue("server")
        q:suspend()                                  -- no accept before the table is full
        local reports, done, held = {}, 0, {}
        local server
        server = assert(net.serve({port = 0, queue = q, on_error = function(message, code)
          reports[#reports + 1] = code
        end}, function(conn)
          conn:on_data(function(data)
            if data then conn:write(data) else conn:close() end
          end)
        end))
        local connected = 0
        for i = 1, 3 do
          net.dial({port = server.port}, function(conn, err)
            assert(conn, err)
            conn:on_data(function(data)
              if data ~= "ping" .. i then return end
              conn:close()
              done = done + 1
              if done == 3 then
                print("echoes", done, "reports", table.concat(reports, ","), "errors <= 10", server.accept_errors <= 10)
                q:async(function() server:close() end)
              end
            end)
            assert(conn:write("ping" .. i))
            connected = connected + 1
            if connected < 3 then return end
            -- After a first timer: libdispatch makes its timer descriptor when a timer first
            -- fires, and could not once the table is full.
            dispatch.main:after(0.01, function()
              dispatch.main:after(0.5, function()
                print("paused", server.accept_errors >= 2, server.accept_errors <= 10, #reports)
                for _, f in ipairs(held) do f:close() end
              end)
              repeat                                 -- fill the descriptor table
                local f = io.open("/dev/null")
                held[#held + 1] = f
              until not f
              print("table full", #held > 1)
              q:resume()
            end)
          end)
        end
        """

    func testListenerOutOfDescriptors() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("exhaust-\(UUID().uuidString).lua")
        try Self.script.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try CLI.run(["-c", "ulimit -n 48 && exec \"$0\" run \"$1\"", CLI.binary.path, file.path],
                            timeout: 60, executable: URL(fileURLWithPath: "/bin/sh"))
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "table full\ttrue\npaused\ttrue\ttrue\t1\nechoes\t3\treports\tEMFILE\terrors <= 10\ttrue\n")
        XCTAssertEqual(r.stderr, "")
    }
}
