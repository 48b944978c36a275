import LuaDispatch
import Synchronization

/// A Swift class Lua uses as userdata. Lua may call it from any queue's thread: it is Sendable.
final class Counter: LuaUserData {
    let name: String
    private let value = Mutex(0)

    init(name: String) { self.name = name }

    func add(_ n: Int) -> Int { value.withLock { $0 += n; return $0 } }
    var current: Int { value.withLock { $0 } }

    static let luaType = LuaType<Counter>("Counter") { t in
        t.method("add") { (c: Counter, n: Int?) in c.add(n ?? 1) }
        t.property("name", get: \.name)
        t.property("value", get: { $0.current })
        t.metamethod(.tostring) { (c: Counter) in "Counter(\(c.name) = \(c.current))" }
        t.metamethod(.len) { (c: Counter) in c.current }
    }
}

// Swift objects in Lua: methods, properties, metamethods, identity, type errors.
func objects() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    let visits = Counter(name: "visits")
    runtime.register(module: "app") { m in
        m.value("visits", visits)
        m.function("same") { (a: Counter, b: Counter) in a === b }
    }
    let result = try runtime.run(string: """
        local app = require("app")
        app.visits:add()
        app.visits:add(41)
        local ok, err = pcall(app.visits.add, {}, 1)
        return tostring(app.visits), #app.visits, app.same(app.visits, app.visits), err
        """)
    print(result)            // ["Counter(visits = 42)", 42, true, "bad argument #1 to 'add' (Counter expected, got table)"]
    print(visits.current)    // 42: Lua worked on this very object
}
