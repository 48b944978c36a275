import CLua
import CLuaShim
import Synchronization

/// A value in transit between interpreters: plain values inline, a string as its bytes, anything
/// else as a copied graph.
enum Message: Sendable {
    case value(CopiedGraph.Value)
    case string(CopiedBytes)
    case graph(CopiedGraph)

    /// Copies the value at `i` (not nil). Lock held.
    static func copy(_ L: OpaquePointer, _ i: Int32) throws(CopyError) -> Message {
        switch lua_type(L, i) {
        case LUA_TBOOLEAN: return .value(.boolean(lua_toboolean(L, i) != 0))
        case LUA_TNUMBER:
            return .value(lua_isinteger(L, i) != 0 ? .integer(lua_tointegerx(L, i, nil)) : .number(lua_tonumberx(L, i, nil)))
        case LUA_TSTRING:
            var len = 0
            let p = lua_tolstring(L, i, &len)!
            return .string(CopiedBytes(Array(UnsafeRawBufferPointer(start: p, count: len)), Runtime.from(L)))
        default:
            let top = lua_gettop(L)
            defer { lua_settop(L, top) }
            var copier = ValueCopier(L, cacheBytecode: true)
            defer { copier.finish() }
            try copier.root(i)
            copier.graph.chargeTo(Runtime.from(L))
            return .graph(copier.graph)
        }
    }

    /// Pushes the value; false (with a message pushed instead) when its bytecode fails to load.
    func push(_ L: OpaquePointer) -> Bool {
        switch self {
        case .value(.boolean(let b)): lua_pushboolean(L, b ? 1 : 0)
        case .value(.integer(let n)): lua_pushinteger(L, n)
        case .value(.number(let d)): lua_pushnumber(L, d)
        case .value: lua_pushnil(L)
        case .string(let copied):
            copied.bytes.withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
            }
        case .graph(let graph):
            lua_pushnil(L)
            let slot = lua_gettop(L)
            let built: Void? = graph.build(in: L) { push in
                push(graph.roots[0])
                ld_replace(L, slot)
            }
            if built == nil {
                ld_replace(L, slot)
                return false
            }
        }
        return true
    }
}

/// `dispatch.channel`: a queue of copied values that every interpreter of the process can use
/// (the main one, pool workers, `concurrent_map` bodies). One Swift object, whose userdata in each
/// interpreter is the same one each time it arrives there (see `push`).
///
/// Waits go through the runtime's one wait path (`Runtime.wait`): a thread blocked in `receive`
/// or `send` holds no interpreter, a task is suspended instead. Whoever ends a wait (a sender
/// for a waiting receiver, a receiver for a waiting sender, `close`) writes the outcome into the
/// waiter's slot and ends its wait under the channel's lock; if the wait had ended otherwise (a
/// timeout, a cancellation) it undoes the write, so a value is never lost nor given twice. The
/// slot is read under the same lock.
final class ChannelObject: SharedObject, @unchecked Sendable {
    private static let nextID = Atomic<Int>(1)

    let id: Int
    /// nil: unbounded; 0: every send waits for a receiver.
    let capacity: Int?
    private let state = Mutex(State())
    /// Its native cost, charged to the memory limit of the interpreter that made it while it lives.
    var native = MemoryCharge.none

    struct State {
        var buffer = FIFO<Message>()
        var receivers = FIFO<(waiter: Waiter, slot: ReceiveSlot)>()
        var senders = FIFO<(waiter: Waiter, slot: SendSlot)>()
        var closed = false

        /// The next value: from the buffer (which a waiting sender then refills), or from a
        /// waiting sender directly (capacity 0).
        mutating func take() -> Message? {
            if let m = buffer.popFirst() {
                while let s = senders.popFirst() {
                    if s.waiter.finish(.done) {
                        s.slot.result = .sent
                        buffer.append(s.slot.message)
                        break
                    }
                }
                return m
            }
            while let s = senders.popFirst() {
                if s.waiter.finish(.done) {
                    s.slot.result = .sent
                    return s.slot.message
                }
            }
            return nil
        }

        /// Sends at once if a receiver waits or there is room; false when the send must wait.
        mutating func put(_ slot: SendSlot, capacity: Int?) -> Bool {
            if closed {
                slot.result = .closed
                return true
            }
            while let r = receivers.popFirst() {
                r.slot.outcome = .message(slot.message)
                if r.waiter.finish(.done) {
                    slot.result = .sent
                    return true
                }
                r.slot.outcome = .none
            }
            if let capacity, buffer.count >= capacity { return false }
            buffer.append(slot.message)
            slot.result = .sent
            return true
        }
    }

    /// Where a receiver's outcome is written. Under the channel's lock.
    final class ReceiveSlot: @unchecked Sendable {
        enum Outcome { case none, message(Message), closed }
        var outcome = Outcome.none
    }

    /// A sender's value and what became of it. Under the channel's lock.
    final class SendSlot: @unchecked Sendable {
        enum Result { case pending, sent, closed }
        let message: Message
        var result = Result.pending
        init(_ message: Message) { self.message = message }
    }

    init(capacity: Int?) {
        self.capacity = capacity
        id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    var count: Int { state.withLock { $0.buffer.count } }
    var isClosed: Bool { state.withLock { $0.closed } }

    // MARK: receiving

    /// Takes the next value, or notes that the channel is closed and empty; false when the
    /// receiver must wait.
    func tryReceive(_ slot: ReceiveSlot) -> Bool {
        state.withLock { s in
            if let m = s.take() {
                slot.outcome = .message(m)
            } else if s.closed {
                slot.outcome = .closed
            } else {
                return false
            }
            return true
        }
    }

    /// Ends `waiter`'s wait when a value arrives or the channel closes (now, if one has meanwhile).
    func armReceive(_ waiter: Waiter, _ slot: ReceiveSlot) {
        state.withLock { s in
            if let m = s.take() {
                slot.outcome = .message(m)
                if !waiter.finish(.done) { s.buffer.prepend(m) }
            } else if s.closed {
                slot.outcome = .closed
                waiter.finish(.done)
            } else {
                s.receivers.append((waiter, slot), live: { $0.waiter.isWaiting })
            }
        }
    }

    func outcome(_ slot: ReceiveSlot) -> ReceiveSlot.Outcome { state.withLock { _ in slot.outcome } }

    // MARK: sending

    /// Sends at once, or finds the channel closed; false when the sender must wait.
    func trySend(_ slot: SendSlot) -> Bool {
        state.withLock { $0.put(slot, capacity: capacity) }
    }

    /// Ends `waiter`'s wait when the value has gone into the channel or the channel closed.
    func armSend(_ waiter: Waiter, _ slot: SendSlot) {
        state.withLock { s in
            if s.put(slot, capacity: capacity) {
                // If an interruption ended the wait meanwhile, the value is sent all the same.
                waiter.finish(.done)
            } else {
                s.senders.append((waiter, slot), live: { $0.waiter.isWaiting })
            }
        }
    }

    func result(_ slot: SendSlot) -> SendSlot.Result { state.withLock { _ in slot.result } }

    // MARK: closing

    /// No more sends; waiting receivers (the buffer is empty then) get "closed", and so do
    /// waiting senders. False when it was closed already.
    @discardableResult
    func close() -> Bool {
        state.withLock { s in
            guard !s.closed else { return false }
            s.closed = true
            while let r = s.receivers.popFirst() {
                r.slot.outcome = .closed
                if !r.waiter.finish(.done) { r.slot.outcome = .none }
            }
            while let w = s.senders.popFirst() {
                w.slot.result = .closed
                if !w.waiter.finish(.done) { w.slot.result = .pending }
            }
            return true
        }
    }

    // MARK: userdata

    /// Pushes `L`'s userdata for this channel: the one it already has while that is alive (kept
    /// in a weak-valued table by object address), else a new one. The entry goes when the
    /// userdata is collected, before its `__gc` lets the object go, so an address is never
    /// mistaken for another channel's.
    func push(_ L: OpaquePointer) {
        lua_checkstack(L, 4)
        RegistryKeys.pushWeakTable(L, RegistryKeys.channels, mode: "v")
        let key = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        if lua_rawgetp(L, -1, key) == LUA_TUSERDATA {
            ld_remove(L, -2)
            return
        }
        ld_pop(L, 1)
        Runtime.from(L).objects.push(L, self, .channel)
        lua_pushvalue(L, -1)
        lua_rawsetp(L, -3, key)
        ld_remove(L, -2)
    }

    var description: String {
        let (queued, closed) = state.withLock { ($0.buffer.count, $0.closed) }
        let bound = capacity.map { ", capacity \($0)" } ?? ""
        return "dispatch.channel #\(id) (\(queued) queued\(bound)\(closed ? ", closed" : ""))"
    }
}

/// A first-in first-out list: O(1) at both ends, storage reused. Entries of waiters that ended
/// otherwise are dropped when the list has doubled (`append(_:live:)`).
struct FIFO<T> {
    private var items: [T?] = []
    private var head = 0
    private var pruneAt = 64

    var count: Int { items.count - head }
    var isEmpty: Bool { head == items.count }

    mutating func append(_ x: T) { items.append(x) }

    mutating func append(_ x: T, live: (T) -> Bool) {
        if count >= pruneAt {
            items = items[head...].filter { $0.map(live) ?? false }
            head = 0
            pruneAt = max(64, 2 * items.count)
        }
        items.append(x)
    }

    mutating func popFirst() -> T? {
        guard head < items.count else { return nil }
        let x = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return x
    }

    mutating func prepend(_ x: T) {
        if head > 0 {
            head -= 1
            items[head] = x
        } else {
            items.insert(x, at: 0)
        }
    }
}
