import CLua
import CLuaShim

/// Copies values out of one interpreter into a `CopiedGraph`.
///
/// Tables and Lua functions are recorded by identity, so shared and cyclic references are kept,
/// and visited breadth-first from a work list, so deep structures need neither Swift nor Lua
/// stack depth. The objects met are kept in a Lua array (which also keeps them reachable while
/// the copy is in progress); identity is checked against their addresses while there are few
/// of them, then in a Lua table by object (a Lua lookup by object is cheaper than hashing
/// pointers in Swift). Copying plain values and strings touches no table; the array is the
/// interpreter's own, reused from one copy to the next (see `finish`), so that submitting a
/// function to a worker allocates no Lua table.
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
    /// Stack indexes (0 until the first table or function): node index + 1 -> object; the
    /// interpreter's specials (library table -> -1 - n); its globals; and, past `smallCount`
    /// nodes, object -> node index (`seen`).
    private var objects: Int32 = 0
    private var specials: Int32 = 0
    private var globals: Int32 = 0
    private var seen: Int32 = 0
    /// The stack index of the first node when `plainFunction` copied it, else 0.
    private var plainRoot: Int32 = 0
    private var seenSlot: Int32 = 0
    /// The addresses of the first `smallCount` nodes' objects.
    private var addresses = InlineArray<8, UInt>(repeating: 0)
    private static let smallCount = 8
    /// Whether `objects` is the interpreter's reusable array, to be given back by `finish`.
    private var reusable = false
    private let cacheBytecode: Bool
    let graph = CopiedGraph()
    private var upvalueOwners: [UnsafeMutableRawPointer: (node: Int32, index: Int32)] = [:]
    /// For each node but the first (always a root), where it was first found (parent -1: a
    /// root), for error messages: a copy of one function with plain arguments records none.
    private var origins: [(parent: Int, step: Step?)] = []
    private var cursor = 0

    /// `cacheBytecode`: keep each function's dump (see `bytecode`). The copier pushes what it
    /// needs when the first table or function is copied; the caller calls `finish` and drops
    /// them (with `lua_settop`) when done.
    init(_ L: OpaquePointer, cacheBytecode: Bool) {
        self.L = L
        self.cacheBytecode = cacheBytecode
    }

    /// The first node, when it is a Lua function whose upvalues are all plain values or the
    /// globals (a job's function, typically): copied without any table, since nothing it
    /// reaches can be shared or cyclic. nil (nothing recorded) for any other function. Kept at
    /// its stack index, `plainRoot`, in case a later root needs the tables (`begin`).
    private mutating func plainFunction(_ i: Int32) throws(CopyError) -> Value? {
        guard lua_iscfunction(L, i) == 0 else { return nil }
        lua_checkstack(L, 4)
        lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        let env = lua_gettop(L)
        defer { lua_settop(L, env - 1) }
        var n: Int32 = 1
        while lua_getupvalue(L, i, n) != nil {
            let t = lua_type(L, -1)
            let plain = t == LUA_TNIL || t == LUA_TBOOLEAN || t == LUA_TNUMBER || t == LUA_TSTRING
                || (t == LUA_TTABLE && lua_rawequal(L, -1, env) != 0)
            ld_pop(L, 1)
            guard plain else { return nil }
            n += 1
        }
        graph.nodes.append(.table(first: 0, arrayCount: 0, hashCount: 0, metatable: nil))
        do {
            let (code, id) = try bytecode(i, 0)
            n = 1
            while let name = lua_getupvalue(L, i, n) {
                if let id = lua_upvalueid(L, i, n) { upvalueOwners[id] = (0, n) }
                let v: Value = lua_type(L, -1) == LUA_TTABLE
                    ? .special(.globals) : try value(lua_gettop(L), parent: 0, step: .upvalue(String(cString: name)))
                graph.upvalues.append(.value(v))
                ld_pop(L, 1)
                n += 1
            }
            graph.nodes[0] = .function(code: code, first: 0, upvalueCount: n - 1, id: id)
        } catch {
            graph.nodes.removeAll()
            graph.upvalues.removeAll()
            graph.bytes.removeAll()
            upvalueOwners.removeAll()
            throw error
        }
        addresses[0] = UInt(bitPattern: lua_topointer(L, i))
        plainRoot = i
        cursor = 1
        return .node(0)
    }

    /// Pushes what identity needs. The registry's globals are read each time, since a
    /// `concurrent_map` task has globals of its own.
    private mutating func begin() {
        lua_checkstack(L, 8)
        if lua_rawgetp(L, ld_registryindex(), RegistryKeys.scratch) == LUA_TTABLE {
            lua_pushnil(L)
            lua_rawsetp(L, ld_registryindex(), RegistryKeys.scratch)  // taken (a copy nested in a __gc makes its own)
            reusable = true
        } else {
            ld_pop(L, 1)
            lua_createtable(L, 16, 0)
            reusable = true
        }
        objects = lua_gettop(L)
        if plainRoot != 0 {
            lua_pushvalue(L, plainRoot)
            lua_rawseti(L, objects, 1)
        }
        CopiedGraph.Special.pushIndex(L)
        specials = lua_gettop(L)
        lua_rawgeti(L, ld_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        globals = lua_gettop(L)
        lua_pushnil(L)  // where `seen` goes, if needed: nothing pushed later stays
        seenSlot = lua_gettop(L)
    }

    /// Pushes the copier's tables now, for a caller that keeps values above them between roots.
    mutating func prepare() {
        if objects == 0 { begin() }
    }

    /// Gives the interpreter its reusable array back, emptied. Call it before dropping the
    /// copier's stack values; a copier not finished only costs the next copy a new array.
    mutating func finish() {
        guard reusable, objects != 0 else { return }
        reusable = false
        let n = graph.nodes.count
        guard n <= 4096 else { return }
        for k in 0..<n {
            lua_pushnil(L)
            lua_rawseti(L, objects, lua_Integer(k + 1))
        }
        lua_pushvalue(L, objects)
        lua_rawsetp(L, ld_registryindex(), RegistryKeys.scratch)
    }

    /// Copies the value at `index` (with everything it reaches) and appends it to the roots.
    /// On failure the graph is left as it was before the call.
    @discardableResult
    mutating func root(_ index: Int32) throws(CopyError) -> Value {
        let i = lua_absindex(L, index)
        if objects == 0 {
            let t = lua_type(L, i)
            if t == LUA_TFUNCTION, graph.nodes.isEmpty, let v = try plainFunction(i) {
                graph.roots.append(v)
                return v
            }
            if t == LUA_TTABLE || t == LUA_TFUNCTION { begin() }
        }
        let marks = (graph.nodes.count, graph.values.count, graph.upvalues.count, graph.bytes.count, graph.shared.count)
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
                if seen != 0 {
                    lua_rawgeti(L, objects, lua_Integer(k + 1))
                    lua_pushnil(L)
                    lua_rawset(L, seen)
                }
                lua_pushnil(L)
                lua_rawseti(L, objects, lua_Integer(k + 1))
            }
            graph.nodes.removeSubrange(marks.0...)
            graph.values.removeSubrange(marks.1...)
            graph.upvalues.removeSubrange(marks.2...)
            graph.bytes.removeSubrange(marks.3...)
            graph.shared.removeSubrange(marks.4...)
            origins.removeSubrange(max(0, marks.0 - 1)...)
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
            if let channel: ChannelObject = Runtime.from(L).objects.check(L, i, .channel) {
                return shared(channel)
            }
            throw failure("a userdata" + (userdataName(i).map { " (\($0))" } ?? ""), parent, step)
        case LUA_TLIGHTUSERDATA: throw failure("a light userdata", parent, step)
        case LUA_TTHREAD: throw failure("a coroutine", parent, step)
        default: throw failure("a \(String(cString: ld_typename(L, i))) value", parent, step)
        }
    }

    /// The index of `object` in the graph's shared objects (once per object).
    private mutating func shared(_ object: any SharedObject) -> Value {
        if let k = graph.shared.firstIndex(where: { $0 === object }) { return .shared(k) }
        graph.shared.append(object)
        return .shared(graph.shared.count - 1)
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
        if lua_type(L, i) == LUA_TTABLE {
            if lua_rawequal(L, i, globals) != 0 { return .special(.globals) }
            lua_pushvalue(L, i)
            if lua_rawget(L, specials) == LUA_TNUMBER {
                let k = Int(lua_tointegerx(L, -1, nil))
                ld_pop(L, 1)
                return .special(CopiedGraph.Special.allCases[-1 - k])
            }
            ld_pop(L, 1)
        }
        let k = graph.nodes.count
        if seen != 0 {
            lua_pushvalue(L, i)
            if lua_rawget(L, seen) == LUA_TNUMBER {
                let n = Int(lua_tointegerx(L, -1, nil))
                ld_pop(L, 1)
                return .node(n)
            }
            ld_pop(L, 1)
        } else {
            let address = UInt(bitPattern: lua_topointer(L, i))
            for n in 0..<k where addresses[n] == address { return .node(n) }
            if k < Self.smallCount {
                addresses[k] = address
            } else {
                // Past a few objects, identity by a Lua table.
                lua_createtable(L, 0, Int32(2 * Self.smallCount))
                ld_replace(L, seenSlot)
                seen = seenSlot
                for n in 0..<k {
                    lua_rawgeti(L, objects, lua_Integer(n + 1))
                    lua_pushinteger(L, lua_Integer(n))
                    lua_rawset(L, seen)
                }
            }
        }
        graph.nodes.append(.table(first: 0, arrayCount: 0, hashCount: 0, metatable: nil))  // see `fill`
        if k > 0 { origins.append((parent, step)) }
        lua_pushvalue(L, i)
        lua_rawseti(L, objects, lua_Integer(k + 1))
        if seen != 0 {
            lua_pushvalue(L, i)
            lua_pushinteger(L, lua_Integer(k))
            lua_rawset(L, seen)
        }
        return .node(k)
    }

    /// Records the contents of node `k`: a table's entries and metatable, or a function's
    /// bytecode and upvalues (joined when another copied function shares the variable). Each
    /// node's entries are contiguous: values met inside are only registered, filled later.
    private mutating func fill(_ k: Int) throws(CopyError) {
        lua_checkstack(L, 8)
        lua_rawgeti(L, objects, lua_Integer(k + 1))
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
            let (code, id) = try bytecode(object, k)
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
            graph.nodes[k] = .function(code: code, first: first, upvalueCount: n - 1, id: id)
        }
    }

    /// Adds the dump of the Lua function at `i` to the pool; returns its span and its number
    /// (0: not cached). See `FunctionCode`.
    private mutating func bytecode(_ i: Int32, _ k: Int) throws(CopyError) -> (CopiedGraph.Span, Int) {
        let code = FunctionCode.of(L, i, cache: cacheBytecode)
        let span = try reserve(code.bytes.count, origin(k).parent, origin(k).step)
        graph.bytes.append(contentsOf: code.bytes)
        return (span, code.id)
    }

    private func origin(_ k: Int) -> (parent: Int, step: Step?) { k == 0 ? (-1, nil) : origins[k - 1] }

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
            if let s = origin(p).step { steps.append(s) }
            p = origin(p).parent
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
            case .nil, .special, .node, .shared: return .field(.other("?"))
            }
        }
    }
}
