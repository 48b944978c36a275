import LuaDispatch

// An async host function: a task waits for it holding no thread; a plain block waits with the
// interpreter released.
func asyncFunctions() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    runtime.register(module: "net") { m in
        m.asyncFunction("lookup") { (host: String) async throws -> String in
            try await Task.sleep(nanoseconds: 10_000_000)   // stands for real I/O
            return host == "localhost" ? "127.0.0.1" : "unknown"
        }
    }
    let result = try runtime.run(string: """
        local dispatch, net = require("dispatch"), require("net")
        local a = dispatch.task(function() return net.lookup("localhost") end)
        local b = dispatch.task(function() return net.lookup("example.invalid") end)
        return select(2, a:wait()), select(2, b:wait()), net.lookup("localhost")
        """)
    print(result)   // ["127.0.0.1", "unknown", "127.0.0.1"]
}
