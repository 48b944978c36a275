/// Encodes any `Encodable` value as a `LuaValue`: a struct or class (keyed) as a table with
/// string keys, an array (unkeyed) as a sequence, integers as integers, floating-point numbers
/// as floats, a nil optional as an absent key. A `LuaFunction`, `LuaValue` or `LuaUserData`
/// object inside the value is kept as it is. Errors name the path (`servers[2].port: ...`).
public struct LuaEncoder: Sendable {
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    public init() {}

    public func encode<T: Encodable>(_ value: T) throws(LuaConversionError) -> LuaValue {
        let box = EncodedBox()
        do { try EncodingNode(box, path: [], userInfo: userInfo).encodeValue(value) } catch let e as LuaConversionError {
            throw e
        } catch let EncodingError.invalidValue(_, context) {
            throw LuaConversionError(context.debugDescription, path: LuaCodingPath.render(context.codingPath))
        } catch {
            throw LuaConversionError("\(error)")
        }
        return box.value
    }
}

/// A value being built: containers write into their box once they are complete.
final class EncodedBox {
    var value: LuaValue = .nil
    /// For keyed and unkeyed containers: their elements so far.
    var keyed: [String: EncodedBox]?
    var unkeyed: [EncodedBox]?

    /// The value, with containers made into tables.
    func resolve() -> LuaValue {
        if let keyed { return .dictionary(keyed.compactMapValues { box in box.isAbsent ? nil : box.resolve() }) }
        if let unkeyed { return .array(unkeyed.map { $0.resolve() }) }
        return value
    }

    var isAbsent: Bool { keyed == nil && unkeyed == nil && value == .nil }
}

/// For `LuaDecoding.store`.
func storeEncoded(_ value: LuaValue, in encoder: any Encoder) -> Bool {
    guard let node = encoder as? EncodingNode else { return false }
    node.box.value = value
    return true
}

private struct EncodingNode: Encoder {
    let box: EncodedBox
    let codingPath: [any CodingKey]
    let userInfoStore: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { userInfoStore }

    init(_ box: EncodedBox, path: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.box = box
        codingPath = path
        userInfoStore = userInfo
    }

    /// Encodes `value`, keeping the values Lua holds by reference as they are.
    func encodeValue<T: Encodable>(_ value: T) throws {
        switch value {
        case let v as LuaValue: box.value = v
        case let f as LuaFunction: box.value = .function(f)
        case let o as any LuaUserData: box.value = .object(o)
        default: try value.encode(to: self)
        }
        if box.keyed != nil || box.unkeyed != nil {
            box.value = box.resolve()
            box.keyed = nil
            box.unkeyed = nil
        }
    }

    func child(_ key: any CodingKey) -> EncodingNode {
        EncodingNode(EncodedBox(), path: codingPath + [key], userInfo: userInfoStore)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if box.keyed == nil { box.keyed = [:] }
        return KeyedEncodingContainer(KeyedEncoding<Key>(node: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if box.unkeyed == nil { box.unkeyed = [] }
        return UnkeyedEncoding(node: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleEncoding(node: self) }
}

private struct KeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    var codingPath: [any CodingKey] { node.codingPath }

    private func store(_ key: Key, _ value: LuaValue) { node.box.keyed![key.stringValue] = EncodedBox(value) }

    mutating func encodeNil(forKey key: Key) throws { store(key, .nil) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { store(key, .boolean(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { store(key, .string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { store(key, .double(value)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { store(key, .double(Double(value))) }
    mutating func encode(_ value: Int, forKey key: Key) throws { store(key, .integer(value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let child = node.child(key)
        try child.encodeValue(value)
        node.box.keyed![key.stringValue] = child.box
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = node.child(key)
        node.box.keyed![key.stringValue] = child.box
        return child.container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.child(key)
        node.box.keyed![key.stringValue] = child.box
        return child.unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = node.child(key)
        node.box.keyed![key.stringValue] = child.box
        return child
    }
}

private struct UnkeyedEncoding: UnkeyedEncodingContainer {
    let node: EncodingNode
    var codingPath: [any CodingKey] { node.codingPath }
    var count: Int { node.box.unkeyed!.count }

    private func child() -> EncodingNode {
        let child = node.child(LuaCodingPath.Index(count))
        node.box.unkeyed!.append(child.box)
        return child
    }

    mutating func encodeNil() throws { node.box.unkeyed!.append(EncodedBox(.nil)) }
    mutating func encode(_ value: Bool) throws { node.box.unkeyed!.append(EncodedBox(.boolean(value))) }
    mutating func encode(_ value: String) throws { node.box.unkeyed!.append(EncodedBox(.string(value))) }
    mutating func encode(_ value: Double) throws { node.box.unkeyed!.append(EncodedBox(.double(value))) }
    mutating func encode(_ value: Int) throws { node.box.unkeyed!.append(EncodedBox(.integer(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { try child().encodeValue(value) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        child().container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { child().unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { child() }
}

private struct SingleEncoding: SingleValueEncodingContainer {
    let node: EncodingNode
    var codingPath: [any CodingKey] { node.codingPath }

    mutating func encodeNil() throws { node.box.value = .nil }
    mutating func encode(_ value: Bool) throws { node.box.value = .boolean(value) }
    mutating func encode(_ value: String) throws { node.box.value = .string(value) }
    mutating func encode(_ value: Double) throws { node.box.value = .double(value) }
    mutating func encode(_ value: Float) throws { node.box.value = .double(Double(value)) }
    mutating func encode(_ value: Int) throws { node.box.value = .integer(value) }
    mutating func encode(_ value: Int64) throws { node.box.value = .integer(Int(value)) }
    mutating func encode(_ value: UInt64) throws {
        guard let v = Int(exactly: value) else {
            throw LuaConversionError("\(value) does not fit in a Lua integer", path: LuaCodingPath.render(codingPath))
        }
        node.box.value = .integer(v)
    }
    mutating func encode(_ value: UInt) throws { try encode(UInt64(value)) }
    mutating func encode(_ value: Int8) throws { node.box.value = .integer(Int(value)) }
    mutating func encode(_ value: Int16) throws { node.box.value = .integer(Int(value)) }
    mutating func encode(_ value: Int32) throws { node.box.value = .integer(Int(value)) }
    mutating func encode(_ value: UInt8) throws { node.box.value = .integer(Int(value)) }
    mutating func encode(_ value: UInt16) throws { node.box.value = .integer(Int(value)) }
    mutating func encode(_ value: UInt32) throws { node.box.value = .integer(Int(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.encodeValue(value) }
}

extension EncodedBox {
    convenience init(_ value: LuaValue) {
        self.init()
        self.value = value
    }
}
