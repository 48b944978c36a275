import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `dispatch.fd.*`: thin POSIX descriptor calls, for feeding sources and channels. Failures
/// return `nil, message, "ENAME"` (never raised); blocking calls release the interpreter.
enum FDBinding {
    /// The most one `dispatch.fd.read` allocates; read(2) may return less than asked anyway.
    static let maxRead = 16 << 20

    static func install(_ m: inout ModuleSpec) {
        m.table("fd") { t in
            t.function("pipe") { a throws(LuaError) in
                var fds: [Int32] = [0, 0]
                // Close-on-exec, like `open` below: a child process spawned meanwhile must not keep
                // the pipe (or its epoll registration) alive.
                guard ld_pipe_cloexec(&fds) == 0 else { return Errno.pushFailure(a.L, errno) }
                for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                lua_pushinteger(a.L, lua_Integer(fds[0]))
                lua_pushinteger(a.L, lua_Integer(fds[1]))
                return 2
            }
            t.function("open") { a throws(LuaError) in
                let path = try a.string(1)
                let flags = try OpenMode.flags(a, 2, try a.string(2))
                let mode = a.isNoneOrNil(3) ? 0o644 : try OpenMode.permissions(a, 3)
                let fd = a.runtime.unlocked { open(path, flags | O_CLOEXEC, mode) }
                guard fd >= 0 else { return Errno.pushFailure(a.L, errno, context: path) }
                lua_pushinteger(a.L, lua_Integer(fd))
                return 1
            }
            t.function("read") { a throws(LuaError) in
                let fd = try descriptor(a, 1)
                let max = try a.integer(2)
                guard max >= 0 else { throw .argument(2, "length must be >= 0, got \(max)") }
                var buffer = [UInt8](repeating: 0, count: min(max, maxRead))
                let count = buffer.count
                let (n, err): (Int, Int32) = a.runtime.unlocked {
                    buffer.withUnsafeMutableBytes { p in
                        var n: Int
                        repeat { n = Glibc.read(fd, p.baseAddress, count) } while n < 0 && errno == EINTR
                        return (n, errno)
                    }
                }
                guard n >= 0 else { return Errno.pushFailure(a.L, err) }
                buffer.withUnsafeBytes { p in _ = lua_pushlstring(a.L, p.baseAddress?.assumingMemoryBound(to: CChar.self), n) }
                return 1
            }
            t.function("write") { a throws(LuaError) in
                let fd = try descriptor(a, 1)
                guard a.type(2) == LUA_TSTRING else { throw a.typeError(2, "string") }
                var len = 0
                let p = lua_tolstring(a.L, 2, &len)!
                let bytes = [UInt8](UnsafeRawBufferPointer(start: p, count: len))  // copied before unlocking
                let (n, err): (Int, Int32) = a.runtime.unlocked {
                    bytes.withUnsafeBytes { p in
                        var n: Int
                        repeat { n = Glibc.write(fd, p.baseAddress, p.count) } while n < 0 && errno == EINTR
                        return (n, errno)
                    }
                }
                guard n >= 0 else { return Errno.pushFailure(a.L, err) }
                lua_pushinteger(a.L, lua_Integer(n))
                return 1
            }
            t.function("close") { a throws(LuaError) in
                let fd = try descriptor(a, 1)
                // Closing libdispatch's own epoll, event, timer or signal descriptor makes it
                // abort ("Do not close random Unix descriptors") or lose events: refuse.
                if DispatchDescriptors.owns(fd) {
                    return Errno.pushFailure(a.L, EPERM, context: "fd \(fd) belongs to Dispatch")
                }
                guard Glibc.close(fd) == 0 else { return Errno.pushFailure(a.L, errno) }
                lua_pushboolean(a.L, 1)
                return 1
            }
            t.function("set_nonblocking") { a throws(LuaError) in
                let fd = try descriptor(a, 1)
                let on = a.isNoneOrNil(2) ? true : try a.boolean(2)
                let flags = fcntl(fd, F_GETFL)
                guard flags >= 0, fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) == 0 else {
                    return Errno.pushFailure(a.L, errno)
                }
                lua_pushboolean(a.L, 1)
                return 1
            }
        }
    }

    /// Argument `i` as a descriptor number: an integer >= 0 (whether it is open is errno's job).
    static func descriptor(_ a: Args, _ i: Int32) throws(LuaError) -> Int32 {
        let fd = try a.integer(i)
        guard fd >= 0, fd <= Int(Int32.max) else { throw .argument(i, "invalid file descriptor \(fd)") }
        return Int32(fd)
    }
}

/// `io.open`-style modes and permissions, shared by `dispatch.fd.open` and `dispatch.io`.
enum OpenMode {
    /// "r", "w", "a", "r+", "w+", "a+" (a "b" anywhere is accepted and ignored, as in C).
    static func flags(_ mode: String) -> Int32? {
        switch mode.filter({ $0 != "b" }) {
        case "r": O_RDONLY
        case "w": O_WRONLY | O_CREAT | O_TRUNC
        case "a": O_WRONLY | O_CREAT | O_APPEND
        case "r+": O_RDWR
        case "w+": O_RDWR | O_CREAT | O_TRUNC
        case "a+": O_RDWR | O_CREAT | O_APPEND
        default: nil
        }
    }

    static func flags(_ a: Args, _ i: Int32, _ mode: String) throws(LuaError) -> Int32 {
        guard let f = flags(mode) else { throw .argument(i, "invalid mode '\(mode)'") }
        return f
    }

    /// An integer (420 = 0644) or an octal string ("0644", "644").
    static func permissions(_ a: Args, _ i: Int32) throws(LuaError) -> mode_t {
        if a.type(i) == LUA_TSTRING {
            let s = Lua.string(a.L, i)!
            guard let v = parse(s) else { throw .argument(i, "invalid permissions '\(s)' (octal string expected)") }
            return v
        }
        guard a.type(i) == LUA_TNUMBER else { throw a.typeError(i, "integer or octal string") }
        let v = try a.integer(i)
        guard (0...0o7777).contains(v) else { throw .argument(i, "permissions out of range: \(v)") }
        return mode_t(v)
    }

    static func parse(_ s: String) -> mode_t? {
        guard !s.isEmpty, s.count <= 5, let v = Int(s, radix: 8), (0...0o7777).contains(v) else { return nil }
        return mode_t(v)
    }
}

/// The descriptors libdispatch keeps for itself on Linux, recognised by their kind.
enum DispatchDescriptors {
    static let kinds = ["anon_inode:[eventpoll]", "anon_inode:[eventfd]", "anon_inode:[timerfd]", "anon_inode:[signalfd]"]

    static func owns(_ fd: Int32) -> Bool {
        var buffer = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return false }
        let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return kinds.contains(target)
    }
}
