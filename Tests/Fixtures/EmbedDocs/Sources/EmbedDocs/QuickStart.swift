import LuaDispatch

// The smallest host: a typed Swift function in a module, a script, its result.
func quickStart() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    runtime.register(module: "host") { m in
        m.function("greet") { (name: String, times: Int?) -> String in
            String(repeating: "hello, \(name)! ", count: times ?? 1)
        }
    }
    let result = try runtime.run(string: """
        local host = require("host")
        return host.greet("lua", 2), select(2, pcall(host.greet, 42))
        """)
    print(result)   // ["hello, lua! hello, lua! ", "bad argument #1 to 'greet' (string expected, got number)"]
}
