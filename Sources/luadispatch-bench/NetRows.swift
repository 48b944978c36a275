import Foundation

/// Sockets: a loopback echo (server and clients in one script) and connection churn, the Lua
/// script through the `luadispatch` CLI against luv (libuv) under stock `lua5.4` doing the same,
/// and the echo against a native Swift DispatchIO program. Each pair alternates which side runs
/// first (`CLIRows.inTurn`).
enum NetRows {
    static let rows: [Row] = [echoLuv, echoNative, acceptLuv]

    /// The bytes each connection echoes, at `scale` (4 MiB at full size).
    static func echoSize(_ scale: Double) -> Int { max(64 << 10, Int(Double(4 << 20) * scale)) / 16 * 16 }

    static let connections = 20

    /// `lua5.4 SCRIPT ARGS...` (luv is Debian's lua-luv, on lua5.4's default module path).
    static func viaLuv(_ script: String, _ args: [String]) throws -> [Double] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/lua5.4") else { throw BenchError("lua5.4 is missing (scripts/setup --tests)") }
        return try CLIRows.output(["/usr/bin/lua5.4", try Locations.repositoryFile("scripts/benchmarks/" + script)] + args)
    }

    static func viaCLI(_ script: String, _ args: [String]) throws -> [Double] {
        try CLIRows.output([ProcessRows.cli, "run", try Locations.repositoryFile("scripts/benchmarks/" + script)] + args)
    }

    /// 20 connections each echoing 4 MiB: MB/s (both directions) of `echo.lua` against `echo-luv.lua`.
    static let echoLuv = Row(
        name: "net_echo", unit: "MB/s", baselineName: "luv, lua5.4", better: .higher,
        target: ">= 1.0x luv", meets: { _, _, r in r >= 1.0 }
    ) { scale in
        let args = ["\(connections)", "\(echoSize(scale))"]
        let (lua, luv) = try CLIRows.inTurn(lua: { try viaCLI("echo.lua", args) }, native: { try viaLuv("echo-luv.lua", args) })
        return Measurement(lua: lua[0], baseline: luv[0], notes: "\(connections) x \(echoSize(scale) >> 10) KiB echoed, one process each")
    }

    /// The same echo against `luadispatch-native echo` (DispatchIO, a descriptor per direction).
    static let echoNative = Row(
        name: "net_echo_native", unit: "MB/s", baselineName: "native -O", better: .higher,
        target: ">= 0.8x native", meets: { _, _, r in r >= 0.8 }
    ) { scale in
        let args = ["\(connections)", "\(echoSize(scale))"]
        let (lua, native) = try CLIRows.inTurn(lua: { try viaCLI("echo.lua", args) },
                                               native: { try CLIRows.output([CLIRows.native, "echo"] + args) })
        return Measurement(lua: lua[0], baseline: native[0], notes: "\(connections) x \(echoSize(scale) >> 10) KiB echoed")
    }

    /// Connections made, accepted and closed per second, 16 clients at a time: `accept.lua`
    /// against `accept-luv.lua`.
    static let acceptLuv = Row(
        name: "net_accept", unit: "conn/s", baselineName: "luv, lua5.4", better: .higher,
        target: "report", meets: { _, _, _ in true }
    ) { scale in
        let total = max(1000, Int(20000 * scale))
        let args = ["\(total)", "16"]
        let (lua, luv) = try CLIRows.inTurn(lua: { try viaCLI("accept.lua", args) }, native: { try viaLuv("accept-luv.lua", args) })
        return Measurement(lua: lua[0], baseline: luv[0], notes: "\(total) connections, 16 at a time")
    }
}
