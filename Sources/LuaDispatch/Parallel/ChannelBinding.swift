import CLua
import CLuaShim

/// `dispatch.channel{capacity=}` and its methods: `send`, `receive`, `close`, `#ch`.
enum ChannelBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("channel") { a throws(LuaError) in
            var capacity: Int?
            try Options.parse(a, 1) { o throws(LuaError) in
                guard o.key == "capacity" else { return false }
                guard !o.isNil else { return true }
                let c = try o.integer()
                guard c >= 0 else { throw .argument(1, "option 'capacity' must be >= 0, got \(c)") }
                capacity = c
                return true
            }
            guard a.count <= 1 else { throw .argument(2, "no value expected, got \(a.typeName(2))") }
            let ch = ChannelObject(capacity: capacity)
            ch.native = a.runtime.charge(NativeCost.channel)
            ch.push(a.L)
            return 1
        }
        var t = ObjectType(.channel)
        t.method("send") { a throws(LuaError) in
            let ch: ChannelObject = try a.object(1, .channel)
            if a.type(2) == LUA_TNIL { throw .argument(2, "nil cannot be sent on a channel") }
            if a.type(2) == LUA_TNONE { throw .argument(2, "value expected") }
            let timeout = try Self.timeout(a, 3)
            let message: Message
            if a.type(2) == LUA_TSTRING { try a.runtime.checkMemory(Int(lua_rawlen(a.L, 2))) }
            do throws(CopyError) { message = try Message.copy(a.L, 2) } catch {
                throw .argument(2, error.valueMessage(to: "to a channel"))
            }
            try a.runtime.refuseIfOver()  // the copy is dropped: uncharged
            return try a.runtime.wait(a, ChannelSend(channel: ch, slot: .init(message)), timeout: timeout)
        }
        t.method("receive") { a throws(LuaError) in
            let ch: ChannelObject = try a.object(1, .channel)
            let timeout = try Self.timeout(a, 2)
            return try a.runtime.wait(a, ChannelReceive(channel: ch), timeout: timeout)
        }
        t.method("close") { a throws(LuaError) in
            lua_pushboolean(a.L, (try a.object(1, .channel, as: ChannelObject.self)).close() ? 1 : 0)
            return 1
        }
        t.meta("__len") { a throws(LuaError) in
            lua_pushinteger(a.L, lua_Integer((try a.object(1, .channel, as: ChannelObject.self)).count))
            return 1
        }
        t.meta("__close") { a throws(LuaError) in
            (try a.object(1, .channel, as: ChannelObject.self)).close()
            return 0
        }
        t.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, (try a.object(1, .channel, as: ChannelObject.self)).description)
            return 1
        }
        m.types.append(t)
    }

    /// A timeout argument of `send`, `receive` and `job:wait`: as every wait takes it, except
    /// that a negative number is an error rather than "now".
    static func timeout(_ a: Args, _ i: Int32) throws(LuaError) -> Deadline {
        if a.type(i) == LUA_TNUMBER, lua_tonumberx(a.L, i, nil) < 0 {
            throw .argument(i, "timeout must be >= 0, got \(Lua.string(a.L, i) ?? "?")")
        }
        return try Deadline.timeout(a, i)
    }
}

/// `ch:receive([timeout])`: the next value, `nil, "closed"` or `nil, "timeout"`.
struct ChannelReceive: Waitable {
    let channel: ChannelObject
    let slot = ChannelObject.ReceiveSlot()

    var kind: String { "channel" }
    func poll() -> Bool { channel.tryReceive(slot) }
    func arm(_ waiter: Waiter) { channel.armReceive(waiter, slot) }

    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 {
        switch channel.outcome(slot) {
        case .message(let m):
            guard m.push(a.L) else { throw .message("receive: \(Lua.string(a.L, -1) ?? "cannot load a function")") }
            return 1
        case .closed:
            lua_pushnil(a.L)
            Lua.push(a.L, "closed")
            return 2
        case .none:
            lua_pushnil(a.L)
            Lua.push(a.L, "timeout")
            return 2
        }
    }
}

/// `ch:send(value [, timeout])`: `true`, `false, "closed"` or `false, "timeout"`.
struct ChannelSend: Waitable {
    let channel: ChannelObject
    let slot: ChannelObject.SendSlot

    var kind: String { "channel" }
    func poll() -> Bool { channel.trySend(slot) }
    func arm(_ waiter: Waiter) { channel.armSend(waiter, slot) }

    func results(_ a: Args, _ outcome: WaitOutcome) throws(LuaError) -> Int32 {
        switch channel.result(slot) {
        case .sent: return Waits.push(a.L, true)
        case .closed:
            lua_pushboolean(a.L, 0)
            Lua.push(a.L, "closed")
            return 2
        case .pending: return Waits.push(a.L, false)
        }
    }
}
