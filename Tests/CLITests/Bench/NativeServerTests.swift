import XCTest

/// The native ceilings of the request/response server rows (`luadispatch-native serve`) answer
/// as the Lua example servers do, byte for byte, in both designs; and replies larger than the
/// socket takes at once arrive whole (writes queued behind write readiness, reading paused).
final class NativeServerTests: XCTestCase {
    static let designs = ["source", "epoll"]

    /// A server process that printed its port.
    final class Server {
        let process = Process()
        let port: Int

        init(_ executable: URL, _ arguments: [String]) throws {
            process.executableURL = executable
            process.arguments = arguments
            process.currentDirectoryURL = CLI.packageRoot
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            while !line.contains(10) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                line += chunk
            }
            port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    static func native(_ proto: String, _ design: String) throws -> Server {
        try Server(CLI.productsDirectory.appendingPathComponent("luadispatch-native"), ["serve", proto, design])
    }

    static func lua(_ script: String) throws -> Server {
        try Server(CLI.binary, ["run", "scripts/examples/" + script])
    }

    /// Sends `bytes` (all at once, or one byte at a time) and reads until the server closes
    /// (or 10 s pass): what came back.
    static func exchange(_ port: Int, _ bytes: [UInt8], bytewise: Bool) -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { return Array("connect failed".utf8) }
        // Sent from another thread while this one reads: a server that stops reading until its
        // replies are taken would otherwise block both.
        let sent = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var off = 0
            while off < bytes.count {
                let size = bytewise ? 1 : bytes.count - off
                let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + off, size, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }  // the server closed (after QUIT or Connection: close)
                off += n
                if bytewise { usleep(200) }
            }
            sent.signal()
        }
        defer { shutdown(fd, Int32(SHUT_RDWR)); sent.wait() }  // unblocks a send still waiting
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            got += buffer[0..<n]
        }
        return got
    }

    static let redisRequests = "PING\r\nPING hi\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n41\r\n*2\r\n$4\r\nincr\r\n$1\r\nk\r\n"
        + "GET k\r\nGET nope\r\n\r\nCONFIG GET save\r\nCOMMAND DOCS\r\nbogus a b\r\nSET x\r\nINCR big\r\n"
        + "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nQUIT\r\nPING\r\n"
    static let httpRequests = "GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST /a HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello"
        + "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n"

    func compare(_ proto: String, _ script: String, _ requests: String, bytewise: Bool) throws {
        let bytes = Array(requests.utf8)
        let reference = try Self.lua(script)
        let expected = Self.exchange(reference.port, bytes, bytewise: bytewise)
        reference.stop()
        XCTAssertGreaterThan(expected.count, 100)
        for design in Self.designs {
            let server = try Self.native(proto, design)
            defer { server.stop() }
            let got = Self.exchange(server.port, bytes, bytewise: bytewise)
            XCTAssertEqual(String(decoding: got, as: UTF8.self), String(decoding: expected, as: UTF8.self), "\(proto) \(design)")
        }
    }

    func testRedisRepliesAreTheLuaServersBytes() throws {
        try compare("redis", "redis-server.lua", Self.redisRequests, bytewise: false)
        try compare("redis", "redis-server.lua", Self.redisRequests, bytewise: true)
    }

    func testHTTPRepliesAreTheLuaServersBytes() throws {
        try compare("http", "http-server.lua", Self.httpRequests, bytewise: false)
        try compare("http", "http-server.lua", Self.httpRequests, bytewise: true)
        try compare("http", "http-server.lua", "GET / HTTP/1.0\r\n\r\n", bytewise: false)
    }

    /// 40 pipelined GETs of a 256 KiB value: 10 MiB of replies, more than the socket takes while
    /// the client is not reading, then 40,000 pipelined INCRs.
    func testLargeAndLongPipelinesArriveWhole() throws {
        let value = String(repeating: "v", count: 256 << 10)
        let request = "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$\(value.utf8.count)\r\n\(value)\r\n"
            + String(repeating: "GET big\r\n", count: 40) + String(repeating: "INCR n\r\n", count: 40_000) + "QUIT\r\n"
        for design in Self.designs {
            let server = try Self.native("redis", design)
            defer { server.stop() }
            let got = String(decoding: Self.exchange(server.port, Array(request.utf8), bytewise: false), as: UTF8.self)
            let bulk = "$\(value.utf8.count)\r\n\(value)\r\n"
            XCTAssertTrue(got.hasPrefix("+OK\r\n" + String(repeating: bulk, count: 40) + ":1\r\n"), design)
            XCTAssertTrue(got.hasSuffix(":40000\r\n+OK\r\n"), "\(design): \(got.suffix(40))")
            XCTAssertEqual(got.utf8.count, 5 + 40 * bulk.utf8.count + (1...40_000).reduce(0) { $0 + "\($1)".count + 3 } + 5, design)
        }
    }
}
