import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Threads, sleeping, process control and the uncaught-error handler.
enum ThreadBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("thread") { a throws(LuaError) in
            let L = a.L
            let number = ld_thread_number()
            lua_createtable(L, 0, 4)
            lua_pushinteger(L, lua_Integer(number))
            Lua.setField(L, -2, "number")
            lua_pushinteger(L, lua_Integer(ld_gettid()))
            Lua.setField(L, -2, "tid")
            lua_pushboolean(L, number == 1 ? 1 : 0)
            Lua.setField(L, -2, "is_main")
            if number == 1 {
                Lua.push(L, "main")
                Lua.setField(L, -2, "name")
            }
            lua_rawgeti(L, ld_registryindex(), lua_Integer(a.runtime.states.threadMetatable))
            lua_setmetatable(L, -2)
            return 1
        }
        let threadToString = Bindings.register("__tostring") { a throws(LuaError) in
            let L = a.L
            try a.table(1)
            _ = Lua.getField(L, 1, "number")
            let number = lua_tointegerx(L, -1, nil)
            _ = Lua.getField(L, 1, "name")
            let name = Lua.string(L, -1) ?? "(null)"
            Lua.push(L, "<Thread: number = \(number), name = \(name)>")
            return 1
        }
        m.setups.append { rt, L in
            lua_createtable(L, 0, 2)
            ld_push_binding(L, threadToString)
            Lua.setField(L, -2, "__tostring")
            Lua.push(L, "dispatch.thread")
            Lua.setField(L, -2, "__name")
            rt.states.threadMetatable = luaL_ref(L, ld_registryindex())
        }
        m.function("sleep") { a throws(LuaError) in
            let s = try a.number(1)
            guard !s.isNaN, s >= 0 else { throw .argument(1, "seconds must be >= 0") }
            return try a.runtime.wait(a, SleepWait(nanos: Deadline.nanos(s)))
        }
        OnceBinding.install(&m)
        m.function("exit") { a throws(LuaError) in
            let code: Int32
            switch a.type(1) {
            case LUA_TNONE, LUA_TNIL: code = 0
            case LUA_TBOOLEAN: code = lua_toboolean(a.L, 1) != 0 ? 0 : 1
            default: code = Int32(truncatingIfNeeded: try a.integer(1))
            }
            a.runtime.exitProcess(code)
        }
        m.function("pid") { a throws(LuaError) in
            lua_pushinteger(a.L, lua_Integer(getpid()))
            return 1
        }
        m.function("kill") { a throws(LuaError) in
            let pid = try a.integer(1)
            let signal = try Signals.argument(a, 2)
            guard pid > 0 else { throw .argument(1, "pid must be > 0, got \(pid)") }
            guard pid <= Int(Int32.max) else { throw .argument(1, "pid out of range") }
            if Glibc.kill(pid_t(pid), signal) == 0 {
                lua_pushboolean(a.L, 1)
                return 1
            }
            return Errno.pushFailure(a.L, errno)
        }
        m.function("set_error_handler") { a throws(LuaError) in
            guard a.isNoneOrNil(1) || a.type(1) == LUA_TFUNCTION else { throw a.typeError(1, "function or nil") }
            let rt = a.runtime
            if rt.reporting.errorHandlerRef != LUA_NOREF { luaL_unref(a.L, ld_registryindex(), rt.reporting.errorHandlerRef) }
            rt.reporting.errorHandlerRef = a.isNoneOrNil(1) ? LUA_NOREF : a.ref(1)
            return 0
        }
        m.function("errno_name") { a throws(LuaError) in
            Lua.push(a.L, Errno.name(Int32(truncatingIfNeeded: try a.integer(1))))
            return 1
        }
    }
}

/// `dispatch.sleep(seconds)`: nanosleep, or a Dispatch timer inside a task.
struct SleepWait: Waitable {
    let nanos: Int64

    var kind: String { "sleep" }
    static var blocksNatively: Bool { true }

    func block(_ timeout: Deadline) -> Bool {
        var t = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
        var left = timespec()
        while nanosleep(&t, &left) == -1 && errno == EINTR { t = left }
        return true
    }

    func arm(_ waiter: Waiter) {
        let deadline = DispatchTime(uptimeNanoseconds: UInt64(Deadline.clamp(Deadline.now() + nanos)))
        let (q, end) = waiter.delivery()
        q.asyncAfter(deadline: deadline, execute: end)
    }

    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 { 0 }
}

/// Signal names as `dispatch.kill` and signal sources take them.
enum Signals {
    static let table: [(String, Int32)] = [
        ("SIGHUP", SIGHUP), ("SIGINT", SIGINT), ("SIGQUIT", SIGQUIT), ("SIGILL", SIGILL), ("SIGTRAP", SIGTRAP),
        ("SIGABRT", SIGABRT), ("SIGBUS", SIGBUS), ("SIGFPE", SIGFPE), ("SIGKILL", SIGKILL), ("SIGUSR1", SIGUSR1),
        ("SIGSEGV", SIGSEGV), ("SIGUSR2", SIGUSR2), ("SIGPIPE", SIGPIPE), ("SIGALRM", SIGALRM), ("SIGTERM", SIGTERM),
        ("SIGCHLD", SIGCHLD), ("SIGCONT", SIGCONT), ("SIGSTOP", SIGSTOP), ("SIGTSTP", SIGTSTP), ("SIGTTIN", SIGTTIN),
        ("SIGTTOU", SIGTTOU), ("SIGURG", SIGURG), ("SIGXCPU", SIGXCPU), ("SIGXFSZ", SIGXFSZ), ("SIGVTALRM", SIGVTALRM),
        ("SIGPROF", SIGPROF), ("SIGWINCH", SIGWINCH), ("SIGIO", SIGIO), ("SIGSYS", SIGSYS),
    ]

    static func number(_ name: String) -> Int32? {
        let full = name.hasPrefix("SIG") ? name : "SIG" + name
        return table.first { $0.0 == full }?.1
    }

    static func name(_ n: Int32) -> String? { table.first { $0.1 == n }?.0 }

    /// Argument `i`: a signal name ("SIGUSR1" or "USR1") or number (0 allowed, as in kill(2)).
    static func argument(_ a: Args, _ i: Int32) throws(LuaError) -> Int32 {
        if a.type(i) == LUA_TSTRING {
            let name = Lua.string(a.L, i)!
            guard let n = number(name) else { throw .argument(i, "unknown signal '\(name)'") }
            return n
        }
        guard a.type(i) == LUA_TNUMBER else { throw a.typeError(i, "signal name or number") }
        let n = try a.integer(i)
        guard (0..<65).contains(n) else { throw .argument(i, "invalid signal number \(n)") }
        return Int32(n)
    }
}

/// errno values as Lua sees them: `nil, message, "ENAME"` results and `dispatch.errno_name`.
enum Errno {
    static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", ESRCH: "ESRCH", EINTR: "EINTR", EIO: "EIO", ENXIO: "ENXIO",
        E2BIG: "E2BIG", ENOEXEC: "ENOEXEC", EBADF: "EBADF", ECHILD: "ECHILD", EAGAIN: "EAGAIN", ENOMEM: "ENOMEM",
        EACCES: "EACCES", EFAULT: "EFAULT", EBUSY: "EBUSY", EEXIST: "EEXIST", EXDEV: "EXDEV", ENODEV: "ENODEV",
        ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EINVAL: "EINVAL", ENFILE: "ENFILE", EMFILE: "EMFILE",
        ENOTTY: "ENOTTY", EFBIG: "EFBIG", ENOSPC: "ENOSPC", ESPIPE: "ESPIPE", EROFS: "EROFS", EMLINK: "EMLINK",
        EPIPE: "EPIPE", EDOM: "EDOM", ERANGE: "ERANGE", ENAMETOOLONG: "ENAMETOOLONG", ENOSYS: "ENOSYS",
        ENOTEMPTY: "ENOTEMPTY", ELOOP: "ELOOP", ECANCELED: "ECANCELED", ETIMEDOUT: "ETIMEDOUT",
        ECONNREFUSED: "ECONNREFUSED", ECONNRESET: "ECONNRESET", EADDRINUSE: "EADDRINUSE", ENOTSUP: "ENOTSUP",
        EOVERFLOW: "EOVERFLOW", EINPROGRESS: "EINPROGRESS", EALREADY: "EALREADY", ENOTSOCK: "ENOTSOCK",
        EADDRNOTAVAIL: "EADDRNOTAVAIL", ENOTCONN: "ENOTCONN", EISCONN: "EISCONN", ECONNABORTED: "ECONNABORTED",
        ENETUNREACH: "ENETUNREACH", EHOSTUNREACH: "EHOSTUNREACH", ENETDOWN: "ENETDOWN", EHOSTDOWN: "EHOSTDOWN",
        EMSGSIZE: "EMSGSIZE", EAFNOSUPPORT: "EAFNOSUPPORT", EPROTONOSUPPORT: "EPROTONOSUPPORT", ENOBUFS: "ENOBUFS",
        EDESTADDRREQ: "EDESTADDRREQ", ESHUTDOWN: "ESHUTDOWN", EPROTOTYPE: "EPROTOTYPE",
    ]

    static func name(_ n: Int32) -> String {
        if n == 0 { return "OK" }
        return names[n] ?? "E\(n)"
    }

    static func message(_ n: Int32) -> String { String(cString: strerror(n)) }

    /// Pushes `nil, message, "ENAME"`; `text` replaces strerror's message when given.
    static func pushFailure(_ L: OpaquePointer, _ n: Int32, context: String? = nil, message text: String? = nil) -> Int32 {
        lua_pushnil(L)
        let m = text ?? message(n)
        Lua.push(L, context.map { "\($0): \(m)" } ?? m)
        Lua.push(L, name(n))
        return 3
    }
}
