import Foundation
import XCTest
@testable import LuaDispatch

#if canImport(Glibc)
import Glibc
#endif

/// A one-thread HTTP/1.0 server on 127.0.0.1: `/ok` answers 200 with a body, anything else 404.
final class IOLoopbackServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let thread: Thread

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = Int(UInt16(bigEndian: addr.sin_port))
        let listener = fd
        thread = Thread {
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let n = read(client, &buffer, buffer.count)
                let request = String(decoding: buffer.prefix(max(n, 0)), as: UTF8.self)
                let ok = request.hasPrefix("GET /ok ")
                let body = ok ? "book tags: swift, gcd" : "not found"
                let response = "HTTP/1.0 \(ok ? "200 OK" : "404 Not Found")\r\nContent-Length: \(body.utf8.count)\r\n"
                    + "Content-Type: text/plain\r\nConnection: close\r\n\r\n\(body)"
                _ = response.withCString { write(client, $0, strlen($0)) }
                close(client)
            }
        }
        thread.start()
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

final class HTTPTests: XCTestCase {
    func testGetFromIOLoopbackServer() throws {
        let server = try IOLoopbackServer()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let out = IOHarness().run("""
            local q = dispatch.queue("http")
            local g = dispatch.group()
            g:enter()
            dispatch.http.get("\(base)/ok", q, function(body, status, err)
              t.emit("ok", body, status, tostring(err), dispatch.current_label())
              g:leave()
            end)
            g:enter()
            dispatch.http.get("\(base)/missing", q, function(body, status, err)
              t.emit("missing", body, status, tostring(err))
              g:leave()
            end)
            g:notify(dispatch.main, function() t.emit("both done") end)
            """)
        XCTAssertEqual(Set(out.prefix(2)), ["ok book tags: swift, gcd 200 nil http", "missing not found 404 nil"])
        XCTAssertEqual(out.last, "both done")
    }

    func testConnectionErrorReachesCallback() {
        let out = IOHarness().run("""
            dispatch.http.get("http://127.0.0.1:1/", dispatch.main, function(body, status, err)
              t.emit(tostring(body), tostring(status), type(err))
            end)
            """)
        XCTAssertEqual(out, ["nil nil string"])
    }

    func testBadArgumentsRaise() {
        let out = IOHarness().run("""
            local function try(f, ...) local ok, err = pcall(f, ...); t.emit(ok and "ok" or err) end
            try(dispatch.http.get, "ftp://example.com/", dispatch.main, print)
            try(dispatch.http.get, "not a url", dispatch.main, print)
            try(dispatch.http.get, "http://127.0.0.1:1/", 5, print)
            try(dispatch.http.get, "http://127.0.0.1:1/", dispatch.main)
            """)
        let expected = [
            "bad argument #1 to 'get' (invalid http or https URL 'ftp://example.com/')",
            "bad argument #1 to 'get' (invalid http or https URL 'not a url')",
            "bad argument #2 to 'get' (dispatch.queue expected, got number)",
            "bad argument #3 to 'get' (function expected, got no value)",
        ]
        XCTAssertEqual(out.count, expected.count, "\(out)")
        for (got, want) in zip(out, expected) { XCTAssertTrue(got.hasSuffix(want), "\(got) does not end with \(want)") }
    }
}
