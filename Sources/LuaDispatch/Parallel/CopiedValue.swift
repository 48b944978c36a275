import CLua
import CLuaShim

/// Lua values copied out of one interpreter, to be rebuilt in another.
///
/// Plain Swift data with no pointer into any `lua_State`: it is made while holding the source
/// interpreter, handed across threads, and rebuilt while holding the target, so a copy never
/// needs two interpreters at once. Tables and Lua functions are nodes, referenced by index, so
/// shared and cyclic references survive; a graph is rebuilt whole each time (fresh objects).
///
/// The layout is flat so that copying costs few allocations and no reference counting: table
/// contents and upvalues live in shared arrays, and string bytes and bytecode in one byte pool.
struct CopiedGraph: Sendable {
    enum Value: Sendable {
        case `nil`
        case boolean(Bool)
        case integer(lua_Integer)
        case number(lua_Number)
        case string(Span)
        /// A table every interpreter has: rebound, not copied (see `Special`).
        case special(Special)
        /// `nodes[i]`.
        case node(Int)
    }

    /// The global table, and the library tables that exist on both sides. Copying them would
    /// fail (they hold C functions) and would be wrong (code expects the real `string.format`),
    /// so they are rebound to the target interpreter's own. Raw values: `package.loaded` names.
    enum Special: String, Sendable, CaseIterable {
        case globals = "_G"
        case string, table, math, io, os, coroutine, utf8, debug, package, dispatch
    }

    /// Bytes in `bytes`.
    struct Span: Sendable {
        var start: UInt32
        var count: UInt32
    }

    enum Upvalue: Sendable {
        case value(Value)
        /// The same variable as upvalue `index` of function node `node` (`lua_upvaluejoin`).
        case shared(node: Int32, index: Int32)
    }

    enum Node: Sendable {
        /// `values[first...]`: `arrayCount` values for keys 1...arrayCount, then `hashCount`
        /// key-value pairs.
        case table(first: Int, arrayCount: Int32, hashCount: Int32, metatable: Value?)
        /// Bytecode from `lua_dump` (with debug info, for messages), and `upvalues[first...]`.
        case function(code: Span, first: Int, upvalueCount: Int32)
    }

    var nodes: [Node] = []
    var values: [Value] = []
    var upvalues: [Upvalue] = []
    var bytes: [UInt8] = []
    var roots: [Value] = []
}

extension CopiedGraph {
    /// Creates every node in `L`, then calls `body` with a function that pushes a value of this
    /// graph. Returns nil, with a message on top of the stack, when bytecode fails to load.
    /// Leaves the stack as it found it (but for that message). Never raises (short of running
    /// out of memory).
    func build<R>(in L: OpaquePointer, _ body: (_ push: (Value) -> Void) -> R) -> R? {
        guard lua_checkstack(L, 8) != 0 else {
            Lua.push(L, "stack overflow")
            return nil
        }
        let top = lua_gettop(L)
        lua_createtable(L, Int32(clamping: nodes.count), 0)
        let objects = lua_gettop(L)
        return bytes.withUnsafeBytes { raw -> R? in
            func chars(_ s: Span) -> UnsafePointer<CChar>? {
                raw.baseAddress.map { ($0 + Int(s.start)).assumingMemoryBound(to: CChar.self) }
            }
            func push(_ value: Value) {
                switch value {
                case .nil: lua_pushnil(L)
                case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
                case .integer(let i): lua_pushinteger(L, i)
                case .number(let d): lua_pushnumber(L, d)
                case .string(let s): lua_pushlstring(L, chars(s), Int(s.count))
                case .special(let s): s.push(L)
                case .node(let i): lua_rawgeti(L, objects, lua_Integer(i + 1))
                }
            }
            // 1. Every object exists before anything refers to it (cycles).
            for (i, node) in nodes.enumerated() {
                switch node {
                case .table(_, let arrayCount, let hashCount, _):
                    lua_createtable(L, arrayCount, hashCount)
                case .function(let code, _, _):
                    guard luaL_loadbufferx(L, chars(code), Int(code.count), "=concurrent_map", "b") == LUA_OK else {
                        ld_replace(L, top + 1)
                        lua_settop(L, top + 1)
                        return nil
                    }
                }
                lua_rawseti(L, objects, lua_Integer(i + 1))
            }
            // 2. Contents, metatables and upvalues.
            for (i, node) in nodes.enumerated() {
                lua_rawgeti(L, objects, lua_Integer(i + 1))
                switch node {
                case .table(let first, let arrayCount, let hashCount, let metatable):
                    for k in 0..<Int(arrayCount) {
                        push(values[first + k])
                        lua_rawseti(L, -2, lua_Integer(k + 1))
                    }
                    var k = first + Int(arrayCount)
                    for _ in 0..<hashCount {
                        push(values[k])
                        push(values[k + 1])
                        lua_rawset(L, -3)
                        k += 2
                    }
                    if let metatable {
                        push(metatable)
                        lua_setmetatable(L, -2)
                    }
                case .function(_, let first, let count):
                    for n in Int32(1)..<(count + 1) {
                        switch upvalues[first + Int(n) - 1] {
                        case .value(let v):
                            push(v)
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
            defer { lua_settop(L, top) }
            return body(push)
        }
    }
}

extension CopiedGraph.Special {
    /// Pushes this interpreter's own table (nil if it has no such library).
    func push(_ L: OpaquePointer) {
        if self == .globals {
            lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            return
        }
        if Lua.getField(L, ld_registryindex(), LUA_LOADED_TABLE) == LUA_TTABLE {
            _ = Lua.getField(L, -1, rawValue)
        } else {
            lua_pushnil(L)
        }
        ld_remove(L, -2)
    }
}
