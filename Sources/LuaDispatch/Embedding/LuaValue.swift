import CLua
import CLuaShim

/// A Lua value as Swift sees it, for host functions and calls into Lua.
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

    public var description: String {
        switch self {
        case .nil: "nil"
        case .boolean(let b): "\(b)"
        case .integer(let i): "\(i)"
        case .double(let d): "\(d)"
        case .string(let s): "\"\(s)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let d): "[" + d.keys.sorted().map { "\($0): \(d[$0]!)" }.joined(separator: ", ") + "]"
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
}

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

/// Why a value could not cross between Lua and Swift.
public struct LuaConversionError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

extension LuaValue {
    /// Reads the value at `index` (no metamethods; tables must be sequences or string-keyed).
    static func read(_ L: OpaquePointer, _ index: Int32, depth: Int = 0) throws(LuaConversionError) -> LuaValue {
        let i = lua_absindex(L, index)
        switch lua_type(L, i) {
        case LUA_TNONE, LUA_TNIL: return .nil
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, i) != 0)
        case LUA_TNUMBER:
            if lua_isinteger(L, i) != 0 { return .integer(Int(lua_tointegerx(L, i, nil))) }
            return .double(lua_tonumberx(L, i, nil))
        case LUA_TSTRING: return .string(Lua.string(L, i)!)
        case LUA_TTABLE:
            guard depth < 100 else { throw LuaConversionError(description: "table nested too deeply (or cyclic)") }
            guard lua_checkstack(L, 3) != 0 else { throw LuaConversionError(description: "stack overflow") }
            var array: [LuaValue] = []
            var dict: [String: LuaValue] = [:]
            var intKeys: [Int: LuaValue] = [:]
            lua_pushnil(L)
            while lua_next(L, i) != 0 {
                let value: LuaValue
                do { value = try read(L, -1, depth: depth + 1) } catch { ld_pop(L, 2); throw error }
                if lua_type(L, -2) == LUA_TSTRING {
                    dict[Lua.string(L, -2)!] = value
                } else if lua_type(L, -2) == LUA_TNUMBER, lua_isinteger(L, -2) != 0 {
                    intKeys[Int(lua_tointegerx(L, -2, nil))] = value
                } else {
                    let t = String(cString: ld_typename(L, -2))
                    ld_pop(L, 2)
                    throw LuaConversionError(description: "table key of type \(t) cannot be converted")
                }
                ld_pop(L, 1)
            }
            if !intKeys.isEmpty {
                guard dict.isEmpty else { throw LuaConversionError(description: "table mixes array and string keys") }
                for k in 1...intKeys.count {
                    guard let v = intKeys[k] else { throw LuaConversionError(description: "array table has holes") }
                    array.append(v)
                }
                return .array(array)
            }
            return .dictionary(dict)
        default:
            let t = String(cString: ld_typename(L, i))
            throw LuaConversionError(description: "a \(t) value cannot be converted to a Swift value")
        }
    }

    /// Pushes the value.
    func push(_ L: OpaquePointer) {
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
                v.push(L)
                lua_rawseti(L, -2, lua_Integer(k + 1))
            }
        case .dictionary(let d):
            lua_createtable(L, 0, Int32(d.count))
            for (k, v) in d {
                v.push(L)
                Lua.setField(L, -2, k)
            }
        }
    }
}
