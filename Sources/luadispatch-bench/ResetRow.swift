import Foundation

/// Recovery after clients that leave with replies unread: 20 clients each send pipelined GETs
/// of a 256 KiB value to the Redis server (about 64 MiB of replies in all at full size), wait
/// until replies arrive, then reset (SO_LINGER 0) without reading them; a fresh client's PING
/// is timed from the resets to its answer (ms), and the server's resident memory read a second
/// later. The example server on `dispatch.net` against its luv twin, a fresh server each.
enum ResetRow {
    static let clients = 20
    static let valueSize = 256 << 10

    static let row = Row(
        name: "net_reset_recovery", unit: "ms to answer", baselineName: "luv, lua5.4", better: .lower,
        target: "<= 1 s, RSS <= 32 MiB after 1 s", meets: { lua, _, _ in lua <= 1000 }
    ) { scale in
        let total = Int(Double(64 << 20) * max(0.125, min(1, scale)))
        let gets = max(1, (total + clients * valueSize - 1) / (clients * valueSize))
        let (lua, luv) = try ServerRows.sides("redis-server.lua", "redis-luv.lua")
        let (a, b) = try CLIRows.inTurn(lua: { try recover(lua, gets: gets) }, native: { try recover(luv, gets: gets) })
        func mib(_ x: Double) -> String { String(format: "%.1f", x) }
        return Measurement(
            lua: a.seconds * 1000, baseline: b.seconds * 1000,
            notes: "\(clients) clients x \(gets) GETs of \(valueSize >> 10) KiB (\((clients * gets * valueSize) >> 20) MiB of replies) reset unread; "
                + "RSS with them pending \(mib(a.before)) vs \(mib(b.before)) MiB, 1 s after the answer \(mib(a.after)) vs \(mib(b.after)) MiB "
                + "(<= 32 \(a.after <= 32 ? "yes" : "NO"))",
            meets: a.after <= 32)
    }

    /// One server: seconds from the resets to the PING's answer, RSS (MiB) just before the
    /// resets and a second after the answer.
    static func recover(_ argv: [String], gets: Int) throws -> (seconds: Double, before: Double, after: Double) {
        let server = try ServerProcess(argv)
        defer { server.stop() }
        let value = String(repeating: "x", count: valueSize)
        let setup = try Client(port: server.port)
        try setup.send("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$\(valueSize)\r\n\(value)\r\n")
        guard try setup.line() == "+OK\r\n" else { throw BenchError("SET big failed") }
        setup.close()
        var readers: [Client] = []
        let request = String(repeating: "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", count: gets)
        for _ in 0..<clients {
            let c = try Client(port: server.port)
            try c.send(request)
            readers.append(c)
        }
        // Every client has replies waiting to be read (the server is writing them), or 5 s passed.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, !readers.allSatisfy(\.hasInput) { usleep(10_000) }
        usleep(200_000)
        let before = server.rssMiB
        for c in readers { c.reset() }
        var ping: Client?
        defer { ping?.close() }
        let seconds = try timed {
            let c = try Client(port: server.port)
            ping = c
            try c.send("PING\r\n")
            let reply = try c.line()
            guard reply == "+PONG\r\n" else { throw BenchError("PING answered \(reply.debugDescription)") }
        }
        sleep(1)
        return (seconds, before, server.rssMiB)
    }

    /// A blocking loopback client (20 s receive timeout).
    final class Client {
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, 4)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard r == 0 else {
                Glibc.close(fd)
                throw BenchError("connect to port \(port) failed: errno \(errno)")
            }
        }

        func send(_ text: String) throws {
            let bytes = Array(text.utf8)
            var off = 0
            while off < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { throw BenchError("send failed: errno \(errno)") }
                off += n
            }
        }

        /// Bytes up to and including the first newline.
        func line() throws -> String {
            var got: [UInt8] = []
            var byte: UInt8 = 0
            while got.last != 10 {
                guard recv(fd, &byte, 1, 0) == 1 else { throw BenchError("no reply (errno \(errno)) after \(got.count) bytes") }
                got.append(byte)
            }
            return String(decoding: got, as: UTF8.self)
        }

        /// Whether a reply has started to arrive.
        var hasInput: Bool {
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) == 1
        }

        /// Closes with a reset (SO_LINGER 0), whatever is unread.
        func reset() {
            var l = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
            Glibc.close(fd)
        }

        func close() { Glibc.close(fd) }
    }
}
