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
/// Objects that are shared rather than copied (channels) are kept apart, in `shared`. A graph is
/// a reference, filled by one `ValueCopier` and never changed afterwards: handing it from thread
/// to thread costs one retain, not one per array.
final class CopiedGraph: @unchecked Sendable {
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
        /// `shared[i]`: the same object on both sides.
        case shared(Int)
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
        /// `id`: the number the source interpreter gave this function's dump in its bytecode
        /// cache (0: none), under which a target may keep the function it loaded (see `build`).
        case function(code: Span, first: Int, upvalueCount: Int32, id: Int)
    }

    @exclusivity(unchecked) var nodes: [Node] = []
    @exclusivity(unchecked) var values: [Value] = []
    @exclusivity(unchecked) var upvalues: [Upvalue] = []
    @exclusivity(unchecked) var bytes: [UInt8] = []
    @exclusivity(unchecked) var roots = Roots()
    @exclusivity(unchecked) var shared: [any SharedObject] = []
    /// What the graph costs against the memory limit of the interpreter that made it
    /// (`chargeTo`), given back when the last holder lets go.
    var charge = MemoryCharge.none

    init() {}
}

extension CopiedGraph {
    /// The copied values themselves, in order: the first few kept inline (a job's function and
    /// arguments, its results), so that a graph of plain values costs one allocation.
    struct Roots: RandomAccessCollection {
        private static let inlineCount = 4
        private var first = InlineArray<4, Value>(repeating: .nil)
        private var more: [Value] = []
        private(set) var count = 0

        var startIndex: Int { 0 }
        var endIndex: Int { count }

        subscript(i: Int) -> Value { i < Self.inlineCount ? first[i] : more[i - Self.inlineCount] }

        mutating func append(_ v: Value) {
            if count < Self.inlineCount { first[count] = v } else { more.append(v) }
            count += 1
        }
    }
}

/// An object that crosses interpreters as itself: every interpreter gets a userdata for the one
/// Swift object (see `ChannelObject`).
protocol SharedObject: AnyObject, Sendable {
    /// Pushes `L`'s userdata for the object.
    func push(_ L: OpaquePointer)
}

extension CopiedGraph {
    /// Graphs of up to this many tables and functions are built in stack slots, not in a table.
    static let stackNodes = 16

    /// Creates every node in `L`, then calls `body` with a function that pushes a value of this
    /// graph. Returns nil, with a message on top of the stack, when bytecode fails to load.
    /// Leaves the stack as it found it (but for that message). Never raises (short of running
    /// out of memory).
    func build<R>(in L: OpaquePointer, _ body: (_ push: (Value) -> Void) -> R) -> R? {
        // A few objects live in stack slots (`objects + i`), more in a table (`objects[i + 1]`).
        let onStack = nodes.count <= Self.stackNodes
        guard lua_checkstack(L, 8 + (onStack ? Int32(nodes.count) : 0)) != 0 else {
            Lua.push(L, "stack overflow")
            return nil
        }
        let top = lua_gettop(L)
        if !onStack { lua_createtable(L, Int32(clamping: nodes.count), 0) }
        let objects = top + 1
        func store(_ i: Int) {
            if !onStack { lua_rawseti(L, objects, lua_Integer(i + 1)) }
        }
        func fetch(_ i: Int) {
            if onStack { lua_pushvalue(L, objects + Int32(i)) } else { lua_rawgeti(L, objects, lua_Integer(i + 1)) }
        }
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
                case .node(let i): fetch(i)
                case .shared(let i): shared[i].push(L)
                }
            }
            // 1. Every object exists before anything refers to it (cycles).
            for (i, node) in nodes.enumerated() {
                switch node {
                case .table(_, let arrayCount, let hashCount, _):
                    lua_createtable(L, arrayCount, hashCount)
                case .function(let code, let first, let count, let id):
                    let reusable = id != 0 && isPlain(first, count)
                    if reusable, LoadedFunctions.push(L, id) { break }
                    guard luaL_loadbufferx(L, chars(code), Int(code.count), "=concurrent_map", "b") == LUA_OK else {
                        if lua_gettop(L) != top + 1 { ld_replace(L, top + 1) }
                        lua_settop(L, top + 1)
                        return nil
                    }
                    if reusable { LoadedFunctions.keep(L, id) }
                }
                store(i)
            }
            // 2. Contents, metatables and upvalues.
            for (i, node) in nodes.enumerated() {
                fetch(i)
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
                case .function(_, let first, let count, _):
                    for n in Int32(1)..<(count + 1) {
                        switch upvalues[first + Int(n) - 1] {
                        case .value(let v):
                            push(v)
                            if lua_setupvalue(L, -2, n) == nil { ld_pop(L, 1) }
                        case .shared(let node, let index):
                            fetch(Int(node))
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

extension CopiedGraph {
    /// Pushes every root, if the graph has no table, function or shared object (most results):
    /// without `build`'s machinery. False, having pushed nothing, otherwise.
    func pushPlainRoots(_ L: OpaquePointer) -> Bool {
        guard nodes.isEmpty, shared.isEmpty else { return false }
        bytes.withUnsafeBytes { raw in
            for v in roots {
                switch v {
                case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
                case .integer(let i): lua_pushinteger(L, i)
                case .number(let d): lua_pushnumber(L, d)
                case .string(let s):
                    lua_pushlstring(L, raw.baseAddress.map { ($0 + Int(s.start)).assumingMemoryBound(to: CChar.self) }, Int(s.count))
                case .special(let s): s.push(L)
                case .nil, .node, .shared: lua_pushnil(L)
                }
            }
        }
        return true
    }

    /// Whether a function's upvalues are all globals or library tables (or none): then the
    /// function loaded once is the same as one loaded again, since its upvalues are set anew on
    /// each build to the same tables, and a target may keep it.
    func isPlain(_ first: Int, _ count: Int32) -> Bool {
        for k in first..<first + Int(count) {
            guard case .value(.special) = upvalues[k] else { return false }
        }
        return true
    }
}

extension CopiedGraph.Special {
    /// Pushes this interpreter's table of specials, `{[library table] = -1 - n, ...}` (n: the
    /// index in `allCases`), made on first use: what the copier looks tables up in.
    static func pushIndex(_ L: OpaquePointer) {
        if lua_rawgetp(L, ld_registryindex(), RegistryKeys.specials) == LUA_TTABLE { return }
        ld_pop(L, 1)
        lua_createtable(L, 0, 16)
        if Lua.getField(L, ld_registryindex(), LUA_LOADED_TABLE) == LUA_TTABLE {
            for (n, special) in allCases.enumerated() {
                if Lua.getField(L, -1, special.rawValue) == LUA_TTABLE {
                    lua_pushinteger(L, lua_Integer(-1 - n))
                    lua_rawset(L, -4)
                } else {
                    ld_pop(L, 1)
                }
            }
        }
        ld_pop(L, 1)
        lua_pushvalue(L, -1)
        lua_rawsetp(L, ld_registryindex(), RegistryKeys.specials)
    }

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
