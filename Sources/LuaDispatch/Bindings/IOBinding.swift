import CLua
import CLuaShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A `DispatchIO` channel. It counts as outstanding work from creation until its cleanup
/// handler ran (after `close`, or after the last Lua reference went), and each read, write and
/// barrier counts until its last handler ran. The handlers hold what they need, never `self`.
final class IOObject: @unchecked Sendable {
    /// The channel (for a stream socket, the one that reads).
    let channel: DispatchIO
    /// A stream socket's writing channel (see `SocketChannel`).
    let writer: DispatchIO?
    let type: String
    let closed = Atomic<Bool>(false)
    /// The script's descriptor for `fd=` channels (the channel itself uses the runtime's copy).
    let scriptFD: Int32?
    /// The runtime's copy, whose operations are sequenced with every other user's.
    let shared: IODescriptors.Shared?

    init(channel: DispatchIO, writer: DispatchIO? = nil, type: String, scriptFD: Int32?, shared: IODescriptors.Shared?) {
        self.channel = channel
        self.writer = writer
        self.type = type
        self.scriptFD = scriptFD
        self.shared = shared
    }

    /// Hands an operation to libdispatch: in turn with the other users of its descriptor for a
    /// channel made from one. `completed` is due when the operation's last handler runs.
    func perform(write: Bool, _ op: @escaping @Sendable () -> Void) {
        guard let shared else { return op() }
        shared.submit(carrier: ObjectIdentifier(self), write: write, op)
    }

    func completed(write: Bool) { shared?.completed(write: write) }

    /// The channel writes go to.
    var writing: DispatchIO { writer ?? channel }

    /// Every DispatchIO under this object (two for a stream socket).
    var channels: [DispatchIO] { writer.map { [channel, $0] } ?? [channel] }

    /// A close or barrier: after the operations submitted before it.
    func afterSubmitted(_ body: @escaping @Sendable () -> Void) {
        guard let shared else { return body() }
        shared.afterHeld(carrier: ObjectIdentifier(self), body)
    }

    /// A stream socket's barriers under way (`SocketChannel.barrier`, which libdispatch does
    /// not see) and the close waiting for them: libdispatch runs a channel's cleanup after its
    /// barriers, so the pair must too, or the cleanup could close the descriptor, and its
    /// number go to another connection, before a barrier's body used it.
    private let socketBarriers = Mutex((running: 0, close: (@Sendable () -> Void)?.none))

    /// `barrier` on a stream socket: `body` runs after the operations before it, in both
    /// directions, and before a later `close` takes effect.
    func socketBarrier(_ shared: IODescriptors.Shared, _ body: @escaping @Sendable () -> Void) {
        socketBarriers.withLock { $0.running += 1 }
        SocketChannel.barrier(shared) { [self] in
            body()
            let close: (@Sendable () -> Void)? = socketBarriers.withLock { s in
                s.running -= 1
                guard s.running == 0 else { return nil }
                defer { s.close = nil }
                return s.close
            }
            close?()
        }
    }

    /// `close`: after the operations and barriers submitted before it.
    func closeAfterSubmitted() {
        afterSubmitted { [self] in
            let now = socketBarriers.withLock { s in
                guard s.running > 0 else { return true }
                s.close = { [self] in for c in channels { c.close() } }
                return false
            }
            if now { for c in channels { c.close() } }
        }
    }

    /// A channel nobody can use any more is closed, so that its cleanup handler runs.
    deinit {
        if !closed.exchange(true, ordering: .relaxed) { for c in channels { c.close() } }
    }
}

/// Bytes handed to an operation that starts later (DispatchData is immutable).
struct SendableData: @unchecked Sendable {
    let data: DispatchData
    init(_ data: DispatchData) { self.data = data }
}

/// Whether a read was stopped at the memory limit.
private final class ReadStop: Sendable {
    let flag = Atomic<Bool>(false)
}

/// `dispatch.io{...}` and the channel methods; `dispatch.io.read` and `dispatch.io.write` are in
/// IOOneShot.swift.
enum IOBinding {
    static func install(_ m: inout ModuleSpec) {
        m.table("io", call: { a throws(LuaError) in try make(a) }) { t in
            installOneShot(&t)
        }
        m.types.append(type())
    }

    /// `dispatch.io{path= or fd=, type=, mode=, permissions=, queue=, cleanup=}`.
    private static func make(_ a: Args) throws(LuaError) -> Int32 {
        try a.table(1)
        var path: String?, fd: Int32?, type = "stream", mode = "r", permissions: mode_t = 0o644
        var queue: QueueObject?, cleanup: LuaRef?
        try Options.parse(a, 1) { o throws(LuaError) in
            switch o.key {
            case "path": path = try o.string()
            case "fd":
                let n = try o.integer()
                guard n >= 0, n <= Int(Int32.max) else { throw .argument(1, "option 'fd': invalid file descriptor \(n)") }
                fd = Int32(n)
            case "type":
                type = try o.string()
                guard type == "stream" || type == "random" else {
                    throw .argument(1, "option 'type': \"stream\" or \"random\" expected, got \"\(type)\"")
                }
            case "mode":
                mode = try o.string()
                guard OpenMode.flags(mode) != nil else { throw .argument(1, "option 'mode': invalid mode '\(mode)'") }
            case "permissions":
                if lua_type(a.L, o.value) == LUA_TSTRING {
                    let s = try o.string()
                    guard let p = OpenMode.parse(s) else { throw .argument(1, "option 'permissions': invalid octal string '\(s)'") }
                    permissions = p
                } else {
                    let n = try o.integer()
                    guard (0...0o7777).contains(n) else { throw .argument(1, "option 'permissions': out of range: \(n)") }
                    permissions = mode_t(n)
                }
            case "queue": queue = try o.object(.queue)
            case "cleanup": cleanup = try o.functionRef()
            default: return false
            }
            return true
        }
        guard (path == nil) != (fd == nil) else { throw .argument(1, "exactly one of 'path' and 'fd' expected") }
        let rt = a.runtime
        let q = queue ?? rt.global(.default)
        let cleanupFn = cleanup
        let streamType: DispatchIO.StreamType = type == "random" ? .random : .stream
        let cleanupHandler: @Sendable (Int32) -> Void = { error in
            if let cleanupFn {
                rt.callHandler(cleanupFn.ref, on: q, kind: .io) { T in
                    lua_pushinteger(T, lua_Integer(error))
                    return 1
                }
            }
            rt.workDone()
        }
        let channel: DispatchIO
        var writer: DispatchIO?
        var shared: IODescriptors.Shared?
        if let fd {
            // The channel works on the runtime's shared duplicate (see `IODescriptors`), given
            // back after the cleanup handler ran.
            shared = IODescriptors.acquire(fd)
            if let shared, shared.split, streamType == .stream {
                let pair = SocketChannel.make(shared, queue: q.queue) { error in
                    IODescriptors.release(shared)
                    cleanupHandler(error)
                }
                (channel, writer) = (pair.reader, pair.writer)
            } else if let shared {
                channel = DispatchIO(type: streamType, fileDescriptor: shared.fd, queue: q.queue) { error in
                    cleanupHandler(error)
                    IODescriptors.release(shared)
                }
            } else {
                channel = DispatchIO(type: streamType, fileDescriptor: fd, queue: q.queue, cleanupHandler: cleanupHandler)
            }
        } else {
            // A relative path makes a channel that crashes on first use: resolve it first.
            guard let absolute = absolutePath(path!) else { throw .argument(1, "option 'path': cannot resolve '\(path!)'") }
            let made = absolute.withCString { p in
                DispatchIO(type: streamType, path: p, oflag: OpenMode.flags(mode)! | O_CLOEXEC, mode: permissions,
                           queue: q.queue, cleanupHandler: cleanupHandler)
            }
            guard let made else { throw .message("io: cannot create a channel for '\(absolute)'") }
            channel = made
        }
        rt.workAdded()
        rt.objects.push(a.L, IOObject(channel: channel, writer: writer, type: type, scriptFD: fd, shared: shared), .io)
        return 1
    }

    private static func type() -> ObjectType {
        var t = ObjectType(.io)
        t.method("read") { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            let offset = try offset(a, 2)
            let len = try length(a, 3)
            let q = try a.queueOrDefault(4)
            let fn = try a.functionRef(5)
            let rt = a.runtime
            rt.workAdded()
            let stopped = ReadStop()
            ch.perform(write: false) {
                ch.channel.read(offset: offset, length: len, queue: q.queue) { done, data, error in
                    if done { ch.completed(write: false) }
                    // Dispatch reads ahead of the handler, holding what it read where the limit
                    // cannot see it: once the script is past its memory limit, the reads stop,
                    // and the read ends with ENOMEM.
                    if !done, rt.pastMemoryLimit, !stopped.flag.exchange(true, ordering: .relaxed) {
                        for c in ch.channels { c.close(flags: .stop) }
                    }
                    let error = done && error == ECANCELED && stopped.flag.load(ordering: .relaxed) ? ENOMEM : error
                    rt.callHandler(fn.ref, on: q, kind: .io) { T in
                        lua_pushboolean(T, done ? 1 : 0)
                        DataBinding.push(T, rt, data ?? .empty)
                        lua_pushinteger(T, lua_Integer(error))
                        return 3
                    }
                    if done { rt.workDone() }
                }
            }
            return 0
        }
        t.method("write") { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            let offset = try offset(a, 2)
            let data = SendableData(try DataBinding.argument(a, 3))
            let q = try a.queueOrDefault(4)
            let fn = try a.functionRef(5)
            let rt = a.runtime
            rt.workAdded()
            ch.perform(write: true) {
                ch.writing.write(offset: offset, data: data.data, queue: q.queue) { done, remaining, error in
                    if done { ch.completed(write: true) }
                    rt.callHandler(fn.ref, on: q, kind: .io) { T in
                        lua_pushboolean(T, done ? 1 : 0)
                        DataBinding.push(T, rt, remaining ?? .empty)
                        lua_pushinteger(T, lua_Integer(error))
                        return 3
                    }
                    if done { rt.workDone() }
                }
            }
            return 0
        }
        t.method("set_limit") { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            var high: Int?, low: Int?
            try a.table(2)
            try Options.parse(a, 2) { o throws(LuaError) in
                let n: Int
                if lua_type(a.L, o.value) == LUA_TNUMBER, lua_tonumberx(a.L, o.value, nil) == .infinity {
                    n = Int.max
                } else {
                    n = try o.integer()
                }
                guard n >= 0 else { throw .argument(2, "option '\(o.key)': must be >= 0, got \(n)") }
                switch o.key {
                case "high": high = n
                case "low": low = n
                default: return false
                }
                return true
            }
            // What Dispatch gathers before a handler sees it is outside the memory limit's count:
            // under a limit, an eighth of it at most.
            let most = a.runtime.control.budget.map { Int(ld_budget_limit($0) / 8) } ?? Int.max
            for c in ch.channels {
                if let high { c.setLimit(highWater: min(high, most)) }
                if let low { c.setLimit(lowWater: min(low, most)) }
            }
            return 0
        }
        t.method("set_interval") { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            let s = try a.number(2)
            guard !s.isNaN, s > 0 else { throw .argument(2, "interval must be > 0") }
            let strict = a.isNoneOrNil(3) ? false : try a.boolean(3)
            for c in ch.channels {
                c.setInterval(interval: .nanoseconds(Int(Deadline.nanos(s))), flags: strict ? .strictInterval : [])
            }
            return 0
        }
        t.method("barrier") { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            let fn = try a.functionRef(2)
            let rt = a.runtime
            rt.workAdded()
            let body: @Sendable () -> Void = {
                rt.callHandler(fn.ref, on: nil, kind: .io)
                rt.workDone()
            }
            if ch.writer != nil, let shared = ch.shared {
                ch.socketBarrier(shared, body)
            } else {
                ch.afterSubmitted { ch.channel.barrier(execute: body) }
            }
            return 0
        }
        t.method("close") { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            var stop = false
            try Options.parse(a, 2) { o throws(LuaError) in
                guard o.key == "stop" else { return false }
                stop = try o.bool()
                return true
            }
            ch.closed.store(true, ordering: .relaxed)
            if stop {
                for c in ch.channels { c.close(flags: .stop) }
            } else {
                ch.closeAfterSubmitted()
            }
            return 0
        }
        t.fields { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            switch Lua.string(a.L, 2) {
            case "fd": lua_pushinteger(a.L, lua_Integer(ch.scriptFD ?? ch.channel.fileDescriptor))
            case "type": Lua.push(a.L, ch.type)
            default: return 0
            }
            return 1
        }
        t.meta("__tostring") { a throws(LuaError) in
            let ch: IOObject = try a.object(1, .io)
            Lua.push(a.L, "dispatch.io (\(ch.type)\(ch.closed.load(ordering: .relaxed) ? ", closed" : ""))")
            return 1
        }
        return t
    }

    /// A file offset: an integer >= 0.
    private static func offset(_ a: Args, _ i: Int32) throws(LuaError) -> off_t {
        let n = try a.integer(i)
        guard n >= 0 else { throw .argument(i, "offset must be >= 0, got \(n)") }
        return off_t(n)
    }

    /// A length: an integer >= 0, or `math.huge` for "to the end".
    static func length(_ a: Args, _ i: Int32) throws(LuaError) -> Int {
        if a.type(i) == LUA_TNUMBER, lua_tonumberx(a.L, i, nil) == .infinity { return Int.max }
        let n = try a.integer(i)
        guard n >= 0 else { throw .argument(i, "length must be >= 0, got \(n)") }
        return n
    }

    /// `path` made absolute against the current directory.
    static func absolutePath(_ path: String) -> String? {
        guard !path.isEmpty else { return nil }
        if path.hasPrefix("/") { return path }
        guard let cwd = getcwd(nil, 0) else { return nil }
        defer { free(cwd) }
        let dir = String(cString: cwd)
        return dir.hasSuffix("/") ? dir + path : dir + "/" + path
    }
}
