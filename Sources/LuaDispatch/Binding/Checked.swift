import CLua
import CLuaShim

/// Range checks for numbers that come from Lua, before Swift arithmetic or a conversion uses
/// them: Swift traps on overflow, so an unchecked count or time from a script ended the process
/// (SIGILL). Out of range is lauxlib's `bad argument #N to 'f' (... out of range)`.
enum Checked {
    /// The number at `i` as Lua prints it (`-1e+308`, `-inf`, `-1`; a NaN as `nan` whatever its
    /// sign): converting it to a Swift `Int` to show it trapped for values beyond Int's range.
    static func shown(_ L: OpaquePointer, _ i: Int32) -> String {
        if lua_type(L, i) == LUA_TNUMBER, lua_tonumberx(L, i, nil).isNaN { return "nan" }
        lua_pushvalue(L, i)
        defer { ld_pop(L, 1) }
        return Lua.string(L, -1) ?? "?"
    }

    /// The largest count of anything a binding builds a Lua table or a buffer of up front:
    /// Lua's own tables hold at most 2^31 array items.
    static let maxCount = Int(Int32.max)

    /// `a * b + c` in Int64, or nil on overflow.
    static func multiplyAdd(_ a: Int64, _ b: Int64, _ c: Int64) -> Int64? {
        let (p, o1) = a.multipliedReportingOverflow(by: b)
        let (s, o2) = p.addingReportingOverflow(c)
        return o1 || o2 ? nil : s
    }
}
