import CLua
import CLuaShim

/// A Lua value as Swift sees it. Data is copied: nil, booleans, numbers, strings, and tables as
/// arrays or dictionaries. A function is held by reference (`LuaFunction`), and a Swift object
/// exposed to Lua (`LuaUserData`) is the object itself.
public enum LuaValue: Sendable, Hashable, CustomStringConvertible {
    case `nil`
    case boolean(Bool)
    case integer(Int)
    case double(Double)
    case string(String)
    /// A sequence: Lua table keys 1...n.
    case array([LuaValue])
    /// A table with string keys.
    case dictionary([String: LuaValue])
    /// A Lua function, kept alive until the last copy of this value is dropped.
    case function(LuaFunction)
    /// A Swift object exposed to Lua: passed back and forth, it stays the same object.
    case object(any LuaUserData)

    public var description: String {
        switch self {
        case .nil: "nil"
        case .boolean(let b): "\(b)"
        case .integer(let i): "\(i)"
        case .double(let d): "\(d)"
        case .string(let s): "\"\(s)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let d): "[" + d.keys.sorted().map { "\($0): \(d[$0]!)" }.joined(separator: ", ") + "]"
        case .function(let f): f.description
        case .object(let o): "\(typeName(o)) object"
        }
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var intValue: Int? {
        switch self {
        case .integer(let i): i
        case .double(let d) where d.rounded() == d && abs(d) < 9.2e18: Int(d)
        default: nil
        }
    }
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
    public var boolValue: Bool? { if case .boolean(let b) = self { b } else { nil } }
    public var functionValue: LuaFunction? { if case .function(let f) = self { f } else { nil } }
    /// The object, if the value is a Swift object of type `T`.
    public func object<T: LuaUserData>(as _: T.Type = T.self) -> T? {
        if case .object(let o) = self { o as? T } else { nil }
    }

    public static func == (a: LuaValue, b: LuaValue) -> Bool {
        switch (a, b) {
        case (.nil, .nil): true
        case (.boolean(let x), .boolean(let y)): x == y
        case (.integer(let x), .integer(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.dictionary(let x), .dictionary(let y)): x == y
        case (.function(let x), .function(let y)): x == y
        case (.object(let x), .object(let y)): x === y
        default: false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case .nil: h.combine(0)
        case .boolean(let b): h.combine(1); h.combine(b)
        case .integer(let i): h.combine(2); h.combine(i)
        case .double(let d): h.combine(3); h.combine(d)
        case .string(let s): h.combine(4); h.combine(s)
        case .array(let a): h.combine(5); h.combine(a)
        case .dictionary(let d): h.combine(6); h.combine(d)
        case .function(let f): h.combine(7); h.combine(f)
        case .object(let o): h.combine(8); h.combine(ObjectIdentifier(o))
        }
    }
}

/// The Lua name of an object's type.
private func typeName<T: LuaUserData>(_ o: T) -> String { T.luaType.name }

extension LuaValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(nilLiteral: ()) { self = .nil }
    public init(arrayLiteral elements: LuaValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, LuaValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
}

extension LuaValue {
    /// Reads the value at `index` (no metamethods; tables must be sequences or string-keyed).
    /// Lock held. Errors name where in the value they are (`servers[2].port: ...`).
    static func read(_ L: OpaquePointer, _ index: Int32, depth: Int = 0) throws(LuaConversionError) -> LuaValue {
        let i = lua_absindex(L, index)
        switch lua_type(L, i) {
        case LUA_TNONE, LUA_TNIL: return .nil
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, i) != 0)
        case LUA_TNUMBER:
            if lua_isinteger(L, i) != 0 { return .integer(Int(lua_tointegerx(L, i, nil))) }
            return .double(lua_tonumberx(L, i, nil))
        case LUA_TSTRING: return .string(Lua.string(L, i)!)
        case LUA_TTABLE: return try readTable(L, i, depth: depth)
        case LUA_TFUNCTION: return .function(LuaFunction(L, i, Runtime.from(L)))
        case LUA_TUSERDATA:
            if let object = HostObjects.object(L, i) { return .object(object) }
            fallthrough
        default:
            throw LuaConversionError("a \(LuaSlot.typeName(L, i)) value cannot be converted to a Swift value")
        }
    }

    private static func readTable(_ L: OpaquePointer, _ i: Int32, depth: Int) throws(LuaConversionError) -> LuaValue {
        guard depth < 100 else { throw LuaConversionError("table nested too deeply (or cyclic)") }
        guard lua_checkstack(L, 3) != 0 else { throw LuaConversionError("stack overflow") }
        var dict: [String: LuaValue] = [:]
        var intKeys: [Int: LuaValue] = [:]
        lua_pushnil(L)
        while lua_next(L, i) != 0 {
            let keyType = lua_type(L, -2)
            let value: LuaValue
            do { value = try read(L, -1, depth: depth + 1) } catch {
                let e = keyType == LUA_TSTRING ? error.at(key: Lua.string(L, -2)!)
                    : keyType == LUA_TNUMBER && lua_isinteger(L, -2) != 0 ? error.at(index: Int(lua_tointegerx(L, -2, nil)))
                    : error
                ld_pop(L, 2)
                throw e
            }
            if keyType == LUA_TSTRING {
                dict[Lua.string(L, -2)!] = value
            } else if keyType == LUA_TNUMBER, lua_isinteger(L, -2) != 0 {
                intKeys[Int(lua_tointegerx(L, -2, nil))] = value
            } else {
                let t = String(cString: ld_typename(L, -2))
                ld_pop(L, 2)
                throw LuaConversionError("table key of type \(t) cannot be converted")
            }
            ld_pop(L, 1)
        }
        if intKeys.isEmpty { return .dictionary(dict) }
        guard dict.isEmpty else { throw LuaConversionError("table mixes array and string keys") }
        var array: [LuaValue] = []
        array.reserveCapacity(intKeys.count)
        for k in 1...intKeys.count {
            guard let v = intKeys[k] else { throw LuaConversionError("array table has holes") }
            array.append(v)
        }
        return .array(array)
    }

    /// Pushes the value onto `L`, a thread of `rt`. Lock held. Fails only for a function of
    /// another interpreter.
    func push(_ L: OpaquePointer) throws(LuaConversionError) {
        lua_checkstack(L, 3)
        switch self {
        case .nil: lua_pushnil(L)
        case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
        case .integer(let i): lua_pushinteger(L, lua_Integer(i))
        case .double(let d): lua_pushnumber(L, d)
        case .string(let s): Lua.push(L, s)
        case .array(let a):
            lua_createtable(L, Int32(a.count), 0)
            for (k, v) in a.enumerated() {
                do { try v.push(L) } catch {
                    ld_pop(L, 1)
                    throw error.at(index: k + 1)
                }
                lua_rawseti(L, -2, lua_Integer(k + 1))
            }
        case .dictionary(let d):
            lua_createtable(L, 0, Int32(d.count))
            for (k, v) in d {
                do { try v.push(L) } catch {
                    ld_pop(L, 1)
                    throw error.at(key: k)
                }
                Lua.setField(L, -2, k)
            }
        case .function(let f): try f.handle.push(L)
        case .object(let o): HostObjects.push(L, o)
        }
    }
}
