import CLua
import CLuaShim

/// Lua values copied out of one interpreter, to be rebuilt in another.
///
/// Plain Swift data with no pointer into any `lua_State`: it is made while holding the source
/// interpreter, handed across threads, and rebuilt while holding the target, so a copy never
/// needs two interpreters at once. Tables and Lua functions are nodes, referenced by index, so
/// shared and cyclic references survive; a graph is rebuilt whole each time (fresh objects).
struct CopiedGraph: Sendable {
    enum Value: Sendable {
        case `nil`
        case boolean(Bool)
        case integer(lua_Integer)
        case number(lua_Number)
        case string([UInt8])
        /// A table every interpreter has: rebound, not copied (see `Special`).
        case special(Special)
        /// `nodes[i]`.
        case node(Int)
    }

    /// The global table, and the library tables that exist on both sides. Copying them would
    /// fail (they hold C functions) and would be wrong (code expects the real `string.format`),
    /// so they are rebound to the target interpreter's own.
    enum Special: Sendable, Equatable {
        case globals
        case library(String)

        static let libraries = ["string", "table", "math", "io", "os", "coroutine", "utf8", "debug", "package", "dispatch"]
    }

    struct Entry: Sendable {
        let key: Value
        let value: Value
    }

    enum Upvalue: Sendable {
        case value(Value)
        /// The same variable as upvalue `index` of function node `node` (`lua_upvaluejoin`).
        case shared(node: Int, index: Int32)
    }

    enum Node: Sendable {
        /// `array` holds keys 1...array.count; `hash` the rest.
        case table(array: [Value], hash: [Entry], metatable: Value?)
        /// Bytecode from `lua_dump` (with debug info, for messages) and the upvalues.
        case function(bytecode: [UInt8], upvalues: [Upvalue])
    }

    var nodes: [Node] = []
    var roots: [Value] = []
}

extension CopiedGraph {
    /// Creates every node in `L` and pushes a sequence holding them (node i at i + 1); returns
    /// its absolute index, or nil with a message on top of the stack when bytecode fails to load.
    /// Never raises (short of running out of memory).
    func build(in L: OpaquePointer) -> Int32? {
        guard lua_checkstack(L, 8) != 0 else { return nil }
        lua_createtable(L, Int32(clamping: nodes.count), 0)
        let objects = lua_gettop(L)
        // 1. Every object exists before anything refers to it (cycles).
        for (i, node) in nodes.enumerated() {
            switch node {
            case .table(let array, let hash, _):
                lua_createtable(L, Int32(clamping: array.count), Int32(clamping: hash.count))
            case .function(let bytecode, _):
                let status = bytecode.withUnsafeBufferPointer { buf in
                    buf.withMemoryRebound(to: CChar.self) {
                        luaL_loadbufferx(L, $0.baseAddress, $0.count, "=concurrent_map", "b")
                    }
                }
                guard status == LUA_OK else {
                    ld_replace(L, objects)
                    lua_settop(L, objects)
                    return nil
                }
            }
            lua_rawseti(L, objects, lua_Integer(i + 1))
        }
        // 2. Contents, metatables and upvalues.
        for (i, node) in nodes.enumerated() {
            lua_rawgeti(L, objects, lua_Integer(i + 1))
            switch node {
            case .table(let array, let hash, let metatable):
                for (k, v) in array.enumerated() {
                    push(v, in: L, objects: objects)
                    lua_rawseti(L, -2, lua_Integer(k + 1))
                }
                for e in hash {
                    push(e.key, in: L, objects: objects)
                    push(e.value, in: L, objects: objects)
                    lua_rawset(L, -3)
                }
                if let metatable {
                    push(metatable, in: L, objects: objects)
                    lua_setmetatable(L, -2)
                }
            case .function(_, let upvalues):
                for (k, u) in upvalues.enumerated() {
                    let n = Int32(k + 1)
                    switch u {
                    case .value(let v):
                        push(v, in: L, objects: objects)
                        if lua_setupvalue(L, -2, n) == nil { ld_pop(L, 1) }
                    case .shared(let node, let index):
                        lua_rawgeti(L, objects, lua_Integer(node + 1))
                        lua_upvaluejoin(L, -2, n, -1, index)
                        ld_pop(L, 1)
                    }
                }
            }
            ld_pop(L, 1)
        }
        return objects
    }

    /// Pushes `value`; node references are read from the sequence `build` made.
    func push(_ value: Value, in L: OpaquePointer, objects: Int32) {
        switch value {
        case .nil: lua_pushnil(L)
        case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
        case .integer(let i): lua_pushinteger(L, i)
        case .number(let d): lua_pushnumber(L, d)
        case .string(let bytes):
            bytes.withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
            }
        case .special(let s): s.push(L)
        case .node(let i): lua_rawgeti(L, objects, lua_Integer(i + 1))
        }
    }
}

extension CopiedGraph.Special {
    /// Pushes this interpreter's own table (nil if it has no such library).
    func push(_ L: OpaquePointer) {
        switch self {
        case .globals:
            lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        case .library(let name):
            if Lua.getField(L, ld_registryindex(), LUA_LOADED_TABLE) == LUA_TTABLE {
                _ = Lua.getField(L, -1, name)
            } else {
                lua_pushnil(L)
            }
            ld_remove(L, -2)
        }
    }
}
