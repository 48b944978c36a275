// `String` and `Int` keys for `LuaTable`, so that a key held in a Swift variable needs no
// `LuaValue` around it: `t.get(name, as: Int.self)`, `t.set(name, 1)`, `try t["name"]`.
extension LuaTable {
    /// `t[key]`, copied.
    public func get(_ key: String) throws(LuaScriptError) -> LuaValue { try get(.string(key), as: LuaValue.self) }
    /// `t[key]` converted to `T`.
    public func get<T: LuaConvertible>(_ key: String, as _: T.Type) throws(LuaScriptError) -> T { try get(.string(key), as: T.self) }
    /// `t[key] = value`.
    public func set<T: LuaConvertible>(_ key: String, _ value: T) throws(LuaScriptError) { try set(.string(key), value) }
    /// `rawget(t, key)`.
    public func rawGet<T: LuaConvertible>(_ key: String, as _: T.Type) throws(LuaScriptError) -> T { try rawGet(.string(key), as: T.self) }
    /// `rawset(t, key, value)`.
    public func rawSet<T: LuaConvertible>(_ key: String, _ value: T) throws(LuaScriptError) { try rawSet(.string(key), value) }

    /// `t[index]`, copied.
    public func get(_ index: Int) throws(LuaScriptError) -> LuaValue { try get(.integer(index), as: LuaValue.self) }
    /// `t[index]` converted to `T`.
    public func get<T: LuaConvertible>(_ index: Int, as _: T.Type) throws(LuaScriptError) -> T { try get(.integer(index), as: T.self) }
    /// `t[index] = value`.
    public func set<T: LuaConvertible>(_ index: Int, _ value: T) throws(LuaScriptError) { try set(.integer(index), value) }
    /// `rawget(t, index)`.
    public func rawGet<T: LuaConvertible>(_ index: Int, as _: T.Type) throws(LuaScriptError) -> T { try rawGet(.integer(index), as: T.self) }
    /// `rawset(t, index, value)`.
    public func rawSet<T: LuaConvertible>(_ index: Int, _ value: T) throws(LuaScriptError) { try rawSet(.integer(index), value) }

    /// `t[key]`, copied, through `__index` (read only: a subscript cannot throw when set; use `set`).
    public subscript(key: String) -> LuaValue { get throws(LuaScriptError) { try get(key) } }
    /// `t[index]`, copied, through `__index`.
    public subscript(index: Int) -> LuaValue { get throws(LuaScriptError) { try get(index) } }
}
