import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.net`: the sockets a GCD server is made of (a read source on a listening socket, a
/// channel per connection). Every socket is non-blocking and close-on-exec. System failures
/// return `nil, message, "ENAME"` (`"EAI_NONAME"` and the like for names that do not resolve);
/// wrong arguments raise. Names are resolved without the interpreter.
enum NetBinding {
    static func install(_ m: inout ModuleSpec) {
        m.table("net") { t in
            t.function("listen", listen)
            t.function("accept", accept)
            t.function("connect", NetConnect.start)
            t.function("udp", udp)
            t.function("sendto", sendto)
            t.function("recvfrom", recvfrom)
            t.function("shutdown", shutdown)
        }
    }

    /// `listen{host="127.0.0.1", port=0, backlog=128}` or `{path=, backlog=}`: `fd, port` or `fd, path`.
    static func listen(_ a: Args) throws(LuaError) -> Int32 {
        try a.table(1)
        var backlog = 128
        let target = try Endpoint.parse(a, 1, ports: 0...65535) { o throws(LuaError) in
            guard o.key == "backlog" else { return false }
            backlog = try o.integer()
            guard backlog >= 0 else { throw .argument(1, "option 'backlog': must be >= 0, got \(backlog)") }
            return true
        }
        ld_net_quiet_sigpipe()
        var addr: ld_net_addr
        switch target.resolve(a, datagram: false) {
        case .success(let resolved): addr = resolved
        case .failure(let failure): return failure.push(a.L)
        }
        let fd = ld_net_listen(&addr, Int32(min(backlog, Int(Int32.max))))
        guard fd >= 0 else { return Errno.pushFailure(a.L, -fd, context: target.description) }
        lua_pushinteger(a.L, lua_Integer(fd))
        return pushLocal(a.L, fd, target) + 1
    }

    /// `accept(fd)`: `conn_fd, peer`, or `nil, "EAGAIN"` when no connection waits.
    static func accept(_ a: Args) throws(LuaError) -> Int32 {
        let fd = try FDBinding.descriptor(a, 1)
        var peer = ld_net_addr()
        let c = ld_net_accept(fd, &peer)
        if c == -EAGAIN || c == -EWOULDBLOCK {
            lua_pushnil(a.L)
            Lua.push(a.L, "EAGAIN")
            Lua.push(a.L, "EAGAIN")
            return 3
        }
        guard c >= 0 else { return Errno.pushFailure(a.L, -c) }
        lua_pushinteger(a.L, lua_Integer(c))
        if peer.storage.ss_family == sa_family_t(AF_UNIX) {
            // A Unix client is usually unnamed: name the path it connected to instead.
            var local = ld_net_addr()
            if ld_net_local(c, &local) == 0 { peer = local }
        }
        Lua.push(a.L, format(&peer))
        return 2
    }

    /// `udp{host="127.0.0.1", port=0}`: a bound datagram socket, `fd, port`.
    static func udp(_ a: Args) throws(LuaError) -> Int32 {
        if !a.isNoneOrNil(1) { try a.table(1) }
        let target = try Endpoint.parse(a, 1, ports: 0...65535, paths: false) { _ throws(LuaError) in false }
        ld_net_quiet_sigpipe()
        var addr: ld_net_addr
        switch target.resolve(a, datagram: true) {
        case .success(let resolved): addr = resolved
        case .failure(let failure): return failure.push(a.L)
        }
        let fd = ld_net_udp(&addr)
        guard fd >= 0 else { return Errno.pushFailure(a.L, -fd, context: target.description) }
        lua_pushinteger(a.L, lua_Integer(fd))
        return pushLocal(a.L, fd, target) + 1
    }

    /// `sendto(fd, data, host, port)`: one datagram; the bytes sent.
    static func sendto(_ a: Args) throws(LuaError) -> Int32 {
        let fd = try FDBinding.descriptor(a, 1)
        let data = try DataBinding.argument(a, 2)
        let host = try Endpoint.host(a, 3, try a.string(3))
        let port = try Endpoint.port(a, 4, try a.integer(4), 1...65535)
        let target = Endpoint.inet(host: host, port: port)
        var addr: ld_net_addr
        switch target.resolve(a, datagram: true) {
        case .success(let resolved): addr = resolved
        case .failure(let failure): return failure.push(a.L)
        }
        let bytes = [UInt8](data)
        let n = bytes.withUnsafeBytes { p in ld_net_sendto(fd, p.baseAddress, p.count, &addr) }
        guard n >= 0 else { return Errno.pushFailure(a.L, Int32(-n)) }
        lua_pushinteger(a.L, lua_Integer(n))
        return 1
    }

    /// The largest datagram `recvfrom` returns whole (IPv4's limit is 65,507 bytes).
    static let maxDatagram = 65536

    /// `recvfrom(fd, max)`: `data, host, port` (data a string), or `nil, "EAGAIN"`.
    static func recvfrom(_ a: Args) throws(LuaError) -> Int32 {
        let fd = try FDBinding.descriptor(a, 1)
        let max = try a.integer(2)
        guard max >= 1 else { throw .argument(2, "length must be >= 1, got \(max)") }
        var buffer = [UInt8](repeating: 0, count: min(max, maxDatagram))
        var from = ld_net_addr()
        let n = buffer.withUnsafeMutableBytes { p in ld_net_recvfrom(fd, p.baseAddress, p.count, &from) }
        if n == -Int(EAGAIN) {
            lua_pushnil(a.L)
            Lua.push(a.L, "EAGAIN")
            Lua.push(a.L, "EAGAIN")
            return 3
        }
        guard n >= 0 else { return Errno.pushFailure(a.L, Int32(-n)) }
        buffer.withUnsafeBytes { p in _ = lua_pushlstring(a.L, p.baseAddress?.assumingMemoryBound(to: CChar.self), n) }
        var text = format(&from)
        if text.hasSuffix(":\(ld_net_port(&from))") { text.removeLast(":\(ld_net_port(&from))".count) }
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        Lua.push(a.L, text)
        lua_pushinteger(a.L, lua_Integer(ld_net_port(&from)))
        return 3
    }

    /// `shutdown(fd, "read" | "write" | "both")`: `true`.
    static func shutdown(_ a: Args) throws(LuaError) -> Int32 {
        let fd = try FDBinding.descriptor(a, 1)
        let how: Int32
        switch try a.string(2) {
        case "read": how = 0
        case "write": how = 1
        case "both": how = 2
        case let s: throw .argument(2, "invalid option '\(s)' (\"read\", \"write\" or \"both\" expected)")
        }
        let r = ld_net_shutdown(fd, how)
        guard r == 0 else { return Errno.pushFailure(a.L, -r) }
        lua_pushboolean(a.L, 1)
        return 1
    }

    /// Pushes the port a socket is bound to (or the path it was bound to); returns 1.
    private static func pushLocal(_ L: OpaquePointer, _ fd: Int32, _ target: Endpoint) -> Int32 {
        if case .unix(let path) = target {
            Lua.push(L, path)
            return 1
        }
        var local = ld_net_addr()
        _ = ld_net_local(fd, &local)
        lua_pushinteger(L, lua_Integer(ld_net_port(&local)))
        return 1
    }

    static func format(_ addr: inout ld_net_addr) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        buffer.withUnsafeMutableBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { ld_net_format(&addr, $0.baseAddress, $0.count) }
        }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }
}

/// Where a socket binds or connects: a host and port, or a Unix-domain path.
enum Endpoint: CustomStringConvertible, Sendable {
    case inet(host: String, port: Int)
    case unix(String)

    var description: String {
        switch self {
        case .inet(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): path
        }
    }

    /// The options table at `i`: `host`, `port` and (when `paths`) `path`; other keys go to `extra`.
    static func parse(_ a: Args, _ i: Int32, ports: ClosedRange<Int>, paths: Bool = true,
                      extra: (inout Options) throws(LuaError) -> Bool) throws(LuaError) -> Endpoint {
        var host: String?, port: Int?, path: String?
        try Options.parse(a, i) { o throws(LuaError) in
            switch o.key {
            case "host": host = try Endpoint.host(a, i, try o.string(), option: true)
            case "port": port = try Endpoint.port(a, i, try o.integer(), ports, option: true)
            case "path" where paths: path = try o.string()
            default: return try extra(&o)
            }
            return true
        }
        if let path {
            guard host == nil, port == nil else { throw .argument(i, "option 'path' excludes 'host' and 'port'") }
            guard !path.isEmpty, !path.utf8.contains(0) else { throw .argument(i, "option 'path': invalid path") }
            let max = Int(ld_net_unix_max())
            guard path.utf8.count <= max else {
                throw .argument(i, "option 'path': longer than \(max) bytes (\(path.utf8.count))")
            }
            return .unix(path)
        }
        guard let port = port ?? (ports.contains(0) ? 0 : nil) else { throw .argument(i, "option 'port' expected") }
        return .inet(host: host ?? "127.0.0.1", port: port)
    }

    /// A host name or numeric address: letters, digits and `.-_:%` (an IPv6 address may come in
    /// brackets), at most 253 bytes.
    static func host(_ a: Args, _ i: Int32, _ s: String, option: Bool = false) throws(LuaError) -> String {
        var h = Substring(s)
        if h.hasPrefix("[") && h.hasSuffix("]") { h = h.dropFirst().dropLast() }
        let valid = !h.isEmpty && h.utf8.count <= 253 && h.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == 0x2E || c == 0x2D || c == 0x5F || c == 0x3A || c == 0x25
        }
        guard valid else { throw .argument(i, "\(option ? "option 'host': " : "")invalid host '\(s)'") }
        return String(h)
    }

    static func port(_ a: Args, _ i: Int32, _ n: Int, _ range: ClosedRange<Int>, option: Bool = false) throws(LuaError) -> Int {
        guard range.contains(n) else {
            throw .argument(i, "\(option ? "option 'port': " : "port ")out of range (\(range.lowerBound)-\(range.upperBound)), got \(n)")
        }
        return n
    }

    /// A name that does not resolve: `nil, "host: message", "EAI_..."`.
    struct ResolveFailure: Error {
        let host: String
        let code: Int32
        func push(_ L: OpaquePointer) -> Int32 {
            lua_pushnil(L)
            Lua.push(L, "\(host): \(String(cString: ld_net_gai_message(code)))")
            Lua.push(L, String(cString: ld_net_gai_name(code)))
            return 3
        }
    }

    /// The first address for this endpoint; a name is resolved with the interpreter released.
    func resolve(_ a: Args, datagram: Bool) -> Result<ld_net_addr, ResolveFailure> {
        if let addr = immediate { return .success(addr) }
        let all = a.runtime.unlocked { addresses(datagram: datagram, passive: true, max: 1) }
        return all.map { $0[0] }
    }

    /// The address of a path or of a numeric host, which needs no resolver.
    var immediate: ld_net_addr? {
        var addr = ld_net_addr()
        switch self {
        case .unix(let path): return ld_net_unix(path, &addr) == 0 ? addr : nil
        case .inet(let host, let port): return ld_net_numeric(host, Int32(port), &addr) == 1 ? addr : nil
        }
    }

    /// Every address for this endpoint. Blocks while the resolver works: never call it holding
    /// the interpreter.
    func addresses(datagram: Bool, passive: Bool, max: Int = 8) -> Result<[ld_net_addr], ResolveFailure> {
        if let addr = immediate { return .success([addr]) }
        switch self {
        case .unix: return .failure(ResolveFailure(host: description, code: EAI_FAMILY))
        case .inet(let host, let port):
            var list = [ld_net_addr](repeating: ld_net_addr(), count: max)
            let n = ld_net_resolve(host, Int32(port), datagram ? 1 : 0, passive ? 1 : 0, &list, Int32(max))
            guard n > 0 else { return .failure(ResolveFailure(host: host, code: n)) }
            return .success(Array(list[0..<Int(n)]))
        }
    }
}
