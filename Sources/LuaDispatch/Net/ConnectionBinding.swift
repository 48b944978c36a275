import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.net.serve`, `dispatch.net.dial`, `dispatch.net.wrap` and the methods of their
/// connection and server objects (docs/net.md).
enum ConnectionBinding {
    static func install(_ m: inout ModuleSpec) {
        m.table("net") { t in
            t.function("serve", serve)
            t.function("dial", NetConnect.dial)
            t.function("wrap", wrap)
        }
        m.types.append(connectionType())
        m.types.append(serverType())
    }

    /// The queue of `i` (a queue object), or the default: the main queue when called on the
    /// main thread (the CLI's script), else a new serial queue for this server or connection.
    static func queue(_ a: Args, _ given: QueueObject?, label: String) -> QueueObject {
        if let given { return given }
        if ld_is_main_thread() != 0 { return a.runtime.mainQueue }
        let q = QueueObject(queue: DispatchQueue(label: label), label: label, concurrent: false)
        q.registry = a.runtime.ledger.queues
        a.runtime.ledger.queues.add(q)
        return q
    }

    static func poller(_ a: Args, _ q: QueueObject) -> Result<NetPoller, Errno.Code> {
        NetPoller.of(a.runtime, q)
    }

    /// `serve{host="127.0.0.1", port=0, backlog=511, queue=, reuseport=false, on_error=} or
    /// {path=, ...}, fn(conn)`: the server, or `nil, message, code`.
    static func serve(_ a: Args) throws(LuaError) -> Int32 {
        try a.table(1)
        var backlog = 511, reuseport = false
        var given: QueueObject?, onErrorRef: LuaRef?
        let target = try Endpoint.parse(a, 1, ports: 0...65535) { o throws(LuaError) in
            switch o.key {
            case "backlog":
                backlog = try o.integer()
                guard backlog >= 0 else { throw .argument(1, "option 'backlog': must be >= 0, got \(backlog)") }
            case "queue": given = try o.object(.queue)
            case "reuseport": reuseport = try o.bool()
            case "on_error": onErrorRef = LuaRef(a.runtime, a.ref(try o.function()))
            default: return false
            }
            return true
        }
        try a.function(2)
        ld_net_quiet_sigpipe()
        var addr: ld_net_addr
        switch target.resolve(a, datagram: false) {
        case .success(let resolved): addr = resolved
        case .failure(let failure): return failure.push(a.L)
        }
        let fd = ld_netpoll_listen(&addr, Int32(min(backlog, Int(Int32.max))), reuseport ? 1 : 0)
        guard fd >= 0 else { return Errno.pushFailure(a.L, -fd, context: target.description) }
        var local = target
        if case .inet(let host, _) = target {
            var bound = ld_net_addr()
            _ = ld_net_local(fd, &bound)
            local = .inet(host: host, port: Int(ld_net_port(&bound)))
        }
        let q = queue(a, given, label: "dispatch.net.server \(local)")
        let poller: NetPoller
        switch NetPoller.of(a.runtime, q) {
        case .success(let p): poller = p
        case .failure(let e):
            Glibc.close(fd)
            return Errno.pushFailure(a.L, e.value, context: target.description)
        }
        let server = ServerObject(poller, fd: fd, local: local, handler: LuaRef(a.runtime, a.ref(2)), onError: onErrorRef)
        let r = server.start()
        guard r == 0 else { return Errno.pushFailure(a.L, r, context: target.description) }
        a.runtime.objects.push(a.L, server, .server)
        server.pin(a.L, -1)
        return 1
    }

    /// `wrap(fd [, queue])`: a connection over a connected stream socket, which it now owns.
    static func wrap(_ a: Args) throws(LuaError) -> Int32 {
        let fd = try FDBinding.descriptor(a, 1)
        let given: QueueObject? = a.isNoneOrNil(2) ? nil : try a.object(2, .queue)
        guard ld_netpoll_socket_type(fd) == Int32(SOCK_STREAM.rawValue) else {
            throw .argument(1, "stream socket expected (fd \(fd))")
        }
        ld_net_quiet_sigpipe()
        let r = ld_netpoll_prepare(fd)
        guard r == 0 else { return Errno.pushFailure(a.L, -r, context: "fd \(fd)") }
        switch NetPoller.of(a.runtime, queue(a, given, label: "dispatch.net.connection")) {
        case .success(let poller):
            var peer = ld_net_addr()
            peer.length = socklen_t(MemoryLayout.size(ofValue: peer.storage))
            withUnsafeMutablePointer(to: &peer.storage) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getpeername(fd, $0, &peer.length) }
            }
            a.runtime.objects.push(a.L, ConnectionObject(poller, fd: fd, peer: peer), .connection)
            return 1
        case .failure(let e):
            return Errno.pushFailure(a.L, e.value, context: "fd \(fd)")
        }
    }

    /// Pushes a new connection for `fd` (connected by `dial`) on `T`; on failure closes `fd` and
    /// pushes `nil, message, code`. The count pushed.
    static func pushConnection(_ runtime: Runtime, _ T: OpaquePointer, _ q: QueueObject, _ fd: Int32) -> Int32 {
        switch NetPoller.of(runtime, q) {
        case .success(let poller):
            var peer = ld_net_addr()
            peer.length = socklen_t(MemoryLayout.size(ofValue: peer.storage))
            withUnsafeMutablePointer(to: &peer.storage) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getpeername(fd, $0, &peer.length) }
            }
            if peer.storage.ss_family != sa_family_t(AF_UNIX) { _ = ld_netpoll_set_option(fd, 0, 1) }
            runtime.objects.push(T, ConnectionObject(poller, fd: fd, peer: peer), .connection)
            return 1
        case .failure(let e):
            Glibc.close(fd)
            return Errno.pushFailure(T, e.value, context: "connect")
        }
    }

    static let optionNames = ["nodelay", "keepalive", "reuseaddr", "reuseport", "rcvbuf", "sndbuf"]
}
