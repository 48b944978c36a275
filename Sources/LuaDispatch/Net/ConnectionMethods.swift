import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The methods and fields of `dispatch.connection` and `dispatch.server`.
extension ConnectionBinding {
    static func connectionType() -> ObjectType {
        var t = ObjectType(.connection)
        t.release = ConnectionObject.release
        t.method("on_data") { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            let fn = try callback(a, 2)
            c.setOnData(fn)
            c.pinIfBusy(a.L, 1)
            return 0
        }
        t.method("on_drain") { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            c.setOnDrain(try callback(a, 2))
            return 0
        }
        t.method("write") { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            let fn = try callback(a, 3, optional: true)
            let r: Int32
            if a.type(2) == LUA_TSTRING {
                var n = 0
                let p = lua_tolstring(a.L, 2, &n)
                r = c.write(UnsafeRawBufferPointer(start: p, count: n), callback: fn)
            } else {
                let bytes = [UInt8](try DataBinding.argument(a, 2))
                r = bytes.withUnsafeBytes { c.write($0, callback: fn) }
            }
            guard r == 0 else { return Errno.pushFailure(a.L, r, context: "write") }
            c.pinIfBusy(a.L, 1)
            lua_pushboolean(a.L, 1)
            return 1
        }
        t.method("shutdown") { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            let r = c.shutdown()
            guard r == 0 else { return Errno.pushFailure(a.L, r, context: "shutdown") }
            lua_pushboolean(a.L, 1)
            return 1
        }
        t.method("close") { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            var now = false
            if !a.isNoneOrNil(2) {
                try Options.parse(a, 2) { o throws(LuaError) in
                    guard o.key == "now" else { return false }
                    now = try o.bool()
                    return true
                }
            }
            c.close(now: now)
            return 0
        }
        t.method("set_option") { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            let option = try optionIndex(a, 2)
            let value: Int32
            if option >= 4 {
                let n = try a.integer(3)
                guard n > 0 && n <= Int(Int32.max) else { throw .argument(3, "buffer size out of range, got \(n)") }
                value = Int32(n)
            } else {
                value = try a.boolean(3) ? 1 : 0
            }
            let r = c.setOption(option, value)
            guard r == 0 else { return Errno.pushFailure(a.L, r, context: "set_option") }
            lua_pushboolean(a.L, 1)
            return 1
        }
        t.method("get_option") { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            let option = try optionIndex(a, 2)
            guard c.state != .closed else { return Errno.pushFailure(a.L, EBADF, context: "get_option") }
            let v = ld_netpoll_get_option(c.fd, option)
            guard v >= 0 else { return Errno.pushFailure(a.L, -v, context: "get_option") }
            if option >= 4 { lua_pushinteger(a.L, lua_Integer(v)) } else { lua_pushboolean(a.L, v != 0 ? 1 : 0) }
            return 1
        }
        t.fields { a throws(LuaError) in
            let c: ConnectionObject = try a.object(1, .connection)
            switch Lua.string(a.L, 2) {
            case "write_queue_size": lua_pushinteger(a.L, lua_Integer(c.writeQueueSize))
            case "fd": if c.state == .closed { lua_pushnil(a.L) } else { lua_pushinteger(a.L, lua_Integer(c.fd)) }
            case "peer": Lua.push(a.L, c.peer)
            case "closed": lua_pushboolean(a.L, c.state == .open ? 0 : 1)
            default: return 0
            }
            return 1
        }
        t.meta("__close") { a throws(LuaError) in
            (try a.object(1, .connection, as: ConnectionObject.self)).close(now: false)
            return 0
        }
        t.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, (try a.object(1, .connection, as: ConnectionObject.self)).description)
            return 1
        }
        return t
    }

    static func serverType() -> ObjectType {
        var t = ObjectType(.server)
        t.method("close") { a throws(LuaError) in
            (try a.object(1, .server, as: ServerObject.self)).close()
            return 0
        }
        t.fields { a throws(LuaError) in
            let s: ServerObject = try a.object(1, .server)
            switch Lua.string(a.L, 2) {
            case "fd": if s.open { lua_pushinteger(a.L, lua_Integer(s.fd)) } else { lua_pushnil(a.L) }
            case "port":
                guard case .inet(_, let port) = s.local else { return 0 }
                lua_pushinteger(a.L, lua_Integer(port))
            case "path":
                guard case .unix(let path) = s.local else { return 0 }
                Lua.push(a.L, path)
            case "accept_errors": lua_pushinteger(a.L, lua_Integer(s.acceptErrors))
            case "closed": lua_pushboolean(a.L, s.open ? 0 : 1)
            default: return 0
            }
            return 1
        }
        t.meta("__close") { a throws(LuaError) in
            (try a.object(1, .server, as: ServerObject.self)).close()
            return 0
        }
        t.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, (try a.object(1, .server, as: ServerObject.self)).description)
            return 1
        }
        return t
    }

    /// A callback argument: a function, or nil (`optional`, or to clear).
    private static func callback(_ a: Args, _ i: Int32, optional: Bool = false) throws(LuaError) -> LuaRef? {
        if a.isNoneOrNil(i) {
            if optional || a.type(i) == LUA_TNIL { return nil }
            throw a.typeError(i, "function")
        }
        guard a.type(i) == LUA_TFUNCTION else { throw a.typeError(i, optional ? "function or nil" : "function") }
        return LuaRef(a.runtime, a.ref(i))
    }

    private static func optionIndex(_ a: Args, _ i: Int32) throws(LuaError) -> Int32 {
        let name = try a.string(i)
        guard let n = optionNames.firstIndex(of: name) else {
            throw .argument(i, "invalid option '\(name)' (\(optionNames.map { "\"\($0)\"" }.joined(separator: ", ")) expected)")
        }
        return Int32(n)
    }
}
