import CLua
import CLuaShim

/// A Swift type that crosses into and out of Lua: the parameter and result types of typed host
/// functions and methods, of `LuaFunction.call`, `LuaTable.get` and `set`.
///
/// The library's conformances: `Int`, `Int32`, `Int64`, `Double`, `Float`, `Bool`, `String`,
/// `Optional` (nil or missing for `nil`), `Array` (a sequence), `Dictionary` with `String` keys,
/// `LuaValue` (anything, copied), `LuaFunction`, `LuaTable` (by reference), and every
/// `LuaUserData` class (the object itself). A `Codable` type conforms by declaring `LuaCodable`.
/// Conversions are strict, as typed parameters are: a string is not a number, a number is not a
/// string; a float with an exact integer value is an integer, as in Lua.
public protocol LuaConvertible: SendableMetatype {
    /// The value at `slot`, or why it is not one (`LuaConversionError.mismatch`).
    static func read(from slot: LuaSlot) throws(LuaConversionError) -> Self
    /// Pushes exactly one value.
    func push(to stack: LuaStack) throws(LuaConversionError)
}

/// A value on a Lua stack, as a conversion sees it. Valid only during the conversion (the
/// interpreter is held meanwhile).
public struct LuaSlot {
    let L: OpaquePointer
    let index: Int32
    /// Whether the slot is a host function's argument, followed by the rest of its arguments up
    /// to the top of the stack (what a trailing `LuaVariadic` parameter takes).
    let rest: Bool

    init(_ L: OpaquePointer, _ index: Int32, rest: Bool = false) {
        self.L = L
        self.index = index
        self.rest = rest
    }

    /// The type's name as Lua's messages print it: `nil`, `number`, `table`, a userdata's
    /// `__name` (`dispatch.queue`, or a `LuaUserData` type's name).
    public var typeName: String { Self.typeName(L, index) }
    /// Whether the value is nil (or absent: a missing argument).
    public var isNil: Bool { lua_type(L, index) <= 0 }
    /// The value, copied (see `LuaValue`).
    public func value() throws(LuaConversionError) -> LuaValue { try LuaValue.read(L, index) }
    /// `expected` expected, got (this value's type).
    public func mismatch(_ expected: String) -> LuaConversionError {
        .mismatch(expected: expected, got: typeName)
    }

    /// The type name Lua's `luaL_typeerror` prints: a metatable's `__name`, else the type.
    static func typeName(_ L: OpaquePointer, _ i: Int32) -> String {
        let t = lua_type(L, i)
        if t == LUA_TNONE { return "no value" }
        if t == LUA_TTABLE || t == LUA_TUSERDATA, lua_getmetatable(L, i) != 0 {
            defer { ld_pop(L, 1) }
            lua_pushstring(L, "__name")
            if lua_rawget(L, -2) == LUA_TSTRING, let name = Lua.string(L, -1) {
                ld_pop(L, 1)
                return name
            }
            ld_pop(L, 1)
        }
        return String(cString: lua_typename(L, t))
    }
}

/// Where a conversion pushes its value. Valid only during the conversion.
public struct LuaStack {
    let L: OpaquePointer
    /// Whether the values pushed are a function's results or arguments, where a `LuaVariadic`
    /// pushes each of its values (elsewhere it is one table).
    let spreads: Bool

    init(_ L: OpaquePointer, spreads: Bool = false) {
        self.L = L
        self.spreads = spreads
    }

    /// Pushes a copy of `value` (a function or object by reference).
    public func push(_ value: LuaValue) throws(LuaConversionError) { try value.push(L) }
    /// Pushes `value` by its own conversion.
    public func push<T: LuaConvertible>(_ value: T) throws(LuaConversionError) { try value.push(to: self) }
}

// MARK: numbers, booleans, strings

extension Int: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Int {
        var ok: Int32 = 0
        let v = lua_tointegerx(slot.L, slot.index, &ok)
        if ok != 0 && lua_type(slot.L, slot.index) == LUA_TNUMBER { return Int(v) }
        if lua_type(slot.L, slot.index) == LUA_TNUMBER { throw LuaConversionError("number has no integer representation") }
        // Lua's own word for an integer parameter of the wrong type (luaL_checkinteger).
        throw slot.mismatch("number")
    }
    public func push(to stack: LuaStack) throws(LuaConversionError) { lua_pushinteger(stack.L, lua_Integer(self)) }
}

extension Int64: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Int64 { Int64(try Int.read(from: slot)) }
    public func push(to stack: LuaStack) throws(LuaConversionError) { lua_pushinteger(stack.L, lua_Integer(self)) }
}

extension Int32: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Int32 {
        let v = try Int.read(from: slot)
        guard let n = Int32(exactly: v) else { throw LuaConversionError("integer \(v) out of range for Int32") }
        return n
    }
    public func push(to stack: LuaStack) throws(LuaConversionError) { lua_pushinteger(stack.L, lua_Integer(self)) }
}

extension Double: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Double {
        guard lua_type(slot.L, slot.index) == LUA_TNUMBER else { throw slot.mismatch("number") }
        return lua_tonumberx(slot.L, slot.index, nil)
    }
    public func push(to stack: LuaStack) throws(LuaConversionError) { lua_pushnumber(stack.L, self) }
}

extension Float: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Float { Float(try Double.read(from: slot)) }
    public func push(to stack: LuaStack) throws(LuaConversionError) { lua_pushnumber(stack.L, Double(self)) }
}

extension Bool: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Bool {
        guard lua_type(slot.L, slot.index) == LUA_TBOOLEAN else { throw slot.mismatch("boolean") }
        return lua_toboolean(slot.L, slot.index) != 0
    }
    public func push(to stack: LuaStack) throws(LuaConversionError) { lua_pushboolean(stack.L, self ? 1 : 0) }
}

extension String: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> String {
        guard lua_type(slot.L, slot.index) == LUA_TSTRING else { throw slot.mismatch("string") }
        return Lua.string(slot.L, slot.index)!
    }
    public func push(to stack: LuaStack) throws(LuaConversionError) { Lua.push(stack.L, self) }
}

// MARK: containers

extension Optional: LuaConvertible where Wrapped: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Wrapped? {
        slot.isNil ? nil : try Wrapped.read(from: slot)
    }
    public func push(to stack: LuaStack) throws(LuaConversionError) {
        if let self { try self.push(to: stack) } else { lua_pushnil(stack.L) }
    }
}

extension Array: LuaConvertible where Element: LuaConvertible {
    /// A sequence: the values at 1...#t (raw, no metamethods).
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> [Element] {
        let L = slot.L
        guard lua_type(L, slot.index) == LUA_TTABLE else { throw slot.mismatch("table") }
        guard lua_checkstack(L, 2) != 0 else { throw LuaConversionError("stack overflow") }
        let t = lua_absindex(L, slot.index)
        let n = Int(lua_rawlen(L, t))
        var result: [Element] = []
        result.reserveCapacity(n)
        for k in 0..<n {
            lua_rawgeti(L, t, lua_Integer(k + 1))
            defer { ld_pop(L, 1) }
            do { result.append(try Element.read(from: LuaSlot(L, lua_gettop(L)))) } catch { throw error.at(index: k + 1) }
        }
        return result
    }

    public func push(to stack: LuaStack) throws(LuaConversionError) {
        let L = stack.L
        lua_checkstack(L, 3)
        lua_createtable(L, Int32(count), 0)
        for (k, v) in enumerated() {
            do { try v.push(to: stack) } catch {
                ld_pop(L, 1)
                throw error.at(index: k + 1)
            }
            lua_rawseti(L, -2, lua_Integer(k + 1))
        }
    }
}

extension Dictionary: LuaConvertible where Key == String, Value: LuaConvertible {
    /// A table whose keys are all strings (raw, no metamethods).
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> [String: Value] {
        let L = slot.L
        guard lua_type(L, slot.index) == LUA_TTABLE else { throw slot.mismatch("table") }
        guard lua_checkstack(L, 3) != 0 else { throw LuaConversionError("stack overflow") }
        let t = lua_absindex(L, slot.index)
        var result: [String: Value] = [:]
        lua_pushnil(L)
        while lua_next(L, t) != 0 {
            guard lua_type(L, -2) == LUA_TSTRING else {
                let got = String(cString: ld_typename(L, -2))
                ld_pop(L, 2)
                throw LuaConversionError("string key expected, got \(got) key")
            }
            let key = Lua.string(L, -2)!
            do { result[key] = try Value.read(from: LuaSlot(L, lua_gettop(L))) } catch {
                ld_pop(L, 2)
                throw error.at(key: key)
            }
            ld_pop(L, 1)
        }
        return result
    }

    public func push(to stack: LuaStack) throws(LuaConversionError) {
        let L = stack.L
        lua_checkstack(L, 3)
        lua_createtable(L, 0, Int32(count))
        for (k, v) in self {
            do { try v.push(to: stack) } catch {
                ld_pop(L, 1)
                throw error.at(key: k)
            }
            Lua.setField(L, -2, k)
        }
    }
}

extension LuaValue: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> LuaValue { try slot.value() }
    public func push(to stack: LuaStack) throws(LuaConversionError) { try push(stack.L) }
}
