import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.source.*` and the source methods. Every constructor takes one options table with
/// the common keys (`queue`, `handler`, `cancel_handler`, `registration_handler`) and its own.
enum SourceBinding {
    /// What a constructor's options table said.
    private struct Spec {
        var queue: QueueObject?
        var handler: LuaRef?, cancelHandler: LuaRef?, registrationHandler: LuaRef?
        var deadline = Deadline.time(.now()), interval: Double?, leeway = 0.0, strict = false
        var signal: Int32?, fd: Int32?, path: String?, pid: Int32?, events: [String]?
    }

    static func install(_ m: inout ModuleSpec) {
        m.table("source") { t in
            for kind in [SourceObject.Kind.timer, .signal, .read, .write, .data_add, .data_or, .data_replace, .file, .process] {
                t.function(kind.rawValue) { a throws(LuaError) in try make(a, kind) }
            }
        }
        m.types.append(type())
    }

    private static func make(_ a: Args, _ kind: SourceObject.Kind) throws(LuaError) -> Int32 {
        let spec = try parse(a, kind)
        let rt = a.runtime
        let q = spec.queue ?? rt.global(.default)
        if [.read, .write, .file, .process].contains(kind), DescriptorWatcher.shared == nil {
            return Errno.pushFailure(a.L, errno, context: "cannot watch descriptors")
        }
        let source: DispatchSourceProtocol
        var handle = SourceObject.Handle.number(0)
        var watcher: WatchedDescriptor?
        switch kind {
        case .timer:
            let timer = DispatchSource.makeTimerSource(flags: spec.strict ? .strict : [], queue: q.queue)
            schedule(timer, spec.deadline, spec.interval, spec.leeway)
            source = timer
        case .signal:
            let signal = spec.signal!
            if let e = SignalHub.prepare(signal) { return Errno.pushFailure(a.L, e, context: Signals.name(signal) ?? "signal \(signal)") }
            source = DispatchSource.makeSignalSource(signal: signal, queue: q.queue)
            handle = .number(Int(signal))
        case .read, .write:
            let fd = spec.fd!
            guard fcntl(fd, F_GETFD) != -1 else { return Errno.pushFailure(a.L, errno, context: "fd \(fd)") }
            // libdispatch registers descriptors with epoll; one that epoll refuses (/dev/null and
            // other such devices: EPERM) would make a source that silently never fires.
            if let refusal = Readiness.refusal(fd) { return Errno.pushFailure(a.L, refusal, context: "fd \(fd)") }
            switch WatchedDescriptor.duplicate(fd) {
            case .failure(let e): return Errno.pushFailure(a.L, e.code, context: "fd \(fd)")
            case .success(let w): watcher = w
            }
            source = DispatchSource.makeUserDataReplaceSource(queue: q.queue)  // see DescriptorWatcher
            handle = .number(Int(fd))
        case .data_add: source = DispatchSource.makeUserDataAddSource(queue: q.queue)
        case .data_or: source = DispatchSource.makeUserDataOrSource(queue: q.queue)
        case .data_replace: source = DispatchSource.makeUserDataReplaceSource(queue: q.queue)
        case .file:
            let path = spec.path!
            switch FileWatcher.make(path: path, events: Set(spec.events ?? FileWatcher.names)) {
            case .failure(let e): return Errno.pushFailure(a.L, e.code, context: path, message: e.message)
            case .success(let w): watcher = w
            }
            source = DispatchSource.makeUserDataReplaceSource(queue: q.queue)
            handle = .path(path)
        case .process:
            let pid = spec.pid!
            switch ProcessWatcher.make(pid: pid) {
            case .failure(let e): return Errno.pushFailure(a.L, e.code, context: "pid \(pid)")
            case .success(let w): watcher = w
            }
            source = DispatchSource.makeUserDataReplaceSource(queue: q.queue)
            handle = .number(Int(pid))
        }
        let object = SourceObject(rt, kind: kind, source: source, queue: q, handle: handle, watcher: watcher)
        object.handler = spec.handler
        object.cancelHandler = spec.cancelHandler
        object.registrationHandler = spec.registrationHandler
        rt.objects.push(a.L, object, .source)
        return 1
    }

    /// Reads the options table at argument 1; keys that belong to another kind are unknown.
    private static func parse(_ a: Args, _ kind: SourceObject.Kind) throws(LuaError) -> Spec {
        var s = Spec()
        let required: String? = switch kind {
        case .signal: "signal"
        case .read, .write: "fd"
        case .file: "path"
        case .process: "pid"
        default: nil
        }
        if required != nil { try a.table(1) }
        try Options.parse(a, 1) { o throws(LuaError) in
            switch (o.key, kind) {
            case ("queue", _): s.queue = try o.object(.queue)
            case ("handler", _): s.handler = try o.functionRef()
            case ("cancel_handler", _): s.cancelHandler = try o.functionRef()
            case ("registration_handler", _): s.registrationHandler = try o.functionRef()
            case ("deadline", .timer): s.deadline = try deadline(o)
            case ("interval", .timer): s.interval = try interval(o)
            case ("leeway", .timer): s.leeway = try leeway(o)
            case ("strict", .timer): s.strict = try o.bool()
            case ("signal", .signal): s.signal = try signal(o)
            case ("fd", .read), ("fd", .write):
                let n = try o.integer()
                guard n >= 0, n <= Int(Int32.max) else { throw o.invalid("invalid file descriptor \(n)") }
                s.fd = Int32(n)
            case ("path", .file):
                s.path = try o.string()
                guard s.path != "" else { throw o.invalid("empty path") }
            case ("pid", .process):
                let n = try o.integer()
                guard n > 0, n <= Int(Int32.max) else { throw o.invalid("invalid pid \(n)") }
                s.pid = Int32(n)
            case ("events", .file): s.events = try events(o, FileWatcher.names)
            case ("events", .process): s.events = try events(o, ProcessWatcher.names)
            default: return false
            }
            return true
        }
        if let required {
            let given = switch kind {
            case .signal: s.signal != nil
            case .read, .write: s.fd != nil
            case .file: s.path != nil
            default: s.pid != nil
            }
            if !given { throw .argument(1, "option '\(required)' missing") }
        }
        return s
    }

    private static func type() -> ObjectType {
        var t = ObjectType(.source)
        t.method("resume") { a throws(LuaError) in
            a.runtime.traceInstant("resume", "source")
            try (try a.object(1, .source, as: SourceObject.self)).resume()
            return 0
        }
        t.method("suspend") { a throws(LuaError) in
            a.runtime.traceInstant("suspend", "source")
            (try a.object(1, .source, as: SourceObject.self)).suspend()
            return 0
        }
        t.method("cancel") { a throws(LuaError) in
            a.runtime.traceInstant("cancel", "source")
            (try a.object(1, .source, as: SourceObject.self)).cancel()
            return 0
        }
        t.method("is_cancelled") { a throws(LuaError) in
            let s: SourceObject = try a.object(1, .source)
            lua_pushboolean(a.L, s.cancelled || s.source.isCancelled ? 1 : 0)
            return 1
        }
        t.method("set_event_handler") { a throws(LuaError) in
            let s: SourceObject = try a.object(1, .source)
            s.setHandler(\.handler, try handlerArgument(a))
            return 0
        }
        t.method("set_cancel_handler") { a throws(LuaError) in
            let s: SourceObject = try a.object(1, .source)
            s.setHandler(\.cancelHandler, try handlerArgument(a))
            return 0
        }
        t.method("set_registration_handler") { a throws(LuaError) in
            let s: SourceObject = try a.object(1, .source)
            s.setHandler(\.registrationHandler, try handlerArgument(a))
            return 0
        }
        t.method("schedule") { a throws(LuaError) in
            let s: SourceObject = try a.object(1, .source)
            guard let timer = s.source as? DispatchSourceTimer, s.kind == .timer else {
                throw .message("schedule on a \(s.kind.rawValue) source (only timer sources can be scheduled)")
            }
            var deadline = Deadline.time(.now()), interval: Double?, leeway = 0.0
            try a.table(2)
            try Options.parse(a, 2) { o throws(LuaError) in
                switch o.key {
                case "deadline": deadline = try self.deadline(o)
                case "interval": interval = try self.interval(o)
                case "leeway": leeway = try self.leeway(o)
                default: return false
                }
                return true
            }
            schedule(timer, deadline, interval, leeway)
            return 0
        }
        t.method("merge") { a throws(LuaError) in
            let s: SourceObject = try a.object(1, .source)
            let n = try a.integer(2)
            guard n >= 0 else { throw .argument(2, "value must be >= 0, got \(n)") }
            switch s.source {
            case let add as DispatchSourceUserDataAdd where s.kind == .data_add: add.add(data: UInt(n))
            case let or as DispatchSourceUserDataOr where s.kind == .data_or: or.or(data: UInt(n))
            case let replace as DispatchSourceUserDataReplace where s.kind == .data_replace: replace.replace(data: UInt(n))
            default: throw .message("merge on a \(s.kind.rawValue) source (only data_add, data_or and data_replace sources merge)")
            }
            return 0
        }
        t.fields { a throws(LuaError) in
            let s: SourceObject = try a.object(1, .source)
            let L = a.L
            switch Lua.string(L, 2) {
            case "data":
                switch s.event {
                case .count(let n): lua_pushinteger(L, lua_Integer(truncatingIfNeeded: n))
                case .names(let names):
                    lua_createtable(L, Int32(names.count), 0)
                    for (i, name) in names.enumerated() {
                        Lua.push(L, name)
                        lua_rawseti(L, -2, lua_Integer(i + 1))
                    }
                }
            case "handle":
                switch s.handle {
                case .number(let n): lua_pushinteger(L, lua_Integer(n))
                case .path(let p): Lua.push(L, p)
                }
            case "kind": Lua.push(L, s.kind.rawValue)
            default: return 0
            }
            return 1
        }
        t.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, (try a.object(1, .source, as: SourceObject.self)).description)
            return 1
        }
        return t
    }

    // MARK: argument checks

    private static func handlerArgument(_ a: Args) throws(LuaError) -> LuaRef? {
        if a.isNoneOrNil(2) { return nil }
        guard a.type(2) == LUA_TFUNCTION else { throw a.typeError(2, "function or nil") }
        return try a.functionRef(2)
    }

    private static func deadline(_ o: Options) throws(LuaError) -> Deadline {
        if lua_type(o.args.L, o.value) == LUA_TNUMBER && lua_tonumberx(o.args.L, o.value, nil).isNaN {
            throw o.invalid("NaN")
        }
        return try o.deadline()
    }

    /// Seconds between fires: > 0 (libdispatch aborts on some zero intervals); `math.huge` is
    /// one-shot, like `nil`.
    private static func interval(_ o: Options) throws(LuaError) -> Double? {
        let s = try o.number()
        guard !s.isNaN, s > 0 else { throw o.invalid("interval must be > 0, got \(s)") }
        return s.isInfinite ? nil : s
    }

    /// Seconds of allowed lateness: >= 0 (a negative leeway is an invalid one to Dispatch).
    private static func leeway(_ o: Options) throws(LuaError) -> Double {
        let s = try o.number()
        guard !s.isNaN, s >= 0 else { throw o.invalid("leeway must be >= 0, got \(s)") }
        return s
    }

    private static func signal(_ o: Options) throws(LuaError) -> Int32 {
        let n: Int32
        if lua_type(o.args.L, o.value) == LUA_TSTRING {
            let name = try o.string()
            guard let s = Signals.number(name) else { throw o.invalid("unknown signal '\(name)'") }
            n = s
        } else {
            let v = try o.integer()
            guard (1..<65).contains(v) else { throw o.invalid("invalid signal number \(v)") }
            n = Int32(v)
        }
        guard n != SIGKILL, n != SIGSTOP else { throw o.invalid("\(Signals.name(n)!) cannot be caught") }
        return n
    }

    private static func events(_ o: Options, _ known: [String]) throws(LuaError) -> [String] {
        let L = o.args.L
        guard lua_type(L, o.value) == LUA_TTABLE else { throw o.invalid("table of event names expected, got \(o.args.typeName(o.value))") }
        var names: [String] = []
        let n = lua_rawlen(L, o.value)
        for i in 0..<Int(n) {
            defer { ld_pop(L, 1) }
            guard lua_rawgeti(L, o.value, lua_Integer(i + 1)) == LUA_TSTRING, let name = Lua.string(L, -1) else {
                throw o.invalid("event names must be strings, got \(String(cString: ld_typename(L, -1)))")
            }
            guard known.contains(name) else {
                throw o.invalid("unknown event '\(name)' (expected \(known.map { "\"\($0)\"" }.joined(separator: ", ")))")
            }
            names.append(name)
        }
        return names
    }

    // MARK: Dispatch calls

    /// Sets a timer; every value was checked, so no conversion can trap and libdispatch sees
    /// neither a zero interval nor an invalid leeway.
    static func schedule(_ timer: DispatchSourceTimer, _ deadline: Deadline, _ interval: Double?, _ leeway: Double) {
        let repeating: DispatchTimeInterval = interval.map { .nanoseconds(Int(max(1, Deadline.nanos($0)))) } ?? .never
        let slack = DispatchTimeInterval.nanoseconds(Int(Deadline.nanos(leeway)))
        switch deadline {
        case .time(let t): timer.schedule(deadline: t, repeating: repeating, leeway: slack)
        case .wall(let w): timer.schedule(wallDeadline: w, repeating: repeating, leeway: slack)
        case .forever: timer.schedule(deadline: .distantFuture, repeating: repeating, leeway: slack)
        }
    }
}

extension Options {
    /// An error about the current option's value.
    func invalid(_ message: String) -> LuaError {
        .argument(index, "option '\(key)': \(message)")
    }
}

/// Whether the kernel can report readiness for a descriptor the way libdispatch asks it to.
enum Readiness {
    /// The errno epoll gives for `fd`, or nil when it is usable (regular files are: libdispatch
    /// treats them as always ready).
    static func refusal(_ fd: Int32) -> Int32? {
        let e = ld_epoll_refusal(fd)
        return e == 0 ? nil : e
    }
}
