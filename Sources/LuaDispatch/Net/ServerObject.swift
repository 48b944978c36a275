import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// A listening socket of `dispatch.net.serve` (`dispatch.server`): each accepted connection
/// goes to the handler on the server's queue. Open servers are pinned (outstanding work, their
/// userdata held) until closed. Fields change under the interpreter lock only.
final class ServerObject: PollMember, @unchecked Sendable {
    let runtime: Runtime
    let poller: NetPoller
    let fd: Int32
    let local: Endpoint
    private var token: UInt64 = 0
    private let handler: LuaRef
    private let onError: LuaRef?
    private(set) var open = true
    private var paused = false
    /// Whether the current run of accept failures was reported (one report per run).
    private var reported = false
    private var pinRef: Int32 = LUA_NOREF
    /// Accept failures seen (for tests and `server.accept_errors`).
    private(set) var acceptErrors = 0
    /// Whether accepted sockets inherit `TCP_NODELAY` from the listening socket, which has it
    /// (Linux does): then a connection is spared a setsockopt, one of the seven or so system
    /// calls of a connection that carries one request. nil until the first TCP connection.
    private var nodelayInherited: Bool?

    /// How long accepting pauses after EMFILE/ENFILE before it tries again.
    static let retryDelay = 0.1

    init(_ poller: NetPoller, fd: Int32, local: Endpoint, handler: LuaRef, onError: LuaRef?) {
        runtime = poller.runtime
        self.poller = poller
        self.fd = fd
        self.local = local
        self.handler = handler
        self.onError = onError
    }

    /// Starts accepting: 0, or an errno (the server is closed then, its descriptor too).
    func start() -> Int32 {
        if case .inet = local { _ = ld_netpoll_set_option(fd, 0, 1) }
        token = poller.add(self)
        let r = ld_netpoll_interest(poller.set, fd, token, 0, Int32(LD_NETPOLL_READ))
        if r != 0 { paused = true; close() }
        return -r
    }

    var description: String { "dispatch.server (\(open ? "\(local)" : "closed"))" }

    /// Holds the userdata at `i` while the server is open.
    func pin(_ L: OpaquePointer, _ i: Int32) {
        guard open, pinRef == LUA_NOREF else { return }
        lua_pushvalue(L, i)
        pinRef = luaL_ref(L, ld_registryindex())
        runtime.workAdded()
    }

    func ready(_ flags: UInt32, _ T: OpaquePointer) {
        // A bounded batch: other sockets of the queue get their turn, the rest is reported again.
        for _ in 0..<64 {
            guard open, !paused else { return }
            var peer = ld_net_addr()
            let c = ld_net_accept(fd, &peer)
            if c >= 0 {
                reported = false
                accepted(c, peer, T)
                continue
            }
            switch -c {
            case EAGAIN, EWOULDBLOCK: return
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: return pause(-c, T)
            default: acceptErrors += 1  // the connection failed before it was accepted: the next one
            }
        }
    }

    private func accepted(_ c: Int32, _ peer: ld_net_addr, _ T: OpaquePointer) {
        if peer.storage.ss_family != sa_family_t(AF_UNIX) {
            if nodelayInherited == nil { nodelayInherited = ld_netpoll_get_option(c, 0) > 0 }
            if nodelayInherited != true { _ = ld_netpoll_set_option(c, 0, 1) }
        }
        let conn = ConnectionObject(poller, fd: c, peer: peer, accepted: true)
        lua_rawgeti(T, ld_registryindex(), lua_Integer(handler.ref))
        runtime.objects.push(T, conn, .connection)
        poller.call(T, 1)
        conn.readAccepted(T)
    }

    /// Out of descriptors (or memory): accepting stops for `retryDelay`, then tries again (the
    /// listener stays out of the set meanwhile, so nothing spins). The first failure of a run is
    /// reported to `on_error`, or as a warning on standard error.
    private func pause(_ error: Int32, _ T: OpaquePointer) {
        acceptErrors += 1
        paused = true
        _ = ld_netpoll_interest(poller.set, fd, token, Int32(LD_NETPOLL_READ), 0)
        if !reported {
            reported = true
            let message = "accept on \(local): \(Errno.name(error)) (\(Errno.message(error))); retrying every \(Self.retryDelay) s"
            if let onError {
                lua_rawgeti(T, ld_registryindex(), lua_Integer(onError.ref))
                Lua.push(T, message)
                Lua.push(T, Errno.name(error))
                poller.call(T, 2)
            } else {
                writeStderr("luadispatch: warning: dispatch.net.serve: \(message)\n")
            }
        }
        // Not a Dispatch timer: libdispatch makes its timer descriptor when it first needs it,
        // and in a process out of descriptors it cannot, so the timer would never fire.
        let q = poller.queue.queue
        DispatchQueue.global().async { [self] in
            usleep(useconds_t(Self.retryDelay * 1e6))
            q.async { [self] in
                guard runtime.enterLua() else { return }
                if open && paused {
                    paused = false
                    _ = ld_netpoll_interest(poller.set, fd, token, 0, Int32(LD_NETPOLL_READ))
                }
                runtime.leaveLua()
            }
        }
    }

    func close() {
        guard open else { return }
        open = false
        if !paused { _ = ld_netpoll_interest(poller.set, fd, token, Int32(LD_NETPOLL_READ), 0) }
        Glibc.close(fd)
        if case .unix(let path) = local { unlink(path) }
        poller.remove(token)
        if pinRef != LUA_NOREF {
            runtime.deferUnref(pinRef)
            pinRef = LUA_NOREF
            runtime.workDone()
        }
    }
}
