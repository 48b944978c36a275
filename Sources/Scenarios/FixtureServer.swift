import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP/1.0 server for scenario fixtures: GET /path serves ROOT/path; the query
/// `?delay=SECONDS` waits before answering. It binds 127.0.0.1 on a free port and lives as long
/// as the process: a thread of its own accepts, Dispatch's global queue answers.
final class FixtureServer: Sendable {
    let root: String
    let port: UInt16
    private let listener: Int32

    var baseURL: String { "http://127.0.0.1:\(port)" }

    private static let instance = Mutex<FixtureServer?>(nil)

    static func shared(root: String) throws(ScenarioError) -> FixtureServer {
        try instance.withLock { (instance) throws(ScenarioError) -> FixtureServer in
            if let instance { return instance }
            let server = try FixtureServer(root: root)
            instance = server
            return server
        }
    }

    private init(root: String) throws(ScenarioError) {
        self.root = root
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw ScenarioError("socket: " + Posix.errorText()) }
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
        guard bound else {
            let why = Posix.errorText()
            close(listener)
            throw ScenarioError("bind: " + why)
        }
        self.listener = listener
        port = UInt16(bigEndian: addr.sin_port)
        // A thread of its own, so that a blocking accept never takes one of Dispatch's workers.
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<FixtureServer>.fromOpaque(context!).takeRetainedValue().acceptLoop()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        guard started == 0 else { throw ScenarioError("pthread_create: " + Posix.errorText(started)) }
        pthread_detach(thread)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { if errno == EINTR || errno == ECONNABORTED { continue } else { return } }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            DispatchQueue.global().async { self.serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        var request = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 4096)
        while !request.contains(10) && request.count < 65536 {
            let n = read(fd, &buf, buf.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            request += buf[..<n]
        }
        let line = String(decoding: request.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" else { return respond(fd, 400, Array("bad request\n".utf8)) }
        let target = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = Self.percentDecoded(target[0])
        let query = target.count > 1 ? target[1].split(separator: "&") : []
        let delay = query.lazy.compactMap { item -> Double? in
            item.hasPrefix("delay=") ? Double(item.dropFirst("delay=".count)) : nil
        }.first ?? 0
        // No `..`: a request never leaves the fixture directory.
        let inside = path.hasPrefix("/") && !path.split(separator: "/").contains("..")
        let body = inside ? Posix.readFile(root + path) : nil
        let answer: @Sendable () -> Void = { self.respond(fd, body == nil ? 404 : 200, body ?? Array("not found\n".utf8)) }
        if delay > 0 {
            DispatchQueue.global().asyncAfter(deadline: .now() + min(delay, 30), execute: answer)
        } else {
            answer()
        }
    }

    private func respond(_ fd: Int32, _ status: Int, _ body: [UInt8]) {
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found"][status] ?? "Error"
        let head = "HTTP/1.0 \(status) \(reason)\r\nContent-Length: \(body.count)\r\n"
            + "Content-Type: application/json\r\nConnection: close\r\n\r\n"
        Posix.writeAll(fd, Array(head.utf8) + body)
        close(fd)
    }

    /// `%XX` escapes decoded (a malformed escape is kept as it is).
    static func percentDecoded(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2,
               let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
