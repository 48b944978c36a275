import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// A connected stream socket of `dispatch.net` (`dispatch.connection`): reads delivered as Lua
/// strings to a data callback, writes made at once (from the poller's callbacks, at the end of
/// their round) and queued only when the socket's buffer is full. Every field changes under the
/// interpreter lock only (bindings and the poller's deliveries both hold it).
///
/// While it reads, has bytes queued or is flushing before a close, the connection is pinned:
/// it counts as outstanding work and holds its Lua userdata. Otherwise a connection that Lua
/// can no longer reach is closed when collected.
final class ConnectionObject: PollMember, @unchecked Sendable {
    enum State { case open, closing, closed }

    let runtime: Runtime
    let poller: NetPoller
    let fd: Int32
    private(set) var token: UInt64 = 0
    private var peerAddress: ld_net_addr
    private(set) var state = State.open
    private var interest: Int32 = 0
    private var onData: LuaRef?
    private var onDrain: LuaRef?
    /// Bytes not yet written: `pending[head...]`.
    private var pending: [UInt8] = []
    private var head = 0
    /// Write callbacks, each with the count of queued bytes (`queuedTotal`) that must be written
    /// before it runs.
    private var callbacks: [(end: Int, fn: LuaRef)] = []
    private var queuedTotal = 0, writtenTotal = 0
    private var shutdownRequested = false
    private var writeError: Int32 = 0
    /// Whether the queue holds bytes of the poller's current round, not yet offered to the
    /// socket (`NetPoller.corking`).
    private var corked = false
    /// Whether the queue waits for the socket to take more: `on_drain` runs when it empties.
    private var waitsOnSocket = false
    private var pinRef: Int32 = LUA_NOREF
    /// Whether no other descriptor refers to the socket (one a server accepted, close-on-exec
    /// from the start): closing it then takes it out of the set, and `finish` spares the
    /// epoll_ctl. A wrapped descriptor may have been duplicated, and a duplicate left open would
    /// keep it in the set, reported there for ever.
    private let soleReference: Bool

    var writeQueueSize: Int { pending.count - head }

    init(_ poller: NetPoller, fd: Int32, peer: ld_net_addr, accepted: Bool = false) {
        runtime = poller.runtime
        self.poller = poller
        self.fd = fd
        peerAddress = peer
        soleReference = accepted
        token = poller.add(self)
    }

    /// "host:port", or the path of a Unix-domain socket.
    var peer: String {
        var addr = peerAddress
        if addr.storage.ss_family == sa_family_t(AF_UNIX) || addr.length == 0 {
            var local = ld_net_addr()
            if ld_net_local(fd, &local) == 0, local.storage.ss_family == sa_family_t(AF_UNIX) { addr = local }
        }
        return NetBinding.format(&addr)
    }

    var description: String {
        let where_ = state == .closed ? "closed" : "fd \(fd), \(peer)"
        return "dispatch.connection (\(where_))"
    }

    // MARK: pinning

    private var wantsPin: Bool { state == .closing || (state == .open && (onData != nil || writeQueueSize > 0)) }

    /// Pins the connection if it now reads or writes; `i` is its userdata on `L`.
    func pinIfBusy(_ L: OpaquePointer, _ i: Int32) {
        guard pinRef == LUA_NOREF, wantsPin else { return }
        lua_pushvalue(L, i)
        pinRef = luaL_ref(L, ld_registryindex())
        runtime.workAdded()
    }

    private func unpinIfIdle() {
        guard pinRef != LUA_NOREF, !wantsPin else { return }
        runtime.deferUnref(pinRef)
        pinRef = LUA_NOREF
        runtime.workDone()
    }

    private func setInterest(_ want: Int32) {
        guard want != interest, state != .closed else { return }
        if ld_netpoll_interest(poller.set, fd, token, interest, want) == 0 { interest = want }
    }

    // MARK: reading

    /// Sets (or, nil, clears) the data callback; reading follows it.
    func setOnData(_ fn: LuaRef?) {
        guard state == .open else { return }
        onData = fn
        setInterest(fn == nil ? interest & ~Int32(LD_NETPOLL_READ) : interest | Int32(LD_NETPOLL_READ))
        unpinIfIdle()
    }

    func setOnDrain(_ fn: LuaRef?) {
        guard state == .open else { return }
        onDrain = fn
    }

    func ready(_ flags: UInt32, _ T: OpaquePointer) {
        let wrote = flags & UInt32(LD_NETPOLL_WRITE | LD_NETPOLL_HUP) != 0
        if wrote && interest & Int32(LD_NETPOLL_WRITE) != 0 { flush(T) }
        if flags & UInt32(LD_NETPOLL_READ | LD_NETPOLL_HUP) != 0 { read(T) }
    }

    /// A connection just accepted and given a data callback reads at once: a client that speaks
    /// first (HTTP, Redis) has usually sent its request by the time the server accepts, and its
    /// answer then leaves in this round rather than after one more wait for readiness. (Nothing
    /// there costs one `read` that finds nothing.)
    func readAccepted(_ T: OpaquePointer) { read(T) }

    /// Reads what is there (a few buffers at most: a socket still readable is reported again),
    /// each read a call of the data callback.
    private func read(_ T: OpaquePointer) {
        var reads = 0
        while reads < 4, state == .open, let fn = onData {
            let n = ld_netpoll_read(fd, poller.buffer, NetPoller.readSize)
            if n > 0 {
                lua_rawgeti(T, ld_registryindex(), lua_Integer(fn.ref))
                _ = lua_pushlstring(T, poller.buffer.assumingMemoryBound(to: CChar.self), n)
                poller.call(T, 1)
                reads += 1
                if n < NetPoller.readSize { return }
            } else if n == -Int(EAGAIN) {
                return
            } else {
                return endOfStream(T, fn, error: Int32(-n))
            }
        }
    }

    /// Reading stops; the callback gets `nil` (end of stream) or `nil, message, code`.
    private func endOfStream(_ T: OpaquePointer, _ fn: LuaRef, error: Int32) {
        onData = nil
        setInterest(interest & ~Int32(LD_NETPOLL_READ))
        lua_rawgeti(T, ld_registryindex(), lua_Integer(fn.ref))
        if error == 0 {
            lua_pushnil(T)
            poller.call(T, 1)
        } else {
            _ = Errno.pushFailure(T, error)
            poller.call(T, 3)
        }
        withExtendedLifetime(fn) { unpinIfIdle() }
    }

    // MARK: writing

    /// Writes `bytes` now, queueing what the socket does not take: 0, or an errno (the
    /// connection is closed or broken; nothing was queued).
    func write(_ bytes: UnsafeRawBufferPointer, callback: LuaRef?) -> Int32 {
        guard state == .open, !shutdownRequested else { return EPIPE }
        guard writeError == 0 else { return writeError }
        var offset = 0
        if poller.corking && (corked || writeQueueSize == 0) && writeQueueSize + bytes.count <= Self.corkLimit {
            if !corked {
                corked = true
                poller.cork(self)
            }
        } else if writeQueueSize == 0 {
            let n = bytes.count == 0 ? 0 : ld_netpoll_write(fd, bytes.baseAddress, bytes.count)
            if n == bytes.count {
                if let callback { completeLater(callback) }
                return 0
            }
            if n < 0 && n != -Int(EAGAIN) {
                writeError = Int32(-n)
                return writeError
            }
            offset = max(n, 0)
        }
        if head > 0 && head >= pending.count / 2 {
            pending.removeFirst(head)
            head = 0
        }
        pending.append(contentsOf: bytes[offset...])
        queuedTotal += bytes.count - offset
        if let callback { callbacks.append((queuedTotal, callback)) }
        if !corked {
            waitsOnSocket = true
            setInterest(interest | Int32(LD_NETPOLL_WRITE))
        }
        return 0
    }

    /// Queued bytes a round may hold back: a larger write goes to the socket at once, as a
    /// write outside a round does.
    static let corkLimit = 65536

    /// The round is over: its bytes go to the socket now, and what it does not take waits for
    /// it to be writable.
    func uncork(_ T: OpaquePointer) {
        guard corked else { return }
        corked = false
        guard state != .closed else { return }
        flush(T)
        guard writeQueueSize > 0, state != .closed else { return }
        waitsOnSocket = true
        setInterest(state == .closing ? Int32(LD_NETPOLL_WRITE) : interest | Int32(LD_NETPOLL_WRITE))
    }

    /// A write done at once: its callback runs after the current handler, on the queue.
    private func completeLater(_ fn: LuaRef) {
        let q = poller.queue
        runtime.workAdded()
        q.queued.wrappingAdd(1, ordering: .relaxed)
        q.queue.async { [self] in
            q.queued.wrappingSubtract(1, ordering: .relaxed)
            runtime.callHandler(on: q) { T in
                guard state == .open else { return nil }
                lua_rawgeti(T, ld_registryindex(), lua_Integer(fn.ref))
                return 0
            }
            runtime.workDone()
        }
    }

    /// Writes queued bytes until the socket is full or the queue is empty.
    private func flush(_ T: OpaquePointer) {
        while writeQueueSize > 0 {
            let n = pending.withUnsafeBytes { p in ld_netpoll_write(fd, p.baseAddress! + head, writeQueueSize) }
            if n > 0 {
                head += n
                writtenTotal += n
            } else if n == -Int(EAGAIN) {
                break
            } else {
                return failWrites(T, Int32(-n))
            }
        }
        while let first = callbacks.first, first.end <= writtenTotal, state == .open {
            callbacks.removeFirst()
            lua_rawgeti(T, ld_registryindex(), lua_Integer(first.fn.ref))
            poller.call(T, 0)
        }
        guard writeQueueSize == 0 else { return }
        pending = []
        head = 0
        setInterest(interest & ~Int32(LD_NETPOLL_WRITE))
        if state == .closing { return finish() }
        if shutdownRequested { _ = ld_net_shutdown(fd, 1) }
        let waited = waitsOnSocket
        waitsOnSocket = false
        if state == .open, waited, let d = onDrain {
            lua_rawgeti(T, ld_registryindex(), lua_Integer(d.ref))
            poller.call(T, 0)
        }
        unpinIfIdle()
    }

    /// The socket refused queued bytes: they are dropped, and each write callback waiting gets
    /// `message, code`.
    private func failWrites(_ T: OpaquePointer, _ error: Int32) {
        writeError = error
        pending = []
        head = 0
        waitsOnSocket = false
        setInterest(interest & ~Int32(LD_NETPOLL_WRITE))
        let waiting = callbacks
        callbacks = []
        if state == .closing { return finish() }
        for (_, fn) in waiting where state == .open {
            lua_rawgeti(T, ld_registryindex(), lua_Integer(fn.ref))
            Lua.push(T, "\(Errno.name(error)) (\(Errno.message(error)))")
            Lua.push(T, Errno.name(error))
            poller.call(T, 2)
        }
        unpinIfIdle()
    }

    // MARK: ending

    /// Half-closes once the queue is written: 0 or an errno.
    func shutdown() -> Int32 {
        guard state == .open else { return EPIPE }
        shutdownRequested = true
        guard writeQueueSize == 0 else { return 0 }
        let r = ld_net_shutdown(fd, 1)
        return r == 0 ? 0 : -r
    }

    /// Closes once the queue is written (`now`: at once, dropping it). No callback runs again.
    func close(now: Bool) {
        guard state == .open else {
            if now && state == .closing { finish() }
            return
        }
        onData = nil
        onDrain = nil
        callbacks = []
        // Bytes held for the round end were written at once before rounds held them back:
        // they are offered now, what the socket takes of them.
        if now && corked { offerHeldBytes() }
        if now || writeQueueSize == 0 || writeError != 0 { return finish() }
        state = .closing
        if !corked { setInterest(Int32(LD_NETPOLL_WRITE)) }
    }

    private func offerHeldBytes() {
        _ = pending.withUnsafeBytes { p in ld_netpoll_write(fd, p.baseAddress! + head, writeQueueSize) }
    }

    private func finish() {
        if soleReference { interest = 0 } else { setInterest(0) }
        state = .closed
        Glibc.close(fd)
        pending = []
        head = 0
        onData = nil
        onDrain = nil
        callbacks = []
        poller.remove(token)
        unpinIfIdle()
    }

    func setOption(_ option: Int32, _ value: Int32) -> Int32 {
        guard state != .closed else { return EBADF }
        return -ld_netpoll_set_option(fd, option, value)
    }

    /// The `__gc` of a connection: one Lua cannot reach any more is closed.
    static let release: ld_object_release_fn = { object in
        let c = Unmanaged<ConnectionObject>.fromOpaque(object!).takeRetainedValue()
        c.close(now: true)
    }
}
