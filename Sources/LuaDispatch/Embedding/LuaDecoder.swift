/// Decodes any `Decodable` value from a `LuaValue` (a script's result, a host function's
/// argument, a table's field), as Lua sees it: an absent key is nil, a float with an exact
/// integer value is an integer, an empty table is an empty array or dictionary. A `LuaFunction`,
/// `LuaValue` or `LuaUserData` field takes the value as it is. Errors are Lua's wording with the
/// path: `servers[2].port: number expected, got string`.
public struct LuaDecoder: Sendable {
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    public init() {}

    public func decode<T: Decodable>(_ type: T.Type = T.self, from value: LuaValue) throws(LuaConversionError) -> T {
        do { return try DecodingNode(value, path: [], userInfo: userInfo).decodeValue(T.self) } catch let e as LuaConversionError {
            throw e
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let c), .keyNotFound(_, let c), .typeMismatch(_, let c), .valueNotFound(_, let c):
                throw LuaConversionError(c.debugDescription, path: LuaCodingPath.render(c.codingPath))
            @unknown default:
                throw LuaConversionError("\(error)")
            }
        } catch {
            throw LuaConversionError("\(error)")
        }
    }
}

/// Paths of coding keys written as in Lua.
enum LuaCodingPath {
    /// An element's place in an unkeyed container (0-based; written `[i + 1]`).
    struct Index: CodingKey {
        let intValue: Int?
        var stringValue: String { "\(intValue!)" }
        init(_ i: Int) { intValue = i }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    static func render(_ path: [any CodingKey]) -> String {
        var error = LuaConversionError("")
        for key in path.reversed() {
            if let index = key as? Index {
                error = error.at(index: index.intValue! + 1)
            } else if let n = key.intValue, key.stringValue == String(n) {
                error = error.at(index: n)
            } else {
                error = error.at(key: key.stringValue)
            }
        }
        return error.path
    }
}

extension LuaValue {
    /// The type name Lua would print for this value.
    var luaTypeName: String {
        switch self {
        case .nil: "nil"
        case .boolean: "boolean"
        case .integer, .double: "number"
        case .string: "string"
        case .array, .dictionary: "table"
        case .function: "function"
        case .object(let o): objectTypeName(o)
        }
    }
}

private func objectTypeName<T: LuaUserData>(_ o: T) -> String { T.luaType.name }

/// What the Lua coders share with `Codable` conformances of the library's own types.
enum LuaDecoding {
    /// The value a `LuaDecoder`'s decoder decodes, or nil for another decoder.
    static func value(of decoder: any Decoder) -> LuaValue? { (decoder as? DecodingNode)?.value }
    /// Stores `value` as what a `LuaEncoder`'s encoder encodes; false for another encoder.
    static func store(_ value: LuaValue, in encoder: any Encoder) -> Bool { storeEncoded(value, in: encoder) }
}

private struct DecodingNode: Decoder {
    let value: LuaValue
    let codingPath: [any CodingKey]
    let userInfoStore: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { userInfoStore }

    init(_ value: LuaValue, path: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.value = value
        codingPath = path
        userInfoStore = userInfo
    }

    func mismatch(_ expected: String) -> LuaConversionError {
        LuaConversionError("\(expected) expected, got \(value.luaTypeName)", path: LuaCodingPath.render(codingPath))
    }

    func child(_ value: LuaValue, _ key: any CodingKey) -> DecodingNode {
        DecodingNode(value, path: codingPath + [key], userInfo: userInfoStore)
    }

    /// Decodes `T`, taking the values Lua holds by reference as they are.
    func decodeValue<T: Decodable>(_: T.Type) throws -> T {
        if T.self == LuaValue.self { return value as! T }
        if T.self == LuaFunction.self {
            guard case .function(let f) = value else { throw mismatch("function") }
            return f as! T
        }
        if let object = T.self as? any LuaUserData.Type {
            return try decodeObject(object) as! T
        }
        return try T(from: self)
    }

    private func decodeObject<O: LuaUserData>(_: O.Type) throws -> O {
        guard case .object(let o) = value, let object = o as? O else { throw mismatch(O.luaType.name) }
        return object
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        switch value {
        case .dictionary(let d): return KeyedDecodingContainer(KeyedDecoding<Key>(node: self, values: d))
        case .array(let a) where a.isEmpty: return KeyedDecodingContainer(KeyedDecoding<Key>(node: self, values: [:]))
        default: throw mismatch("table")
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch value {
        case .array(let a): return UnkeyedDecoding(node: self, values: a)
        case .dictionary(let d) where d.isEmpty: return UnkeyedDecoding(node: self, values: [])
        default: throw mismatch("table")
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleDecoding(node: self) }

    // MARK: scalars

    func bool() throws -> Bool {
        guard case .boolean(let b) = value else { throw mismatch("boolean") }
        return b
    }

    func string() throws -> String {
        guard case .string(let s) = value else { throw mismatch("string") }
        return s
    }

    func double() throws -> Double {
        guard let d = value.doubleValue else { throw mismatch("number") }
        return d
    }

    func integer<I: FixedWidthInteger>(_: I.Type) throws -> I {
        let n: Int
        switch value {
        case .integer(let i): n = i
        case .double(let d):
            guard let i = Int(exactly: d) else {
                throw LuaConversionError("number has no integer representation", path: LuaCodingPath.render(codingPath))
            }
            n = i
        default: throw mismatch("number")
        }
        guard let v = I(exactly: n) else {
            throw LuaConversionError("integer \(n) out of range for \(I.self)", path: LuaCodingPath.render(codingPath))
        }
        return v
    }
}

private struct KeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let node: DecodingNode
    let values: [String: LuaValue]
    var codingPath: [any CodingKey] { node.codingPath }
    var allKeys: [Key] { values.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { values[key.stringValue] != nil }
    func decodeNil(forKey key: Key) throws -> Bool { (values[key.stringValue] ?? .nil) == .nil }

    /// A missing key is nil, as in Lua: decoding it gives `T`'s own error (`number expected, got nil`).
    private func child(_ key: Key) -> DecodingNode { node.child(values[key.stringValue] ?? .nil, key) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).bool() }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).string() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).double() }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try child(key).double()) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).integer(Int.self) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).integer(Int8.self) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).integer(Int16.self) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).integer(Int32.self) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).integer(Int64.self) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).integer(UInt.self) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).integer(UInt8.self) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).integer(UInt16.self) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).integer(UInt32.self) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decodeValue(T.self) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
    func superDecoder() throws -> any Decoder { node }
    func superDecoder(forKey key: Key) throws -> any Decoder { child(key) }
}

private struct UnkeyedDecoding: UnkeyedDecodingContainer {
    let node: DecodingNode
    let values: [LuaValue]
    var codingPath: [any CodingKey] { node.codingPath }
    var count: Int? { values.count }
    var isAtEnd: Bool { currentIndex >= values.count }
    var currentIndex = 0

    init(node: DecodingNode, values: [LuaValue]) {
        self.node = node
        self.values = values
    }

    private mutating func next() throws -> DecodingNode {
        let key = LuaCodingPath.Index(currentIndex)
        guard !isAtEnd else {
            throw LuaConversionError("value expected, got no value", path: LuaCodingPath.render(codingPath + [key]))
        }
        defer { currentIndex += 1 }
        return node.child(values[currentIndex], key)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, values[currentIndex] == .nil else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next().bool() }
    mutating func decode(_ type: String.Type) throws -> String { try next().string() }
    mutating func decode(_ type: Double.Type) throws -> Double { try next().double() }
    mutating func decode(_ type: Float.Type) throws -> Float { Float(try next().double()) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next().integer(Int.self) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().integer(Int8.self) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().integer(Int16.self) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().integer(Int32.self) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().integer(Int64.self) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next().integer(UInt.self) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().integer(UInt8.self) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().integer(UInt16.self) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().integer(UInt32.self) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().integer(UInt64.self) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(T.self) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct SingleDecoding: SingleValueDecodingContainer {
    let node: DecodingNode
    var codingPath: [any CodingKey] { node.codingPath }

    func decodeNil() -> Bool { node.value == .nil }
    func decode(_ type: Bool.Type) throws -> Bool { try node.bool() }
    func decode(_ type: String.Type) throws -> String { try node.string() }
    func decode(_ type: Double.Type) throws -> Double { try node.double() }
    func decode(_ type: Float.Type) throws -> Float { Float(try node.double()) }
    func decode(_ type: Int.Type) throws -> Int { try node.integer(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try node.integer(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try node.integer(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try node.integer(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try node.integer(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try node.integer(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try node.integer(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try node.integer(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try node.integer(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try node.integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try node.decodeValue(T.self) }
}
