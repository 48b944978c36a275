import CLua
import CLuaShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Largest offset we hand to Dispatch: ~146 years. Dispatch aborts on `DISPATCH_TIME_FOREVER`
/// in `asyncAfter` and overflows on larger values.
private let maxNanos = Int64.max / 2

/// A deadline or timeout as Dispatch takes it.
enum Deadline {
    case forever
    case time(DispatchTime)
    case wall(DispatchWallTime)

    /// Seconds from now, a `dispatch.time`, or a `dispatch.walltime`; nil when it is none of them.
    static func from(_ a: Args, _ i: Int32) -> Deadline? {
        let L = a.L
        if lua_type(L, i) == LUA_TNUMBER {
            let s = lua_tonumberx(L, i, nil)
            guard !s.isNaN else { return nil }
            return .time(DispatchTime(uptimeNanoseconds: UInt64(clamp(now() + nanos(s)))))
        }
        if let v = a.runtime.objects.value(L, i, .time) {
            return .time(DispatchTime(uptimeNanoseconds: UInt64(clamp(v))))
        }
        if let v = a.runtime.objects.value(L, i, .walltime) {
            if v <= 0 { return .wall(.now()) }
            let c = clamp(v)
            return .wall(DispatchWallTime(timespec: timespec(tv_sec: Int(c / 1_000_000_000), tv_nsec: Int(c % 1_000_000_000))))
        }
        return nil
    }

    /// Argument `i` as a timeout: nil or absent means forever.
    static func timeout(_ a: Args, _ i: Int32) throws(LuaError) -> Deadline {
        if a.isNoneOrNil(i) { return .forever }
        return try deadline(a, i)
    }

    /// Argument `i` as a deadline, which must be given.
    static func deadline(_ a: Args, _ i: Int32) throws(LuaError) -> Deadline {
        if a.type(i) == LUA_TNUMBER && lua_tonumberx(a.L, i, nil).isNaN {
            throw .argument(i, "deadline is NaN")
        }
        guard let d = from(a, i) else { throw a.typeError(i, "number, dispatch.time or dispatch.walltime") }
        return d
    }

    static func now() -> Int64 { Int64(DispatchTime.now().uptimeNanoseconds) }

    static func nanos(_ seconds: Double) -> Int64 {
        if seconds >= Double(maxNanos) / 1e9 { return maxNanos }
        if seconds <= -Double(maxNanos) / 1e9 { return -maxNanos }
        return Int64(seconds * 1e9)
    }

    static func clamp(_ v: Int64) -> Int64 { min(max(v, 1), maxNanos) }
}

/// `dispatch.now()`, `dispatch.walltime(...)` and their arithmetic.
enum TimeBinding {
    static func install(_ m: inout ModuleSpec) {
        m.function("now") { a throws(LuaError) in
            a.runtime.objects.pushValue(a.L, Deadline.now(), .time)
            return 1
        }
        m.function("walltime") { a throws(LuaError) in
            a.runtime.objects.pushValue(a.L, try wallNanos(a, 1), .walltime)
            return 1
        }
        m.types.append(type(.time))
        m.types.append(type(.walltime))
    }

    /// Nanoseconds since the Unix epoch for a walltime spec.
    static func wallNanos(_ a: Args, _ i: Int32) throws(LuaError) -> Int64 {
        switch a.type(i) {
        case LUA_TNONE, LUA_TNIL:
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        case LUA_TNUMBER:
            let s = lua_tonumberx(a.L, i, nil)
            guard s.isFinite else { throw .argument(i, "time must be finite") }
            return Deadline.nanos(s)
        case LUA_TSTRING:
            let text = Lua.string(a.L, i)!
            guard let fields = parseDate(text) else {
                throw .argument(i, "expected \"YYYY-MM-DD HH:MM:SS\", got \"\(text)\"")
            }
            return try utc(a, i, fields)
        case LUA_TTABLE:
            var fields = (year: 0, month: 0, day: 0, hour: 0, min: 0, sec: 0.0)
            var seen = Set<String>()
            try Options.parse(a, i) { o throws(LuaError) in
                seen.insert(o.key)
                switch o.key {
                case "year": fields.year = try o.integer()
                case "month": fields.month = try o.integer()
                case "day": fields.day = try o.integer()
                case "hour": fields.hour = try o.integer()
                case "min": fields.min = try o.integer()
                case "sec": fields.sec = try o.number()
                default: return false
                }
                return true
            }
            for key in ["year", "month", "day"] where !seen.contains(key) {
                throw .argument(i, "field '\(key)' missing in date table")
            }
            return try utc(a, i, fields)
        default:
            throw a.typeError(i, "nil, number, string or table")
        }
    }

    private static func parseDate(_ s: String) -> (year: Int, month: Int, day: Int, hour: Int, min: Int, sec: Double)? {
        let parts = s.split(whereSeparator: { $0 == " " || $0 == "T" })
        guard parts.count == 2 else { return nil }
        let date = parts[0].split(separator: "-").compactMap { Int($0) }
        let time = parts[1].split(separator: ":")
        guard date.count == 3, time.count == 3, let h = Int(time[0]), let m = Int(time[1]), let sec = Double(time[2])
        else { return nil }
        return (date[0], date[1], date[2], h, m, sec)
    }

    private static func utc(_ a: Args, _ i: Int32, _ f: (year: Int, month: Int, day: Int, hour: Int, min: Int, sec: Double)) throws(LuaError) -> Int64 {
        guard (1...12).contains(f.month), (1...31).contains(f.day), (0...23).contains(f.hour),
              (0...59).contains(f.min), f.sec >= 0, f.sec < 61, (1...9999).contains(f.year)
        else { throw .argument(i, "date out of range") }
        var t = tm()
        t.tm_year = Int32(f.year - 1900)
        t.tm_mon = Int32(f.month - 1)
        t.tm_mday = Int32(f.day)
        t.tm_hour = Int32(f.hour)
        t.tm_min = Int32(f.min)
        t.tm_sec = 0
        // Nanoseconds since 1970 in 64 bits reach from 1677 to 2262.
        guard let ns = Checked.multiplyAdd(Int64(timegm(&t)), 1_000_000_000, Int64(f.sec * 1e9)) else {
            throw .argument(i, "date out of range")
        }
        return ns
    }

    static func format(_ kind: ObjectKind, _ v: Int64) -> String {
        if kind == .time { return "dispatch.time(\(Double(v) / 1e9))" }
        // Floor division, without the overflow of `v - 999_999_999` near Int64.min.
        var seconds = time_t(v / 1_000_000_000)
        var nanos = v % 1_000_000_000
        if nanos < 0 {
            seconds -= 1
            nanos += 1_000_000_000
        }
        var t = tm()
        gmtime_r(&seconds, &t)
        func pad(_ n: Int32, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        var text = "\(pad(t.tm_year + 1900, 4))-\(pad(t.tm_mon + 1, 2))-\(pad(t.tm_mday, 2)) "
            + "\(pad(t.tm_hour, 2)):\(pad(t.tm_min, 2)):\(pad(t.tm_sec, 2))"
        if nanos != 0 { text += "." + pad(Int32(nanos / 1000), 6) }
        return text
    }

    private static func type(_ kind: ObjectKind) -> ObjectType {
        var t = ObjectType(kind)
        let objects = { (a: Args) in a.runtime.objects }
        t.meta("__add") { a throws(LuaError) in
            // time + seconds, or seconds + time
            let (ti, si): (Int32, Int32) = objects(a).isKind(a.L, 1, kind) ? (1, 2) : (2, 1)
            // Called directly (`debug.getmetatable(t).__add(1, 2)`), neither may be a time.
            guard let v = objects(a).value(a.L, ti, kind) else { throw a.typeError(ti, kind.typeName) }
            let s = try a.number(si)
            guard !s.isNaN else { throw .argument(si, "number is NaN") }
            objects(a).pushValue(a.L, bounded(v.addingSaturating(Deadline.nanos(s))), kind)
            return 1
        }
        t.meta("__sub") { a throws(LuaError) in
            guard let v = objects(a).value(a.L, 1, kind) else { throw a.typeError(1, kind.typeName) }
            if let w = objects(a).value(a.L, 2, kind) {
                lua_pushnumber(a.L, Double(v.subtractingSaturating(w)) / 1e9)
                return 1
            }
            let s = try a.number(2)
            guard !s.isNaN else { throw .argument(2, "number is NaN") }
            objects(a).pushValue(a.L, bounded(v.subtractingSaturating(Deadline.nanos(s))), kind)
            return 1
        }
        // A monotonic time stays within what DispatchTime can hold, as in Swift's overlay:
        // `now - math.huge` is uptime 1 ns (DispatchTime(uptimeNanoseconds: 1)) and
        // `now + math.huge` the same farthest time whatever `now` (the overlay's distantFuture,
        // kept ~146 years away because libdispatch aborts on "forever" in asyncAfter).
        func bounded(_ v: Int64) -> Int64 { kind == .time ? Deadline.clamp(v) : v }
        let compare = { (a: Args, op: (Int64, Int64) -> Bool) throws(LuaError) -> Int32 in
            guard let x = objects(a).value(a.L, 1, kind) else { throw a.typeError(1, kind.typeName) }
            guard let y = objects(a).value(a.L, 2, kind) else { throw a.typeError(2, kind.typeName) }
            lua_pushboolean(a.L, op(x, y) ? 1 : 0)
            return 1
        }
        t.meta("__eq") { a throws(LuaError) in
            // Lua asks only when both operands are userdata; another type is simply unequal
            // (`dispatch.now() == queue` is false, as for data and queues).
            guard let x = objects(a).value(a.L, 1, kind), let y = objects(a).value(a.L, 2, kind) else {
                lua_pushboolean(a.L, 0)
                return 1
            }
            lua_pushboolean(a.L, x == y ? 1 : 0)
            return 1
        }
        t.meta("__lt") { a throws(LuaError) in try compare(a, <) }
        t.meta("__le") { a throws(LuaError) in try compare(a, <=) }
        t.meta("__tostring") { a throws(LuaError) in
            Lua.push(a.L, format(kind, objects(a).value(a.L, 1, kind) ?? 0))
            return 1
        }
        t.fields { a throws(LuaError) in
            // t.seconds: the value in seconds (uptime, or Unix time for walltime)
            guard let v = objects(a).value(a.L, 1, kind), Lua.string(a.L, 2) == "seconds" else { return 0 }
            lua_pushnumber(a.L, Double(v) / 1e9)
            return 1
        }
        return t
    }
}

extension Int64 {
    func addingSaturating(_ o: Int64) -> Int64 {
        let (r, overflow) = addingReportingOverflow(o)
        return overflow ? (o > 0 ? .max : .min) : r
    }

    func subtractingSaturating(_ o: Int64) -> Int64 {
        let (r, overflow) = subtractingReportingOverflow(o)
        return overflow ? (o < 0 ? .max : .min) : r
    }
}
