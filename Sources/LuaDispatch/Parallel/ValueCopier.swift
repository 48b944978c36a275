import CLua
import CLuaShim

/// Copies values out of one interpreter into a `CopiedGraph`.
///
/// Tables and Lua functions are recorded by identity, so shared and cyclic references are kept,
/// and visited breadth-first from a work list, so deep structures need neither Swift nor Lua
/// stack depth. Identity is looked up in Lua tables kept on the stack while the copier is alive
/// (a Lua lookup by object is cheaper than hashing pointers in Swift), and they keep every object
/// seen reachable while the copy is in progress.
/// Never raises (short of running out of memory).
struct ValueCopier {
    typealias Value = CopiedGraph.Value

    /// Where a node was first found, kept cheap (keys as copied values) until an error needs it.
    private enum Step {
        case upvalue(String)
        case field(Value)
        case key
        case metatable
    }

    let L: OpaquePointer
    /// Node index + 1 -> object, to fill nodes later.
    private let seenObjects: Int32
    /// Object -> node index, or -1 - the index of a `Special`.
    private let seenIndex: Int32
    private let cacheBytecode: Bool
    private(set) var graph = CopiedGraph()
    private var upvalueOwners: [UnsafeMutableRawPointer: (node: Int32, index: Int32)] = [:]
    /// For each node, where it was first found (parent -1: a root), for error messages.
    private var origins: [(parent: Int, step: Step?)] = []
    private var cursor = 0

    /// Pushes the copier's tables; the caller drops them (with `lua_settop`) when done.
    /// `cacheBytecode`: keep each function's dump (see `bytecode`).
    init(_ L: OpaquePointer, cacheBytecode: Bool) {
        self.L = L
        self.cacheBytecode = cacheBytecode
        lua_checkstack(L, 8)
        lua_createtable(L, 0, 0)
        seenObjects = lua_gettop(L)
        lua_createtable(L, 0, 16)
        seenIndex = lua_gettop(L)
        let specials = CopiedGraph.Special.allCases
        if Lua.getField(L, ld_registryindex(), LUA_LOADED_TABLE) == LUA_TTABLE {
            for (n, special) in specials.enumerated() {
                if Lua.getField(L, -1, special.rawValue) == LUA_TTABLE {
                    lua_pushinteger(L, lua_Integer(-1 - n))
                    lua_rawset(L, seenIndex)
                } else {
                    ld_pop(L, 1)
                }
            }
        }
        ld_pop(L, 1)
        // In a worker task the registry's globals are the task's fresh table, not `_G`'s.
        lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        lua_pushinteger(L, lua_Integer(-1 - specials.firstIndex(of: .globals)!))
        lua_rawset(L, seenIndex)
    }

    /// Copies the value at `index` (with everything it reaches) and appends it to the roots.
    /// On failure the graph is left as it was before the call.
    @discardableResult
    mutating func root(_ index: Int32) throws(CopyError) -> Value {
        let i = lua_absindex(L, index)
        let marks = (graph.nodes.count, graph.values.count, graph.upvalues.count, graph.bytes.count)
        do {
            let v = try value(i, parent: -1, step: nil)
            while cursor < graph.nodes.count {
                try fill(cursor)
                cursor += 1
            }
            graph.roots.append(v)
            return v
        } catch {
            for k in marks.0..<graph.nodes.count {
                lua_rawgeti(L, seenObjects, lua_Integer(k + 1))
                lua_pushnil(L)
                lua_rawset(L, seenIndex)
            }
            graph.nodes.removeSubrange(marks.0...)
            graph.values.removeSubrange(marks.1...)
            graph.upvalues.removeSubrange(marks.2...)
            graph.bytes.removeSubrange(marks.3...)
            origins.removeSubrange(marks.0...)
            upvalueOwners = upvalueOwners.filter { $0.value.node < marks.0 }
            cursor = marks.0
            throw error
        }
    }

    /// Appends a root without reading a stack slot (a failed iteration).
    mutating func appendRoot(_ v: Value) { graph.roots.append(v) }

    private mutating func value(_ i: Int32, parent: Int, step: Step?) throws(CopyError) -> Value {
        switch lua_type(L, i) {
        case LUA_TNIL: return .nil
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, i) != 0)
        case LUA_TNUMBER:
            if lua_isinteger(L, i) != 0 { return .integer(lua_tointegerx(L, i, nil)) }
            return .number(lua_tonumberx(L, i, nil))
        case LUA_TSTRING:
            var len = 0
            let p = lua_tolstring(L, i, &len)!
            return .string(try append(UnsafeRawBufferPointer(start: p, count: len), parent, step))
        case LUA_TTABLE:
            return node(i, parent: parent, step: step)
        case LUA_TFUNCTION:
            guard lua_iscfunction(L, i) == 0 else { throw failure("a C function", parent, step) }
            return node(i, parent: parent, step: step)
        case LUA_TUSERDATA:
            throw failure("a userdata" + (userdataName(i).map { " (\($0))" } ?? ""), parent, step)
        case LUA_TLIGHTUSERDATA: throw failure("a light userdata", parent, step)
        case LUA_TTHREAD: throw failure("a coroutine", parent, step)
        default: throw failure("a \(String(cString: ld_typename(L, i))) value", parent, step)
        }
    }

    /// Adds bytes to the pool.
    private mutating func append(_ bytes: UnsafeRawBufferPointer, _ parent: Int, _ step: Step?) throws(CopyError) -> CopiedGraph.Span {
        let span = try reserve(bytes.count, parent, step)
        graph.bytes.append(contentsOf: bytes)
        return span
    }

    /// The span `count` bytes appended next will occupy; pool offsets are 32-bit.
    private func reserve(_ count: Int, _ parent: Int, _ step: Step?) throws(CopyError) -> CopiedGraph.Span {
        let start = graph.bytes.count
        guard start + count <= Int(UInt32.max) else { throw failure("more than 4 GiB of strings and code", parent, step) }
        return CopiedGraph.Span(start: UInt32(start), count: UInt32(count))
    }

    /// The node for the table or function at `i`, registered on first sight (filled later).
    private mutating func node(_ i: Int32, parent: Int, step: Step?) -> Value {
        lua_pushvalue(L, i)
        if lua_rawget(L, seenIndex) == LUA_TNUMBER {
            let k = Int(lua_tointegerx(L, -1, nil))
            ld_pop(L, 1)
            return k >= 0 ? .node(k) : .special(CopiedGraph.Special.allCases[-1 - k])
        }
        ld_pop(L, 1)
        let k = graph.nodes.count
        graph.nodes.append(.table(first: 0, arrayCount: 0, hashCount: 0, metatable: nil))  // see `fill`
        origins.append((parent, step))
        lua_pushvalue(L, i)
        lua_pushvalue(L, i)
        lua_rawseti(L, seenObjects, lua_Integer(k + 1))
        lua_pushinteger(L, lua_Integer(k))
        lua_rawset(L, seenIndex)
        return .node(k)
    }

    /// Records the contents of node `k`: a table's entries and metatable, or a function's
    /// bytecode and upvalues (joined when another copied function shares the variable). Each
    /// node's entries are contiguous: values met inside are only registered, filled later.
    private mutating func fill(_ k: Int) throws(CopyError) {
        lua_checkstack(L, 8)
        lua_rawgeti(L, seenObjects, lua_Integer(k + 1))
        let object = lua_gettop(L)
        defer { lua_settop(L, object - 1) }
        if lua_type(L, object) == LUA_TTABLE {
            let first = graph.values.count
            var arrayCount: Int32 = 0, hashCount: Int32 = 0
            lua_pushnil(L)
            while lua_next(L, object) != 0 {
                let key = try value(object + 1, parent: k, step: .key)
                let v = try value(object + 2, parent: k, step: .field(key))
                if hashCount == 0, case .integer(let n) = key, n == arrayCount + 1, arrayCount < Int32.max {
                    graph.values.append(v)
                    arrayCount += 1
                } else {
                    graph.values.append(key)
                    graph.values.append(v)
                    hashCount += 1
                }
                ld_pop(L, 1)
            }
            var metatable: Value?
            if lua_getmetatable(L, object) != 0 {
                metatable = try value(object + 1, parent: k, step: .metatable)
            }
            graph.nodes[k] = .table(first: first, arrayCount: arrayCount, hashCount: hashCount, metatable: metatable)
        } else {
            let code = try bytecode(object, k)
            let first = graph.upvalues.count
            var n: Int32 = 1
            while let name = lua_getupvalue(L, object, n) {
                let id = lua_upvalueid(L, object, n)
                if let id, let owner = upvalueOwners[id] {
                    graph.upvalues.append(.shared(node: owner.node, index: owner.index))
                } else {
                    if let id { upvalueOwners[id] = (Int32(k), n) }
                    graph.upvalues.append(.value(try value(object + 1, parent: k, step: .upvalue(String(cString: name)))))
                }
                ld_pop(L, 1)
                n += 1
            }
            graph.nodes[k] = .function(code: code, first: first, upvalueCount: n - 1)
        }
    }

    /// Registry key of the bytecode cache: a weak-keyed table, function -> dump.
    private static let cacheKey = "luadispatch.concurrent_map.bytecode"

    /// Adds the dump of the Lua function at `i` to the pool (with debug info, so that errors
    /// keep their lines).
    ///
    /// The cache is keyed by the function object: the API does not expose the prototype, and
    /// keying by a hash of the dump would need the dump, which is the cost being saved. A script
    /// that calls `concurrent_map` repeatedly with the same function (and helpers) dumps it once;
    /// weak keys let the entry go with the function.
    private mutating func bytecode(_ i: Int32, _ k: Int) throws(CopyError) -> CopiedGraph.Span {
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        if cacheBytecode {
            if Lua.getField(L, ld_registryindex(), Self.cacheKey) != LUA_TTABLE {
                ld_pop(L, 1)
                lua_createtable(L, 0, 0)
                lua_createtable(L, 0, 1)
                Lua.push(L, "k")
                Lua.setField(L, -2, "__mode")
                lua_setmetatable(L, -2)
                lua_pushvalue(L, -1)
                Lua.setField(L, ld_registryindex(), Self.cacheKey)
            }
            lua_pushvalue(L, i)
            if lua_rawget(L, top + 1) == LUA_TSTRING {
                var len = 0
                let p = lua_tolstring(L, -1, &len)!
                return try append(UnsafeRawBufferPointer(start: p, count: len), origins[k].parent, origins[k].step)
            }
            ld_pop(L, 1)
        }
        var dump: [UInt8] = []
        lua_pushvalue(L, i)
        withUnsafeMutablePointer(to: &dump) { out in
            _ = lua_dump(L, { _, p, size, out in
                out!.assumingMemoryBound(to: [UInt8].self).pointee
                    .append(contentsOf: UnsafeRawBufferPointer(start: p, count: size))
                return 0
            }, out, 0)
        }
        ld_pop(L, 1)
        if cacheBytecode {
            lua_pushvalue(L, i)
            dump.withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
            }
            lua_rawset(L, top + 1)
        }
        let span = try reserve(dump.count, origins[k].parent, origins[k].step)
        graph.bytes.append(contentsOf: dump)
        return span
    }

    private func userdataName(_ i: Int32) -> String? {
        guard lua_getmetatable(L, i) != 0 else { return nil }
        defer { ld_pop(L, 2) }
        _ = Lua.getField(L, -1, "__name")
        return Lua.string(L, -1)
    }

    private func failure(_ what: String, _ parent: Int, _ step: Step?) -> CopyError {
        var steps: [Step] = step.map { [$0] } ?? []
        var p = parent
        while p >= 0 {
            if let s = origins[p].step { steps.append(s) }
            p = origins[p].parent
        }
        return CopyError(what: what, path: steps.reversed().map(describe))
    }

    private func describe(_ step: Step) -> CopyError.Step {
        switch step {
        case .upvalue(let name): return .upvalue(name)
        case .key: return .key
        case .metatable: return .metatable
        case .field(let key):
            switch key {
            case .string(let s):
                let bytes = graph.bytes[Int(s.start)..<Int(s.start) + Int(s.count)]
                return .field(.string(String(decoding: bytes, as: UTF8.self)))
            case .integer(let i): return .field(.other("\(i)"))
            case .number(let d): return .field(.other("\(d)"))
            case .boolean(let b): return .field(.other("\(b)"))
            case .nil, .special, .node: return .field(.other("?"))
            }
        }
    }
}
