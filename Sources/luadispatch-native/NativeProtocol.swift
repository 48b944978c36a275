import Foundation

/// The protocol half of the native request/response servers, in Swift: the same Redis subset
/// and keep-alive HTTP/1.1 answers as scripts/examples/reqresp.lua (same reply bytes), shared
/// by both native designs (NativeSourceServer, NativeEpollServer) so that only the socket layer
/// differs between them. Every session runs on its server's one queue.
class NativeSession {
    /// Bytes of an unfinished request, kept for the next read.
    private var pending: [UInt8] = []

    /// Appends to `out` the replies to every complete request in what was pending followed by
    /// `bytes`; true when the connection ends after them.
    final func feed(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) -> Bool {
        if pending.isEmpty {
            let (used, close) = parse(bytes, &out)
            if used < bytes.count && !close { pending.append(contentsOf: bytes[used...]) }
            return close
        }
        pending.append(contentsOf: bytes)
        let (used, close) = pending.withUnsafeBytes { parse($0, &out) }
        pending.removeFirst(used)
        return close
    }

    /// Answers the complete requests at the start of `b`: the bytes they took, and whether the
    /// connection ends after them.
    func parse(_ b: UnsafeRawBufferPointer, _ out: inout [UInt8]) -> (Int, Bool) { (b.count, false) }

    /// The index of `needle` in `b` at or after `from`, or nil.
    static func find(_ needle: [UInt8], in b: UnsafeRawBufferPointer, from: Int, to end: Int? = nil) -> Int? {
        let end = end ?? b.count
        guard needle.count > 0, end - needle.count >= from else { return nil }
        var i = from
        outer: while i <= end - needle.count {
            for (k, c) in needle.enumerated() where b[i + k] != c { i += 1; continue outer }
            return i
        }
        return nil
    }

    static func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c + 32 : c }

    /// An integer written in `b[r]` (decimal, optional sign), as Lua's `tonumber` reads it for
    /// these protocols.
    static func integer(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Int? {
        Int(String(decoding: UnsafeRawBufferPointer(rebasing: b[r]), as: UTF8.self))
    }
}

/// The keys and values every Redis session of a server shares.
final class NativeStore {
    var values: [[UInt8]: [UInt8]] = [:]
}

/// A Redis session: PING, SET, GET, INCR, QUIT, and enough of CONFIG and COMMAND for
/// redis-benchmark, multibulk or inline.
final class RedisSession: NativeSession {
    let store: NativeStore
    init(_ store: NativeStore) { self.store = store }

    struct ProtocolError: Error { let message: String }

    override func parse(_ b: UnsafeRawBufferPointer, _ out: inout [UInt8]) -> (Int, Bool) {
        var pos = 0
        var words: [Range<Int>] = []
        while pos < b.count {
            words.removeAll(keepingCapacity: true)
            let after: Int?
            do { after = try Self.command(b, pos, &words) } catch let e as ProtocolError {
                out += Array("-ERR \(e.message)\r\n".utf8)
                return (b.count, true)
            } catch { return (b.count, true) }
            guard let next = after else { break }
            pos = next
            if !words.isEmpty, execute(b, words, &out) { return (pos, true) }
        }
        return (pos, false)
    }

    /// One command at `pos` into `words`: the position after it, or nil when `b` ends first.
    static func command(_ b: UnsafeRawBufferPointer, _ start: Int, _ words: inout [Range<Int>]) throws -> Int? {
        var pos = start
        if b[pos] == 42 {  // '*'
            guard let e = find(crlf, in: b, from: pos) else { return nil }
            guard let n = integer(b, pos + 1..<e) else { throw ProtocolError(message: "protocol error: bad multibulk length") }
            pos = e + 2
            for _ in 0..<max(n, 0) {
                guard pos < b.count else { return nil }
                guard b[pos] == 36 else { throw ProtocolError(message: "protocol error: '$' expected") }
                guard let e = find(crlf, in: b, from: pos) else { return nil }
                guard let len = integer(b, pos + 1..<e) else { throw ProtocolError(message: "protocol error: bad bulk length") }
                let s = e + 2
                if s + len + 2 > b.count { return nil }
                words.append(s..<s + len)
                pos = s + len + 2
            }
            return pos
        }
        guard let e = find([10], in: b, from: pos) else { return nil }
        let end = e > pos && b[e - 1] == 13 ? e - 1 : e
        var i = pos
        while i < end {
            while i < end && isSpace(b[i]) { i += 1 }
            let w = i
            while i < end && !isSpace(b[i]) { i += 1 }
            if i > w { words.append(w..<i) }
        }
        return e + 1
    }

    static func isSpace(_ c: UInt8) -> Bool { c == 32 || (c >= 9 && c <= 13) }
    static let crlf: [UInt8] = [13, 10]

    static func bulk(_ s: some Collection<UInt8>, _ out: inout [UInt8]) {
        out += Array("$\(s.count)\r\n".utf8)
        out += s
        out += crlf
    }

    /// Whether `b[r]` is `name` (upper case), ignoring case.
    static func named(_ b: UnsafeRawBufferPointer, _ r: Range<Int>, _ name: StaticString) -> Bool {
        guard r.count == name.utf8CodeUnitCount else { return false }
        let p = name.utf8Start
        for k in 0..<r.count where lower(b[r.lowerBound + k]) != lower(p[k]) { return false }
        return true
    }

    /// Appends the reply to one command; true when the connection ends after it.
    func execute(_ b: UnsafeRawBufferPointer, _ w: [Range<Int>], _ out: inout [UInt8]) -> Bool {
        func bytes(_ i: Int) -> [UInt8] { i < w.count ? Array(b[w[i]]) : [] }
        let name = w[0]
        if Self.named(b, name, "PING") {
            if w.count > 1 { Self.bulk(b[w[1]], &out) } else { out += Self.pong }
        } else if Self.named(b, name, "SET") {
            if w.count < 3 { out += Array("-ERR wrong number of arguments for 'set' command\r\n".utf8); return false }
            store.values[bytes(1)] = bytes(2)
            out += Self.ok
        } else if Self.named(b, name, "GET") {
            if let v = store.values[bytes(1)] { Self.bulk(v, &out) } else { out += Self.null }
        } else if Self.named(b, name, "INCR") {
            let key = bytes(1)
            let old = store.values[key].map { String(decoding: $0, as: UTF8.self) } ?? "0"
            guard let n = Int(old) ?? Double(old).flatMap({ $0 == $0.rounded() ? Int(exactly: $0) : nil }),
                  n < Int.max else {
                out += Array("-ERR value is not an integer or out of range\r\n".utf8)
                return false
            }
            store.values[key] = Array(String(n + 1).utf8)
            out += Array(":\(n + 1)\r\n".utf8)
        } else if Self.named(b, name, "CONFIG") {  // redis-benchmark asks for "save" and "appendonly"
            out += Array("*2\r\n".utf8)
            Self.bulk(bytes(2), &out)
            Self.bulk([], &out)
        } else if Self.named(b, name, "COMMAND") {
            out += Array("*0\r\n".utf8)
        } else if Self.named(b, name, "QUIT") {
            out += Self.ok
            return true
        } else {
            out += Array("-ERR unknown command '".utf8) + Array(b[name]) + Array("'\r\n".utf8)
        }
        return false
    }

    static let pong = Array("+PONG\r\n".utf8), ok = Array("+OK\r\n".utf8), null = Array("$-1\r\n".utf8)
}

/// An HTTP/1.1 session answering every request with a small text: keep-alive as HTTP/1.1 says
/// (HTTP/1.0 only with "Connection: keep-alive"); request bodies with Content-Length skipped.
final class HTTPSession: NativeSession {
    static let body = "Hello, World!"
    static let keep = Array("HTTP/1.1 200 OK\r\nServer: reqresp\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    static let keep10 = Array("HTTP/1.0 200 OK\r\nServer: reqresp\r\nConnection: keep-alive\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    static let last = Array("HTTP/1.1 200 OK\r\nServer: reqresp\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    static let end: [UInt8] = [13, 10, 13, 10]
    static let contentLength = Array("\r\ncontent-length:".utf8), connection = Array("\r\nconnection:".utf8)

    override func parse(_ b: UnsafeRawBufferPointer, _ out: inout [UInt8]) -> (Int, Bool) {
        var pos = 0
        while pos < b.count {
            guard let e = Self.find(Self.end, in: b, from: pos) else { break }
            let head = pos..<e + 2
            let len = Self.header(b, head, Self.contentLength, digits: true).flatMap { Self.integer(b, $0) } ?? 0
            if e + 4 + len > b.count { break }
            pos = e + 4 + len
            let line = Self.find(RedisSession.crlf, in: b, from: head.lowerBound)!
            let v10 = line - head.lowerBound >= 3 && b[line - 3] == 49 && b[line - 2] == 46 && b[line - 1] == 48  // "1.0"
            let conn = Self.header(b, head, Self.connection, digits: false).map { String(decoding: b[$0].map(Self.lower), as: UTF8.self) }
            if conn == "close" || (v10 && conn != "keep-alive") {
                out += Self.last
                return (pos, true)
            }
            out += v10 ? Self.keep10 : Self.keep
        }
        return (pos, false)
    }

    /// The value of the first header `name` ("\r\nname:", lower case) in `head` whose value
    /// (after blanks) is digits (`digits`) or letters, digits and '-'.
    static func header(_ b: UnsafeRawBufferPointer, _ head: Range<Int>, _ name: [UInt8], digits: Bool) -> Range<Int>? {
        var i = head.lowerBound
        while i + name.count <= head.upperBound {
            var k = 0
            while k < name.count && lower(b[i + k]) == name[k] { k += 1 }
            if k == name.count {
                var s = i + k
                while s < head.upperBound && RedisSession.isSpace(b[s]) { s += 1 }
                var t = s
                while t < head.upperBound && (digits ? isDigit(b[t]) : isDigit(b[t]) || isLetter(b[t]) || b[t] == 45) { t += 1 }
                if t > s { return s..<t }
            }
            i += 1
        }
        return nil
    }

    static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
    static func isLetter(_ c: UInt8) -> Bool { (c | 32) >= 97 && (c | 32) <= 122 }
}

/// What the native servers share: the listening socket, the session maker, the limits.
enum NativeServe {
    /// A read takes at most this much (as the Lua servers do).
    static let readSize = 64 << 10
    /// Replies pending on one connection beyond this stop its reading until they drain.
    static let pendingLimit = 4 << 20

    /// A session maker for "redis" or "http", or nil.
    static func sessions(_ name: String) -> (() -> NativeSession)? {
        switch name {
        case "redis":
            let store = NativeStore()
            return { RedisSession(store) }
        case "http": return { HTTPSession() }
        default: return nil
        }
    }

    /// A non-blocking listening socket on 127.0.0.1:`port` (0: any free port), and its port.
    static func listen(port: UInt16) -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var addr = NativeEcho.loopback(port: port)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                precondition(bind(fd, sa, len) == 0 && Glibc.listen(fd, 1024) == 0, "cannot listen on port \(port)")
                precondition(getsockname(fd, sa, &len) == 0)
            }
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return (fd, UInt16(bigEndian: addr.sin_port))
    }

    /// One accepted connection, non-blocking, TCP_NODELAY (as the luv servers set it), or nil
    /// when none is waiting (or descriptors ran out: the next readiness retries).
    static func accept(_ lfd: Int32) -> Int32? {
        let c = accept4(lfd, nil, nil, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        guard c >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(c, Int32(IPPROTO_TCP), TCP_NODELAY, &one, 4)
        return c
    }

    /// accept4(2), which Glibc's module leaves out: flags set in the same call.
    static let accept4 = unsafeBitCast(dlsym(nil, "accept4"),
                                       to: (@convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32).self)

    /// `luadispatch-native serve redis|http source|epoll [PORT]`: prints the port, then serves
    /// until killed.
    static func main(_ args: [String]) -> Never {
        guard args.count >= 2, let make = sessions(args[0]), ["source", "epoll"].contains(args[1]) else {
            FileHandle.standardError.write(Data("usage: luadispatch-native serve redis|http source|epoll [PORT]\n".utf8))
            exit(2)
        }
        signal(SIGPIPE, SIG_IGN)
        let (lfd, port) = listen(port: UInt16(args.count > 2 ? Int(args[2]) ?? 0 : 0))
        let queue = DispatchQueue(label: "native.server")
        if args[1] == "source" { NativeSourceServer.start(lfd, queue, make) } else { NativeEpollServer.start(lfd, queue, make) }
        print(port)
        fflush(nil)  // every stream: the pipe reader waits for the port
        dispatchMain()
    }
}
