import Foundation
import XCTest
@testable import LuaDispatch

/// Codable both ways: `LuaEncoder`, `LuaDecoder`, `LuaCodable` parameters, errors with paths.
final class CodableTests: XCTestCase {
    enum Mode: String, Codable { case fast, careful }
    enum Target: Codable, Equatable {
        case file(path: String)
        case url(String, retries: Int?)
        case none
    }

    struct Server: Codable, Equatable {
        var host: String
        var port: Int
        var tls: Bool?
        var weight: Double
    }

    struct Config: LuaCodable, Equatable {
        var name: String
        var mode: Mode
        var servers: [Server]
        var tags: [String: [Int]]
        var target: Target
        var fallback: Target?
        var limits: [String: Double]?
        var small: UInt8
        var nested: [[Int?]]
    }

    static let sample = Config(
        name: "demo", mode: .careful,
        servers: [Server(host: "a", port: 80, tls: nil, weight: 1), Server(host: "b", port: 443, tls: true, weight: 0.5)],
        tags: ["x": [1, 2], "empty": []], target: .url("http://x", retries: 3), fallback: .file(path: "/tmp/f"),
        limits: nil, small: 255, nested: [[1, 2], []])

    func testRoundTripsThroughLuaValues() throws {
        let value = try LuaEncoder().encode(Self.sample)
        guard case .dictionary(let d) = value else { return XCTFail("\(value)") }
        XCTAssertEqual(d["mode"], "careful")
        XCTAssertEqual(d["servers"], [["host": "a", "port": 80, "weight": 1.0], ["host": "b", "port": 443, "tls": true, "weight": 0.5]])
        XCTAssertNil(d["limits"], "a nil optional is an absent key")
        XCTAssertEqual(try LuaDecoder().decode(Config.self, from: value), Self.sample)
    }

    /// Through a real interpreter: Swift -> Lua (a typed argument), Lua edits it, Lua -> Swift.
    func testRoundTripsThroughLua() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let edit = try rt.load("""
            local c = ...
            c.servers[2].port = c.servers[2].port + 1
            c.tags.y = {7}
            return c
            """)
        var expected = Self.sample
        expected.servers[1].port = 444
        expected.tags["y"] = [7]
        XCTAssertEqual(try edit.call(Self.sample, returning: Config.self), expected)
        // Written by hand in Lua, decoded from a chunk's result; floats with integer values are
        // integers, empty tables are empty arrays or dictionaries.
        let result = try rt.run(string: """
            return {name = 'lua', mode = 'fast', servers = {}, tags = {a = {}}, target = {none = {}},
                    small = 3.0, nested = {{}, {5}}}
            """)
        XCTAssertEqual(try LuaDecoder().decode(Config.self, from: result[0]),
                       Config(name: "lua", mode: .fast, servers: [], tags: ["a": []], target: .none, fallback: nil,
                              limits: nil, small: 3, nested: [[], [5]]))
    }

    /// Every decoding error names the path, in Lua's words.
    func testDecodingErrorsNameThePath() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        func error(_ lua: String) -> String? {
            do {
                let v = try rt.run(string: "return " + lua)[0]
                _ = try LuaDecoder().decode(Config.self, from: v)
                return nil
            } catch { return "\(error)" }
        }
        let base = "name = 'n', mode = 'fast', tags = {}, target = {none = {}}, small = 1, nested = {}"
        XCTAssertEqual(error("{\(base), servers = {{host = 'a', port = 1, weight = 1}, {host = 'b', port = '8080', weight = 1}}}"),
                       "servers[2].port: number expected, got string")
        XCTAssertEqual(error("{\(base), servers = {{host = 'a', weight = 1}}}"), "servers[1].port: number expected, got nil")
        XCTAssertEqual(error("{\(base), servers = {{host = 'a', port = 1.5, weight = 1}}}"),
                       "servers[1].port: number has no integer representation")
        XCTAssertEqual(error("{\(base), servers = {{host = 'a', port = 1, weight = 'w'}}}"), "servers[1].weight: number expected, got string")
        XCTAssertEqual(error("{\(base), servers = {{host = 'a', port = 1, weight = 1, tls = 'yes'}}}"),
                       "servers[1].tls: boolean expected, got string")
        XCTAssertEqual(error("{\(base), servers = {{host = false, port = 1, weight = 1}}}"), "servers[1].host: string expected, got boolean")
        XCTAssertEqual(error("{\(base), servers = 'none'}"), "servers: table expected, got string")
        XCTAssertEqual(error("{\(base), servers = {'x'}}"), "servers[1]: table expected, got string")
        XCTAssertEqual(error("{name = 'n', mode = 'fast', servers = {}, tags = {t = {1, 'x'}}, target = {none = {}}, small = 1, nested = {}}"),
                       "tags.t[2]: number expected, got string")
        XCTAssertEqual(error("{name = 'n', mode = 'slow', servers = {}, tags = {}, target = {none = {}}, small = 1, nested = {}}"),
                       "mode: Cannot initialize Mode from invalid String value slow")
        XCTAssertEqual(error("{name = 'n', mode = 'fast', servers = {}, tags = {}, target = {none = {}}, small = 256, nested = {}}"),
                       "small: integer 256 out of range for UInt8")
        XCTAssertEqual(error("{name = 'n', mode = 'fast', servers = {}, tags = {}, target = {none = {}}, small = 1, nested = {{1, 'x'}}}"),
                       "nested[1][2]: number expected, got string")
        XCTAssertEqual(error("42"), "table expected, got number")
        XCTAssertEqual(error("{\(base), servers = {}, limits = {['max conn'] = 'x'}}"), "limits[\"max conn\"]: number expected, got string")
    }

    /// A `LuaCodable` parameter: a wrong argument is a `bad argument` naming the path.
    func testCodableParametersAndResults() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host") { m in
            m.function("servers") { (c: Config) in c.servers.count }
            m.function("sample") { () in Self.sample }
        }
        XCTAssertEqual(try rt.run(string: "local h = require('host'); local c = h.sample(); return h.servers(c), c.servers[2].host"), [2, "b"])
        let message = try rt.run(string: """
            local h = require('host'); local c = h.sample(); c.servers[2].port = 'x'
            return select(2, pcall(h.servers, c))
            """)
        XCTAssertEqual(message, ["bad argument #1 to 'servers' (servers[2].port: number expected, got string)"])
    }

    /// Lua functions and values Lua holds by reference stay themselves through the coders.
    func testFunctionsAndObjectsInsideCodableValues() throws {
        struct Rule: LuaCodable {
            var pattern: String
            var action: LuaFunction
            var extra: LuaValue
        }
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let rules = try rt.run(string: "return {{pattern = '*.md', action = function(f) return 'saw ' .. f end, extra = {1, 2}}}")
        let decoded = try LuaDecoder().decode([Rule].self, from: rules[0])
        XCTAssertEqual(try decoded[0].action.call("a.md", returning: String.self), "saw a.md")
        XCTAssertEqual(decoded[0].extra, [1, 2])
        let back = try LuaEncoder().encode(decoded)
        XCTAssertEqual(back, rules[0])
        XCTAssertThrowsError(try JSONEncoder().encode(decoded[0].action))
        XCTAssertEqual(String(decoding: try JSONEncoder().encode(LuaValue.array([1, "x", ["k": true]])), as: UTF8.self),
                       #"[1,"x",{"k":true}]"#)
    }

    func testEncodingErrorsNameThePath() {
        struct Big: Encodable { var counts: [String: UInt64] }
        XCTAssertThrowsError(try LuaEncoder().encode(Big(counts: ["x": .max]))) { e in
            XCTAssertEqual("\(e)", "counts.x: 18446744073709551615 does not fit in a Lua integer")
        }
    }
}
