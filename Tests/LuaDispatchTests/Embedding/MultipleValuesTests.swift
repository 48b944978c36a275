import XCTest
@testable import LuaDispatch

/// Several values where Lua has lists of values: tuple results, `LuaVariadic` parameters,
/// results and arguments, tuple results of calls; global functions in one step; `String` and
/// `Int` keys for tables.
final class MultipleValuesTests: XCTestCase {
    func testTupleResultsAreThatManyLuaResults() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host") { m in
            m.function("divmod") { (a: Int, b: Int) -> (Int, Int) in (a / b, a % b) }
            m.function("parse") { (s: String) -> (String?, String) in
                Int(s) == nil ? (nil, "not a number: \(s)") : (s, "ok")
            }
            m.function("three") { () -> (Bool, Double, [Int]) in (true, 0.5, [1, 2]) }
            m.function("one") { (s: String) -> String in s }   // still one result
            m.asyncFunction("lookup") { (host: String) async throws -> (String, Int) in (host, 80) }
        }
        XCTAssertEqual(try rt.run(string: """
            local host = require("host")
            local q, r = host.divmod(17, 5)
            local v, why = host.parse("x")
            local b, d, list = host.three()
            return q, r, v, why, select("#", host.parse("1")), b, d, #list, select("#", host.one("a")), host.lookup("h")
            """), [3, 2, .nil, "not a number: x", 2, true, 0.5, 2, 1, "h", 80])
        // The untyped form still takes and returns arrays of values.
        let f = try rt.makeFunction("pair") { (a: Int) -> (Int, Int) in (a, -a) }
        XCTAssertEqual(try f.call(4), [4, -4])
    }

    func testVariadicParametersTakeTheRest() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host") { m in
            m.function("sum") { (label: String, xs: LuaVariadic<Double>) -> String in "\(label) \(xs.count) \(xs.reduce(0, +))" }
            m.function("count") { (rest: LuaVariadic<LuaValue>) -> Int in rest.count }
            m.function("split") { (s: String) -> LuaVariadic<String> in LuaVariadic(s.split(separator: ",").map(String.init)) }
            m.function("both") { (xs: LuaVariadic<Int>) -> (Int, LuaVariadic<Int>) in (xs.count, xs) }
        }
        XCTAssertEqual(try rt.run(string: """
            local host = require("host")
            return host.sum("none"), host.sum("three", 1, 2, 3.5), host.count(nil, nil, 3), host.count()
            """), ["none 0 0.0", "three 3 6.5", 3, 0])
        XCTAssertEqual(try rt.run(string: "return require('host').split('a,b,c')"), ["a", "b", "c"])
        XCTAssertEqual(try rt.run(string: "return require('host').both(7, 8)"), [2, 7, 8])
        // A wrong value among the rest is named by its own position, as Lua's functions do.
        XCTAssertEqual(try rt.run(string: """
            local host = require('host')
            return select(2, pcall(function() return host.sum('x', 1, 2, 'three') end)),
                   select(2, pcall(function() return string.char(65, 66, 'x') end))
            """, name: "=t"), ["t:2: bad argument #4 to 'sum' (number expected, got string)",
                              "t:3: bad argument #3 to 'char' (number expected, got string)"])
    }

    func testVariadicValuesElsewhereAreOneTable() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let t = try rt.makeTable()
        try t.set("list", LuaVariadic([1, 2, 3]))
        XCTAssertEqual(try t.get("list"), [1, 2, 3])
        XCTAssertEqual(try t.get("list", as: LuaVariadic<Int>.self), [1, 2, 3])
    }

    func testCallsTakeVariadicArgumentsAndReturnTuples() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let f = try rt.load("return select('#', ...), ...")
        XCTAssertEqual(try f.call("a", LuaVariadic([1, 2]), true), [4, "a", 1, 2, true])
        let (n, first, second) = try f.call("x", "y", returning: (Int, String, String?).self)
        XCTAssertEqual(n, 2)
        XCTAssertEqual(first, "x")
        XCTAssertEqual(second, "y")
        let (count, none) = try f.call(returning: (Int, String?).self)
        XCTAssertEqual(count, 0)
        XCTAssertNil(none)
        XCTAssertThrowsError(try f.call(1, returning: (Int, String).self)) { e in
            XCTAssertEqual((e as? LuaScriptError)?.message, "result #2: string expected, got number")
        }
        XCTAssertEqual(try f.call(1, returning: Int.self), 1)   // one type: the first result, as before
    }

    final class Point: LuaUserData {
        let x: Int, y: Int
        init(_ x: Int, _ y: Int) { (self.x, self.y) = (x, y) }
        static let luaType = LuaType<Point>("Point") { t in
            t.method("coordinates") { (p: Point) -> (Int, Int) in (p.x, p.y) }
            t.method("shifted") { (p: Point, by: LuaVariadic<Int>) -> LuaVariadic<Int> in LuaVariadic(by.map { $0 + p.x }) }
        }
    }

    func testMethodsReturnSeveralResults() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(globals: { $0.value("p", Point(3, 4)) })
        XCTAssertEqual(try rt.run(string: "local x, y = p:coordinates(); return x, y, p:shifted(1, 2)"), [3, 4, 4, 5])
    }

    func testGlobalFunctionsInOneStep() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(function: "greet") { (name: String) -> String in "hello, \(name)" }
        rt.register(function: "minmax") { (xs: LuaVariadic<Int>) -> (Int?, Int?) in (xs.min(), xs.max()) }
        rt.register(function: "echo") { (args: [LuaValue]) in args }
        rt.register(function: "nothing") { (_: Int) in }
        rt.register(asyncFunction: "later") { (n: Int) async throws -> Int in n + 1 }
        rt.register(globals: { m in
            m.value("version", "1.0")
            m.function("twice") { (n: Int) -> Int in 2 * n }
        })
        XCTAssertEqual(try rt.run(string: """
            local lo, hi = minmax(3, 1, 2)
            return greet("lua"), lo, hi, select("#", echo(1, 2)), select("#", nothing(1)), later(1), version, twice(21),
                   select(2, pcall(greet))
            """), ["hello, lua", 1, 3, 2, 0, 2, "1.0", 42, "bad argument #1 to 'greet' (string expected, got no value)"])
    }

    func testStringAndIntegerKeys() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        try rt.run(string: "config = {name = 'app', ports = {80, 443}}")
        let config = try rt.globals.get("config", as: LuaTable.self)
        let key: String = "name"
        XCTAssertEqual(try config.get(key), "app")
        XCTAssertEqual(try config[key], "app")
        XCTAssertEqual(try config.get(key, as: String.self), "app")
        try config.set(key, "renamed")
        XCTAssertEqual(try config.rawGet(key, as: String.self), "renamed")
        try config.rawSet("debug", true)
        let ports = try config.get("ports", as: LuaTable.self)
        let index: Int = 2
        XCTAssertEqual(try ports.get(index), 443)
        XCTAssertEqual(try ports[index], 443)
        try ports.set(3, 8080)
        XCTAssertEqual(try ports.rawGet(3, as: Int.self), 8080)
        try ports.rawSet(4, 9090)
        XCTAssertEqual(try rt.run(string: "return config.name, config.debug, #config.ports, config.ports[4]"),
                       ["renamed", true, 4, 9090])
    }
}
