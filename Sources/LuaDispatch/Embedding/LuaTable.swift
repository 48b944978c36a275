import CLua
import CLuaShim

/// A live Lua table, by reference: reads see what Lua code wrote, writes are seen by Lua code at
/// once. For state shared with a script (a registry of handlers, a cache, `_G`), where a copy
/// (`LuaValue`) would be stale. Usable from any thread; each operation takes the interpreter
/// (nested, and at once, inside a host function of the same interpreter).
///
/// `get` and `set` go through the table's metamethods (`__index`, `__newindex`), in protected
/// mode: an error raised there is thrown as `LuaScriptError`. `rawGet`, `rawSet`, `count` and
/// `entries` do not. The table stays alive while any copy of this value exists.
public struct LuaTable: Sendable, Hashable, CustomStringConvertible {
    let handle: LuaHandle

    init(_ L: OpaquePointer, _ i: Int32, _ runtime: Runtime) {
        handle = LuaHandle(L, i, runtime)
    }

    /// The interpreter the table belongs to.
    public var runtime: Runtime { handle.runtime }

    public var description: String { "table: 0x" + String(handle.address, radix: 16) }

    public static func == (a: LuaTable, b: LuaTable) -> Bool { a.handle.refersToSameValue(as: b.handle) }
    public func hash(into h: inout Hasher) { h.combine(handle.address) }

    /// `t[key]`, copied (a nested table as an array or dictionary; see `LuaValue`).
    public func get(_ key: LuaValue) throws(LuaScriptError) -> LuaValue {
        try get(key, as: LuaValue.self)
    }

    /// `t[key]` converted to `T` (e.g. `LuaTable` for a nested table by reference,
    /// `LuaFunction`, a `LuaCodable` struct). A conversion error names the key.
    public func get<T: LuaConvertible>(_ key: LuaValue, as _: T.Type) throws(LuaScriptError) -> T {
        try access(key) { T, key throws(LuaScriptError) in
            if ld_pgettable(T, 2, 1) != LUA_OK { throw Self.error(T) }
            return try Self.convert(T, key)
        }
    }

    /// `t[key] = value`.
    public func set<T: LuaConvertible>(_ key: LuaValue, _ value: T) throws(LuaScriptError) {
        try access(key) { T, key throws(LuaScriptError) in
            do { try value.push(to: LuaStack(T)) } catch { throw LuaScriptError(message: "\(Self.name(key)): \(error)") }
            if ld_psettable(T, 2, 1) != LUA_OK { throw Self.error(T) }
        }
    }

    /// `rawget(t, key)`.
    public func rawGet<T: LuaConvertible>(_ key: LuaValue, as _: T.Type) throws(LuaScriptError) -> T {
        try access(key) { T, key throws(LuaScriptError) in
            lua_rawget(T, 2)
            return try Self.convert(T, key)
        }
    }

    /// `rawset(t, key, value)`; a nil or NaN key is an error, as in Lua.
    public func rawSet<T: LuaConvertible>(_ key: LuaValue, _ value: T) throws(LuaScriptError) {
        guard key != .nil, key.doubleValue.map({ !$0.isNaN }) ?? true else {
            throw LuaScriptError(message: "table index is \(key == .nil ? "nil" : "NaN")")
        }
        try access(key) { T, key throws(LuaScriptError) in
            do { try value.push(to: LuaStack(T)) } catch { throw LuaScriptError(message: "\(Self.name(key)): \(error)") }
            lua_rawset(T, 2)
        }
    }

    /// `#t` without metamethods (a border of the sequence, as `rawlen`).
    public var count: Int {
        get throws(LuaScriptError) {
            try runtime.withInterpreter { T throws(LuaScriptError) in
                try push(T)
                return Int(lua_rawlen(T, 2))
            }
        }
    }

    /// `#t`, through `__len` if the table has one.
    public func length() throws(LuaScriptError) -> Int {
        try runtime.withInterpreter { T throws(LuaScriptError) in
            try push(T)
            var n: lua_Integer = 0
            if ld_plen(T, 2, 1, &n) != LUA_OK { throw Self.error(T) }
            return Int(n)
        }
    }

    /// `t[#t + 1] = value` (raw).
    public func append<T: LuaConvertible>(_ value: T) throws(LuaScriptError) {
        try runtime.withInterpreter { T throws(LuaScriptError) in
            try push(T)
            do { try value.push(to: LuaStack(T)) } catch { throw LuaScriptError(message: "\(error)") }
            lua_rawseti(T, 2, lua_Integer(lua_rawlen(T, 2)) + 1)
        }
    }

    /// Every key and value (raw `next`, in Lua's order), copied.
    public func entries() throws(LuaScriptError) -> [(key: LuaValue, value: LuaValue)] {
        try runtime.withInterpreter { T throws(LuaScriptError) in
            try push(T)
            var result: [(key: LuaValue, value: LuaValue)] = []
            lua_pushnil(T)
            while lua_next(T, 2) != 0 {
                let key: LuaValue
                do { key = try LuaValue.read(T, -2) } catch { throw LuaScriptError(message: "key: \(error)") }
                let value: LuaValue
                do throws(LuaConversionError) { value = try LuaValue.read(T, -1) } catch {
                    throw LuaScriptError(message: key.keyPath(error).description)
                }
                result.append((key, value))
                ld_pop(T, 1)
            }
            return result
        }
    }

    // MARK: helpers

    /// Runs `body` with the table at index 2 and `key` on top of a Lua thread. Lock held there.
    private func access<R>(_ key: LuaValue, _ body: (OpaquePointer, LuaValue) throws(LuaScriptError) -> R) throws(LuaScriptError) -> R {
        try runtime.withInterpreter { T throws(LuaScriptError) in
            try push(T)
            do { try key.push(T) } catch { throw LuaScriptError(message: "key: \(error)") }
            return try body(T, key)
        }
    }

    /// Pushes the table at index 2 of `T` (whose index 1 is the message handler).
    private func push(_ T: OpaquePointer) throws(LuaScriptError) {
        lua_checkstack(T, 8)
        do { try handle.push(T) } catch { throw LuaScriptError(message: error.description) }
    }

    private static func convert<T: LuaConvertible>(_ L: OpaquePointer, _ key: LuaValue) throws(LuaScriptError) -> T {
        do { return try T.read(from: LuaSlot(L, lua_gettop(L))) } catch {
            throw LuaScriptError(message: key.keyPath(error).description)
        }
    }

    private static func error(_ T: OpaquePointer) -> LuaScriptError {
        let (message, traceback) = ErrorValue.pop(T)
        return LuaScriptError(message: message, traceback: traceback)
    }

    /// How a key reads in a path: `name`, `[2]`.
    static func name(_ key: LuaValue) -> String { key.keyPath(LuaConversionError("")).path }
}

extension LuaValue {
    /// `error`, one level down at this key.
    func keyPath(_ error: LuaConversionError) -> LuaConversionError {
        switch self {
        case .string(let s): error.at(key: s)
        case .integer(let i): error.at(index: i)
        default: LuaConversionError(error.message, path: "[\(description)]" + (error.path.isEmpty ? "" : "." + error.path))
        }
    }
}

extension LuaTable: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> LuaTable {
        guard lua_type(slot.L, slot.index) == LUA_TTABLE else { throw slot.mismatch("table") }
        return LuaTable(slot.L, slot.index, Runtime.from(slot.L))
    }

    public func push(to stack: LuaStack) throws(LuaConversionError) { try handle.push(stack.L) }
}

extension LuaFunction: LuaConvertible {
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> LuaFunction {
        guard lua_type(slot.L, slot.index) == LUA_TFUNCTION else { throw slot.mismatch("function") }
        return LuaFunction(slot.L, slot.index, Runtime.from(slot.L))
    }

    public func push(to stack: LuaStack) throws(LuaConversionError) { try handle.push(stack.L) }
}
