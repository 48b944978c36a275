import LuaDispatch

struct ServerConfig: LuaCodable {
    struct Server: Codable {
        var host: String
        var port: Int
        var tls: Bool?
    }
    enum Mode: String, Codable { case strict, lenient }

    var mode: Mode
    var servers: [Server]
}

// Codable both ways: a script's result decoded, errors with the path, a value encoded for Lua.
func configuration() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    let good = try runtime.run(string: """
        return {mode = "strict", servers = {{host = "a", port = 80}, {host = "b", port = 443, tls = true}}}
        """)
    let config = try LuaDecoder().decode(ServerConfig.self, from: good[0])
    print(config.servers.map(\.port))   // [80, 443]
    let bad = try runtime.run(string: "return {mode = 'strict', servers = {{host = 'a', port = 80}, {host = 'b', port = '443'}}}")
    do { _ = try LuaDecoder().decode(ServerConfig.self, from: bad[0]) } catch {
        print(error)   // servers[2].port: number expected, got string
    }
    // LuaCodable: the struct itself is a typed argument (or result).
    let count = try runtime.load("local config = ...; return #config.servers").call(config, returning: Int.self)
    print(count)   // 2
}
