/// A `Codable` type used directly as a typed parameter or result (of host functions, methods,
/// `LuaFunction.call`, `LuaTable.get`): declare the conformance, there is nothing to implement.
/// It crosses as `LuaEncoder` and `LuaDecoder` convert it; a wrong argument names the path:
/// `bad argument #1 to 'configure' (servers[2].port: number expected, got string)`.
public protocol LuaCodable: LuaConvertible, Codable {}

extension LuaCodable {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Self {
        try LuaDecoder().decode(Self.self, from: slot.value())
    }

    public func push(to stack: LuaStack) throws(LuaConversionError) {
        try stack.push(LuaEncoder().encode(self))
    }
}

/// `LuaValue` in any coder: `LuaEncoder` and `LuaDecoder` take it as it is; other coders (JSON,
/// property lists) see plain data, and fail on a function or an object.
extension LuaValue: Codable {
    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer() {
            if single.decodeNil() { self = .nil; return }
            if let b = try? single.decode(Bool.self) { self = .boolean(b); return }
            if let i = try? single.decode(Int.self) { self = .integer(i); return }
            if let d = try? single.decode(Double.self) { self = .double(d); return }
            if let s = try? single.decode(String.self) { self = .string(s); return }
        }
        if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            var d: [String: LuaValue] = [:]
            for key in keyed.allKeys { d[key.stringValue] = try keyed.decode(LuaValue.self, forKey: key) }
            self = .dictionary(d)
            return
        }
        var unkeyed = try decoder.unkeyedContainer()
        var a: [LuaValue] = []
        while !unkeyed.isAtEnd { a.append(try unkeyed.decode(LuaValue.self)) }
        self = .array(a)
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .nil: var c = encoder.singleValueContainer(); try c.encodeNil()
        case .boolean(let b): var c = encoder.singleValueContainer(); try c.encode(b)
        case .integer(let i): var c = encoder.singleValueContainer(); try c.encode(i)
        case .double(let d): var c = encoder.singleValueContainer(); try c.encode(d)
        case .string(let s): var c = encoder.singleValueContainer(); try c.encode(s)
        case .array(let a):
            var c = encoder.unkeyedContainer()
            for v in a { try c.encode(v) }
        case .dictionary(let d):
            var c = encoder.container(keyedBy: AnyKey.self)
            for (k, v) in d { try c.encode(v, forKey: AnyKey(stringValue: k)) }
        case .function, .object:
            throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath,
                                                         debugDescription: "a \(luaTypeName) value cannot be encoded outside Lua"))
        }
    }

    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

/// A `LuaFunction` field of a `Codable` type: `LuaEncoder` and `LuaDecoder` keep the function;
/// other coders cannot.
extension LuaFunction: Codable {
    public init(from decoder: any Decoder) throws {
        guard case .function(let f)? = LuaDecoding.value(of: decoder) else {
            throw DecodingError.typeMismatch(LuaFunction.self, .init(codingPath: decoder.codingPath,
                                                                     debugDescription: "a Lua function is decoded only by LuaDecoder, from a function"))
        }
        self = f
    }

    public func encode(to encoder: any Encoder) throws {
        guard LuaDecoding.store(.function(self), in: encoder) else {
            throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath,
                                                         debugDescription: "a Lua function is encoded only by LuaEncoder"))
        }
    }
}
