import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.net.connect{host=, port=} or {path=}, queue, fn(fd, err)`: a non-blocking connect.
/// A name is resolved on a global queue (never holding the interpreter); each address is
/// tried in turn, a connect in progress waits in the runtime's descriptor watcher (not in
/// libdispatch, so the descriptor carries no registration of Dispatch's when the script gets
/// it). `fn` runs on `queue` like any other handler. The attempt counts as outstanding work
/// until `fn` ran; a descriptor that no handler received is closed.
final class NetConnect: @unchecked Sendable {
    private let runtime: Runtime
    private let target: Endpoint
    private let queue: QueueObject
    private let fn: LuaRef
    /// Whether `fn` gets a connection object (`dial`) rather than the descriptor (`connect`).
    private var asConnection = false
    private let started = DispatchTime.now()
    // Touched by one step at a time: each step starts the next one only when it is done.
    private var addresses: [ld_net_addr] = []
    private var next = 0
    private var failure = (message: ": no address", code: "EAI_NONAME")  // the last attempt's
    private var retryDelay = 0.001
    /// The watcher's token while a connect is in progress (the watcher may report before
    /// `add` returned: the report takes the lock, so it waits for the token).
    private let watching = Mutex<UInt64?>(nil)

    /// How long a Unix-domain connect keeps trying while the listener's backlog is full.
    static let unixRetryLimit = 30.0

    private init(_ runtime: Runtime, _ target: Endpoint, _ queue: QueueObject, _ fn: LuaRef) {
        self.runtime = runtime
        self.target = target
        self.queue = queue
        self.fn = fn
    }

    static func start(_ a: Args) throws(LuaError) -> Int32 {
        try a.table(1)
        let target = try Endpoint.parse(a, 1, ports: 1...65535) { _ throws(LuaError) in false }
        let q = try a.queueOrDefault(2)
        let fn = try a.functionRef(3)
        begin(NetConnect(a.runtime, target, q, fn))
        return 0
    }

    /// `dial{host=, port=} or {path=} [, queue], fn(conn, err, code)`: `connect` handing over a
    /// connection (`dispatch.net.serve`'s kind); the queue defaults as a server's does.
    static func dial(_ a: Args) throws(LuaError) -> Int32 {
        try a.table(1)
        let target = try Endpoint.parse(a, 1, ports: 1...65535) { _ throws(LuaError) in false }
        let hasQueue = a.type(2) != LUA_TFUNCTION
        let given: QueueObject? = hasQueue && !a.isNoneOrNil(2) ? try a.object(2, .queue) : nil
        let fn = try a.functionRef(hasQueue ? 3 : 2)
        let c = NetConnect(a.runtime, target, ConnectionBinding.queue(a, given, label: "dispatch.net.connection"), fn)
        c.asConnection = true
        begin(c)
        return 0
    }

    private static func begin(_ c: NetConnect) {
        let target = c.target
        ld_net_quiet_sigpipe()
        c.runtime.workAdded()
        if let addr = target.immediate {
            // A numeric address or a path: the connect starts here (it never blocks).
            c.addresses = [addr]
            c.attempt()
        } else {
            DispatchQueue.global().async { c.resolve() }
        }
    }

    private func resolve() {
        switch target.addresses(datagram: false, passive: false) {
        case .success(let list):
            addresses = list
            attempt()
        case .failure(let f):
            deliver(nil, message: "connect \(f.host): \(String(cString: ld_net_gai_message(f.code)))",
                    code: String(cString: ld_net_gai_name(f.code)))
        }
    }

    /// Tries the addresses from `next` on until one connects or is in progress.
    private func attempt() {
        while next < addresses.count {
            var addr = addresses[next]
            var pending: Int32 = 0
            let fd = ld_net_connect(&addr, &pending)
            if fd == -EAGAIN, case .unix = target, DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds < UInt64(Self.unixRetryLimit * 1e9) {
                // The listener's backlog is full: a Unix connect says so at once instead of
                // waiting, so try again a little later.
                retryDelay = min(retryDelay * 2, 0.1)
                DispatchQueue.global().asyncAfter(deadline: .now() + retryDelay) { self.attempt() }
                return
            }
            next += 1
            if fd < 0 {
                record(-fd, NetBinding.format(&addr))
                continue
            }
            if pending == 0 { return deliver(fd) }
            if wait(fd, NetBinding.format(&addr)) { return }
        }
        deliver(nil, message: "connect \(target)\(failure.message)", code: failure.code)
    }

    /// Waits for a connect in progress on `fd`; false (and `fd` closed) when it cannot.
    private func wait(_ fd: Int32, _ name: String) -> Bool {
        guard let watcher = DescriptorWatcher.shared else {
            record(EMFILE, name)
            Glibc.close(fd)
            return false
        }
        let added: Bool = watching.withLock { token in
            token = watcher.add(fd, write: true) { [self] in
                guard let t = watching.withLock({ t in defer { t = nil }; return t }) else { return }
                watcher.remove(fd, t)
                let error = ld_net_connect_result(fd)
                if error == 0 { return deliver(fd) }
                record(error, name)
                Glibc.close(fd)
                DispatchQueue.global().async { self.attempt() }
            }
            return token != nil
        }
        if !added {
            record(errno, name)
            Glibc.close(fd)
        }
        return added
    }

    /// Keeps the failure of an attempt on the address named `name` (shown when it is not the target's).
    private func record(_ error: Int32, _ name: String) {
        let address = name == target.description ? "" : " (\(name))"
        failure = ("\(address): \(Errno.name(error)) (\(Errno.message(error)))", Errno.name(error))
    }

    /// Runs `fn(fd)` or `fn(nil, message, code)` on the queue.
    private func deliver(_ fd: Int32?, message: String = "", code: String = "") {
        let (rt, q, fn, asConnection) = (runtime, queue, fn, asConnection)
        q.queued.wrappingAdd(1, ordering: .relaxed)
        q.queue.async {
            q.queued.wrappingSubtract(1, ordering: .relaxed)
            var handed = false
            rt.callHandler(fn.ref, on: q) { T in
                handed = true
                guard let fd else {
                    lua_pushnil(T)
                    Lua.push(T, message)
                    Lua.push(T, code)
                    return 3
                }
                if asConnection { return ConnectionBinding.pushConnection(rt, T, q, fd) }
                lua_pushinteger(T, lua_Integer(fd))
                return 1
            }
            if !handed, let fd { Glibc.close(fd) }  // the interpreter was closed meanwhile
            rt.workDone()
        }
    }
}
