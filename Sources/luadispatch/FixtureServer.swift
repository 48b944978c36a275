import Dispatch
import Foundation

/// A loopback HTTP/1.0 server for scenario fixtures: GET /path serves ROOT/path; the query
/// `?delay=SECONDS` waits before answering. It binds 127.0.0.1 on a free port and lives as long
/// as the process.
final class FixtureServer: @unchecked Sendable {
    let root: String
    let port: UInt16
    private let listener: Int32

    var baseURL: String { "http://127.0.0.1:\(port)" }

    nonisolated(unsafe) private static var instance: FixtureServer?
    private static let lock = NSLock()

    static func shared(root: String) throws -> FixtureServer {
        try lock.withLock {
            if let instance { return instance }
            let server = try FixtureServer(root: root)
            instance = server
            return server
        }
    }

    init(root: String) throws {
        self.root = root
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ScenarioError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(listener, p, len) == 0 && listen(listener, 64) == 0 && getsockname(listener, p, &len) == 0
            }
        }
        guard bound else { throw ScenarioError("bind: \(String(cString: strerror(errno)))") }
        self.listener = listener
        port = UInt16(bigEndian: addr.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { if errno == EINTR { continue } else { return } }
            DispatchQueue.global().async { [self] in serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var request = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 4096)
        while !request.contains(10) && request.count < 65536 {
            let n = read(fd, &buf, buf.count)
            if n <= 0 { break }
            request += buf[0..<n]
        }
        let line = String(decoding: request.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" else { return respond(fd, 400, Data("bad request\n".utf8)) }
        let target = URLComponents(string: String(parts[1]))
        let path = target?.path ?? "/"
        if let d = target?.queryItems?.first(where: { $0.name == "delay" })?.value.flatMap(Double.init), d > 0 {
            Thread.sleep(forTimeInterval: min(d, 30))
        }
        let file = URL(fileURLWithPath: root).appendingPathComponent(path).standardizedFileURL.path
        guard file.hasPrefix(URL(fileURLWithPath: root).standardizedFileURL.path),
              let body = FileManager.default.contents(atPath: file)
        else { return respond(fd, 404, Data("not found\n".utf8)) }
        respond(fd, 200, body)
    }

    private func respond(_ fd: Int32, _ status: Int, _ body: Data) {
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found"][status] ?? "Error"
        var out = Data("HTTP/1.0 \(status) \(reason)\r\nContent-Length: \(body.count)\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n".utf8)
        out += body
        out.withUnsafeBytes { raw in
            var off = 0
            while off < raw.count {
                let n = write(fd, raw.baseAddress! + off, raw.count - off)
                if n <= 0 { break }
                off += n
            }
        }
    }
}
