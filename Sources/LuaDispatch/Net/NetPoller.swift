import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Something in a poller's readiness set: a connection or a listener. `ready` runs on the
/// poller's queue with the interpreter held; `T` is the Lua thread to call handlers on.
protocol PollMember: AnyObject {
    func ready(_ flags: UInt32, _ T: OpaquePointer)
}

/// The sockets of one queue's connections and listeners in one readiness set (epoll here, a
/// kqueue on Darwin: `ld_netpoll.h`), watched by one Dispatch read source on that queue.
///
/// Why not a source per socket: on Linux each event of a per-socket source is a round trip
/// through libdispatch's manager thread (disarm, wake a worker, re-arm), about 7 system calls
/// and more than one context switch per request. One delivery here serves every ready socket,
/// and takes the interpreter once for all of them: the handlers of a queue run back to back on
/// one thread. The set's members change only under the interpreter lock.
final class NetPoller: @unchecked Sendable {
    let runtime: Runtime
    let queue: QueueObject
    let set: Int32
    let source: DispatchSourceRead
    /// The main loop serves this set itself, its source suspended (NetPollerMainLoop.swift).
    /// Guarded by `pollers`' lock.
    var servedByMainLoop = false
    /// Whether the main queue's handle is in the set under `mainQueueToken`, so that the main
    /// loop waits on the set alone (NetPollerMainLoop.swift). Guarded by `pollers`' lock.
    var holdsMainQueueHandle = false
    @exclusivity(unchecked) private var members: [UInt64: PollMember] = [:]
    @exclusivity(unchecked) private var nextToken: UInt64 = 1

    /// Bytes a connection reads at a time, into its poller's one read buffer: each read is
    /// copied into a Lua string before any Lua runs (the interpreter held throughout), so one
    /// buffer serves every connection of the queue.
    static let readSize = 65536
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: readSize, alignment: 16)

    /// Collections per delivery at most, so that other blocks of the queue get their turn.
    static let rounds = 16

    /// Whether a delivery is serving ready sockets: small writes then wait in their
    /// connection's queue, and `uncork` writes them all once the round's callbacks have run.
    /// A reply sent from each callback wakes the peer while this thread goes on with the next
    /// socket, and the peer, soon idle again, must be woken anew for the next reply; sent
    /// together, they find it awake (Redis writes its replies before it waits, for the same
    /// reason). Interpreter lock held.
    @exclusivity(unchecked) private(set) var corking = false
    @exclusivity(unchecked) private var corked: [ConnectionObject] = []

    /// Holds a connection's queued bytes until the round ends. Interpreter lock held.
    func cork(_ c: ConnectionObject) { corked.append(c) }

    static let pollers = Mutex<[ObjectIdentifier: NetPoller]>([:])

    /// The poller of `queue`, made on first use; an errno when the set cannot be made (EMFILE).
    /// Lock held.
    static func of(_ runtime: Runtime, _ queue: QueueObject) -> Result<NetPoller, Errno.Code> {
        pollers.withLock { all in
            if let p = all[ObjectIdentifier(queue)] { return .success(p) }
            let set = ld_netpoll_create()
            guard set >= 0 else { return .failure(Errno.Code(-set)) }
            let p = NetPoller(runtime, queue, set)
            all[ObjectIdentifier(queue)] = p
            return .success(p)
        }
    }

    private init(_ runtime: Runtime, _ queue: QueueObject, _ set: Int32) {
        self.runtime = runtime
        self.queue = queue
        self.set = set
        source = DispatchSource.makeReadSource(fileDescriptor: set, queue: queue.queue)
        source.setEventHandler { [unowned self] in drain() }
        // Retiring counts as work until the set is closed, so that a host idle after the last
        // connection closed has no descriptor of the runtime's left open.
        source.setCancelHandler { [runtime] in
            Glibc.close(set)
            runtime.workDone()
        }
        source.activate()
    }

    deinit { buffer.deallocate() }

    /// Adds a member: its token. Lock held.
    func add(_ member: PollMember) -> UInt64 {
        let token = nextToken
        nextToken += 1
        members[token] = member
        return token
    }

    /// Removes a member (its descriptor already out of the set); the last one retires the
    /// poller: its source is cancelled and its set closed. Lock held.
    func remove(_ token: UInt64) {
        members.removeValue(forKey: token)
        guard members.isEmpty else { return }
        Self.pollers.withLock { all in
            if all[ObjectIdentifier(queue)] === self { all.removeValue(forKey: ObjectIdentifier(queue)) }
            // A suspended source never runs its cancel handler: hand it back first. The main
            // queue's handle stays in the set, which is closed on the main queue: a main loop
            // waiting on it meanwhile still wakes for the main queue's work.
            if servedByMainLoop {
                servedByMainLoop = false
                source.resume()
            }
        }
        runtime.workAdded()
        source.cancel()
    }

    /// Calls the function below `n` arguments on `T`; an error goes to the error handler.
    @inline(__always) func call(_ T: OpaquePointer, _ n: Int32) {
        if ld_pcall(T, n, 0, 1) != LUA_OK { runtime.reportError(T, label: queue.label) }
        lua_settop(T, 1)
    }

    func drain() {
        withUnsafeTemporaryAllocation(of: ld_netpoll_event.self, capacity: 64) { events in
            let n = ld_netpoll_collect(set, events.baseAddress, 64)
            guard n > 0 else { return }
            // Sockets that became ready while the callbacks ran (peers answering their replies)
            // are served in this delivery: collecting again costs one system call, a delivery of
            // the source a wake-up of this thread through libdispatch's event thread.
            serve(events, n, rounds: Self.rounds)
        }
    }

    /// Serves the `n` events collected in `events` with the interpreter held, then collects
    /// and serves again, `rounds` times at most. A token no member has (a member removed by an
    /// earlier callback of the batch, the main queue's handle) is skipped.
    func serve(_ events: UnsafeMutableBufferPointer<ld_netpoll_event>, _ first: Int32, rounds: Int) {
        guard runtime.enterLua() else { return }
        _ = ld_frame_push(Unmanaged.passUnretained(queue).toOpaque(), 0)
        let T = runtime.takeThread()
        var n = first
        let wasCorking = corking
        for round in 1...rounds {
            corking = true
            for i in 0..<Int(n) {
                members[events[i].token]?.ready(events[i].flags, T)
            }
            uncork(T)
            if round == rounds { break }
            n = ld_netpoll_collect(set, events.baseAddress, 64)
            if n <= 0 { break }
        }
        corking = wasCorking
        runtime.giveBack(T)
        ld_frame_pop()
        runtime.leaveLua()
    }

    /// Writes the round's held bytes, each connection's in one system call; callbacks that run
    /// meanwhile (write callbacks, `on_drain`) write at once.
    private func uncork(_ T: OpaquePointer) {
        corking = false
        // By index: a callback's nested delivery may flush (and empty) the list meanwhile.
        var i = 0
        while i < corked.count {
            corked[i].uncork(T)
            i += 1
        }
        corked.removeAll(keepingCapacity: true)
    }
}

extension Errno {
    /// An errno value, as a failure.
    struct Code: Error {
        let value: Int32
        init(_ value: Int32) { self.value = value }
    }
}
