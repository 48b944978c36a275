import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// A `DispatchData` as Lua sees it. Immutable: slicing and concatenation make new objects that
/// share the bytes (Dispatch keeps regions by reference), so data read from one channel and
/// written to another never becomes a Lua string.
final class DataObject: @unchecked Sendable {
    let data: DispatchData
    /// Bytes this object charged to the interpreter's memory limit (its own copy or read), or
    /// 0; given back when Lua collects it.
    private let charged: (budget: OpaquePointer, bytes: Int64)?
    /// Dispatch's regions of the data (a concatenation lists every region of both sides, so
    /// doubling a data object doubles its list): with the object, its cost against the limit.
    var regions = 1
    var native = MemoryCharge.none
    /// A charge shared with the other regions `regions()` listed with this one.
    var shared: HeldCharge?

    init(_ data: DispatchData, charging budget: OpaquePointer? = nil) {
        self.data = data
        if let budget, data.count > 0 {
            ld_budget_charge(budget, Int64(data.count), 1)
            charged = (budget, Int64(data.count))
        } else {
            charged = nil
        }
    }

    deinit { if let charged { ld_budget_refund(charged.budget, charged.bytes) } }
}

/// `dispatch.data(...)`, `dispatch.data.map(path)` and the data methods.
enum DataBinding {
    static func install(_ m: inout ModuleSpec) {
        m.table("data", call: { a throws(LuaError) in
            guard a.isNoneOrNil(1) || a.type(1) == LUA_TSTRING else { throw a.typeError(1, "string or nil") }
            if !a.isNoneOrNil(1) { try a.runtime.checkMemory(Int(lua_rawlen(a.L, 1))) }
            let data = a.isNoneOrNil(1) ? DispatchData.empty : copy(a.L, 1)
            push(a.L, a.runtime, data)
            return 1
        }) { t in
            t.function("map") { a throws(LuaError) in try map(a, try a.string(1)) }
        }
        let iterator = Bindings.register("regions iterator") { a throws(LuaError) in regionsNext(a) }
        var t = ObjectType(.data)
        t.method("sub") { a throws(LuaError) in
            let d: DataObject = try a.object(1, .data)
            let range = try slice(a, d.data.count, 2)
            push(a, d.data.subdata(in: range), regions: max(1, min(d.regions, range.count)))
            return 1
        }
        t.method("bytes") { a throws(LuaError) in
            let d: DataObject = try a.object(1, .data)
            let range = try slice(a, d.data.count, 2)
            try a.runtime.checkMemory(range.count)
            pushString(a.L, range.count == d.data.count ? d.data : d.data.subdata(in: range))
            return 1
        }
        t.method("regions") { a throws(LuaError) in
            let d: DataObject = try a.object(1, .data)
            // The regions are listed now, as data that share the bytes: {offset, region, ...}.
            // Each keeps the whole data alive (its deallocator holds it): a subdata per region
            // looked the region up from the first, quadratic in the number of regions.
            let whole = d.data
            // Every region becomes an object: charged (refused past the limit) before any is
            // made, as long as any of them lives.
            let listed = HeldCharge(try a.runtime.reserveCollecting(a.L, d.regions * NativeCost.data))
            var regions: [(Int, DispatchData)] = []
            var ended = false
            whole.enumerateBytes { buffer, index, stop in
                if regions.count % Runtime.stepsPerEndCheck == 0 && a.runtime.terminating {
                    ended = true
                    stop = true
                    return
                }
                let bytes = UnsafeRawBufferPointer(buffer)
                regions.append((index, bytes.isEmpty ? DispatchData.empty
                    : DispatchData(bytesNoCopy: bytes, deallocator: .custom(nil, { withExtendedLifetime(whole) {} }))))
            }
            if ended { try a.runtime.checkEnd() }
            let L = a.L
            lua_createtable(L, Int32(clamping: regions.count * 2), 1)
            for (i, (offset, region)) in regions.enumerated() {
                try a.runtime.checkEnd(every: i + 1)
                lua_pushinteger(L, lua_Integer(offset))
                lua_rawseti(L, -2, lua_Integer(2 * i + 1))
                let piece = DataObject(region)
                piece.shared = listed
                a.runtime.objects.push(L, piece, .data)
                lua_rawseti(L, -2, lua_Integer(2 * i + 2))
            }
            lua_pushinteger(L, 0)
            Lua.setField(L, -2, "next")
            ld_push_binding_n(L, iterator, 1)
            return 1
        }
        t.meta("__len") { a throws(LuaError) in
            lua_pushinteger(a.L, lua_Integer((try a.object(1, .data, as: DataObject.self)).data.count))
            return 1
        }
        t.meta("__concat") { a throws(LuaError) in
            let regions = regionCount(a, 1) + regionCount(a, 2)
            try a.runtime.checkMemory(regions * NativeCost.dataRegion)  // Dispatch's list of them
            var result = try operand(a, 1)
            result.append(try operand(a, 2))
            push(a, result, regions: regions)
            return 1
        }
        t.meta("__eq") { a throws(LuaError) in
            // Lua asks only when both operands are userdata; another type is simply unequal.
            let x: DataObject? = a.optionalObject(1, .data)
            let y: DataObject? = a.optionalObject(2, .data)
            let rt = a.runtime
            var ended = false
            let same = x != nil && y != nil && equal(x!.data, y!.data) {
                ended = ended || rt.terminating
                return ended
            }
            if ended { try rt.checkEnd() }
            lua_pushboolean(a.L, same ? 1 : 0)
            return 1
        }
        t.meta("__tostring") { a throws(LuaError) in
            let d: DataObject = try a.object(1, .data)
            Lua.push(a.L, "dispatch.data (\(d.data.count) bytes)")
            return 1
        }
        m.types.append(t)
    }

    static func push(_ a: Args, _ data: DispatchData, regions: Int = 1) {
        let d = DataObject(data)
        d.regions = regions
        d.native = a.runtime.charge(NativeCost.data + regions * NativeCost.dataRegion)
        a.runtime.objects.push(a.L, d, .data)
    }

    /// The regions of a `..` operand: a data object's, or 1 for a string.
    private static func regionCount(_ a: Args, _ i: Int32) -> Int {
        (a.optionalObject(i, .data) as DataObject?)?.regions ?? 1
    }

    /// For handlers, which push onto their own Lua thread. Lock held.
    static func push(_ L: OpaquePointer, _ rt: Runtime, _ data: DispatchData, fresh: Bool = true) {
        let d = DataObject(data, charging: fresh ? rt.control.budget : nil)
        d.native = rt.charge(NativeCost.data)
        rt.objects.push(L, d, .data)
        if fresh { account(L, rt, data.count) }
    }

    /// Tells Lua's collector about bytes it cannot see, a step per MiB: otherwise chunks read
    /// from a channel stay alive until a collection that Lua's own allocations never trigger
    /// (measured: a 200 MB combine peaked at 222 MB RSS).
    static func account(_ L: OpaquePointer, _ rt: Runtime, _ bytes: Int) {
        rt.states.externalBytes += bytes
        guard rt.states.externalBytes >= 1 << 20 else { return }
        let kb = rt.states.externalBytes >> 10
        rt.states.externalBytes = 0
        _ = ld_gc_step(L, Int32(min(kb, Int(Int32.max))))
    }

    /// The string at `i` copied into new data (one copy, as `dispatch.data(s)` promises).
    static func copy(_ L: OpaquePointer, _ i: Int32) -> DispatchData {
        var len = 0
        guard let p = lua_tolstring(L, i, &len), len > 0 else { return .empty }
        return DispatchData(bytes: UnsafeRawBufferPointer(start: p, count: len))
    }

    /// Argument `i` as data: a `dispatch.data` (shared, not copied) or a string (copied).
    static func argument(_ a: Args, _ i: Int32) throws(LuaError) -> DispatchData {
        if let d: DataObject = a.optionalObject(i, .data) { return d.data }
        guard a.type(i) == LUA_TSTRING else { throw a.typeError(i, "dispatch.data or string") }
        return copy(a.L, i)
    }

    /// A `..` operand: Lua's concatenation also accepts numbers.
    private static func operand(_ a: Args, _ i: Int32) throws(LuaError) -> DispatchData {
        if let d: DataObject = a.optionalObject(i, .data) { return d.data }
        guard a.type(i) == LUA_TSTRING || a.type(i) == LUA_TNUMBER else {
            throw .message("attempt to concatenate a \(a.typeName(i)) value with a dispatch.data")
        }
        lua_pushvalue(a.L, i)  // converting a copy leaves a number argument a number
        defer { ld_pop(a.L, 1) }
        return copy(a.L, -1)
    }

    /// `i [, j]` at argument `first`, resolved like `string.sub` against `count` bytes.
    private static func slice(_ a: Args, _ count: Int, _ first: Int32) throws(LuaError) -> Range<Int> {
        var i = try a.optionalInteger(first, 1)
        var j = try a.optionalInteger(first + 1, -1)
        if i < 0 { i = max(count + i + 1, 1) } else if i == 0 { i = 1 }
        if j < 0 { j = count + j + 1 } else if j > count { j = count }
        guard i <= j else { return 0..<0 }
        return (i - 1)..<j
    }

    /// Pushes a copy of `data` as a Lua string.
    private static func pushString(_ L: OpaquePointer, _ data: DispatchData) {
        guard data.count > 0 else {
            Lua.push(L, "")
            return
        }
        data.withUnsafeBytes { (p: UnsafePointer<CChar>) in _ = lua_pushlstring(L, p, data.count) }
    }

    /// Byte equality, region by region without flattening either side, in one pass over each
    /// (a subdata of `y` per region of `x` was quadratic in the number of regions). `ended` is
    /// asked every `Runtime.stepsPerEndCheck` regions, and stops the comparison when true.
    private static func equal(_ x: DispatchData, _ y: DispatchData, ended: () -> Bool) -> Bool {
        guard x.count == y.count else { return false }
        guard x.count > 0 else { return true }
        var parts: [UnsafeRawBufferPointer] = []
        var stopped = false
        y.enumerateBytes { buffer, _, stop in
            if parts.count % Runtime.stepsPerEndCheck == Runtime.stepsPerEndCheck - 1 && ended() {
                stopped = true
                stop = true
            }
            parts.append(UnsafeRawBufferPointer(buffer))
        }
        if stopped { return false }
        var same = true, part = 0, used = 0, seen = 0
        // The regions of `y` stay valid while `y` lives (it is not mutated during the walk).
        withExtendedLifetime(y) {
            x.enumerateBytes { buffer, _, stop in
                seen += 1
                if seen % Runtime.stepsPerEndCheck == 0 && ended() {
                    same = false
                    stop = true
                    return
                }
                var rest = UnsafeRawBufferPointer(buffer)
                while !rest.isEmpty {
                    while parts[part].count == used { part += 1; used = 0 }
                    let n = min(rest.count, parts[part].count - used)
                    if memcmp(rest.baseAddress!, parts[part].baseAddress! + used, n) != 0 {
                        same = false
                        stop = true
                        return
                    }
                    rest = UnsafeRawBufferPointer(rebasing: rest[n...])
                    used += n
                }
            }
        }
        return same
    }

    /// The iterator `d:regions()` returns: upvalue 2 is `{offset, region, ..., next = k}`.
    private static func regionsNext(_ a: Args) -> Int32 {
        let L = a.L
        let list = ld_upvalueindex(2)
        _ = Lua.getField(L, list, "next")
        let k = lua_tointegerx(L, -1, nil)
        ld_pop(L, 1)
        guard lua_rawgeti(L, list, k + 1) != LUA_TNIL else { return 1 }
        lua_rawgeti(L, list, k + 2)
        lua_pushinteger(L, k + 2)
        Lua.setField(L, list, "next")
        return 2
    }

    /// `dispatch.data.map(path)`: the file mapped read-only; the bytes are unmapped when the
    /// last data sharing them goes. `.custom` is required: `.free` and the default crash.
    private static func map(_ a: Args, _ path: String) throws(LuaError) -> Int32 {
        // O_NONBLOCK: opening a FIFO (or a terminal) for reading would otherwise block, here,
        // with the interpreter held, until a writer appears: every block of the runtime would stop.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return Errno.pushFailure(a.L, errno, context: path) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return Errno.pushFailure(a.L, errno, context: path) }
        let type = st.st_mode & S_IFMT
        if type == S_IFDIR { return Errno.pushFailure(a.L, EISDIR, context: path) }
        if type == S_IFIFO || type == S_IFSOCK { return Errno.pushFailure(a.L, ENODEV, context: path) }
        let size = Int(st.st_size)
        guard size > 0 else {
            push(a, .empty)
            return 1
        }
        let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let p, p != MAP_FAILED else { return Errno.pushFailure(a.L, errno, context: path) }
        let bytes = UnsafeRawBufferPointer(start: p, count: size)
        push(a, DispatchData(bytesNoCopy: bytes, deallocator: .custom(nil, { munmap(p, size) })))
        return 1
    }
}
