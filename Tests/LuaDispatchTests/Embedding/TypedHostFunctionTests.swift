import XCTest
@testable import LuaDispatch

/// Typed host functions: parameters and results converted by type, optionals for optional
/// arguments, and Lua's own `bad argument` messages when a conversion fails.
final class TypedHostFunctionTests: XCTestCase {
    private func runtime(_ define: (inout HostModule) -> Void) -> Runtime {
        let rt = TestRuntimes.make()
        rt.register(module: "host", define)
        return rt
    }

    /// `pcall(f, ...)`'s message, run in `rt`.
    private func message(_ rt: Runtime, _ call: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        let r = try? rt.run(string: "local host = require('host'); local ok, e = pcall(\(call)); return ok, e", name: "=test")
        XCTAssertEqual(r?.first, false, "\(call) did not fail", file: file, line: line)
        return r?.last?.stringValue ?? "(no message)"
    }

    func testParametersAndResultsAreConvertedByType() throws {
        let rt = runtime { m in
            m.function("words") { (text: String, limit: Int) -> [String] in
                Array(text.split(separator: " ").prefix(limit).map(String.init))
            }
            m.function("scale") { (x: Double, factor: Double?) -> Double in x * (factor ?? 2) }
            m.function("flag") { (b: Bool) -> Bool in !b }
            m.function("sum") { (xs: [Int]) -> Int in xs.reduce(0, +) }
            m.function("keys") { (d: [String: Int]) -> [String] in d.keys.sorted() }
            m.function("small") { (n: Int32, m: Int64, f: Float) -> Int64 in Int64(n) + m + Int64(f) }
            m.function("nothing") { (_: Int) in }
        }
        defer { rt.close() }
        XCTAssertEqual(try rt.run(string: """
            local host = require('host')
            local w = host.words("a b c d", 2)
            return #w, w[1], w[2], host.scale(3), host.scale(3, 10), host.scale(2.5, nil), host.flag(false),
                   host.sum({1, 2, 3}), table.concat(host.keys({b = 1, a = 2}), ","), host.small(1, 2, 3.5),
                   select('#', host.nothing(1)), host.words("x", 3.0)[1]
            """), [2, "a", "b", 6.0, 30.0, 5.0, true, 6, "a,b", 6, 0, "x"])
    }

    /// Extra arguments are ignored and missing ones are nil, as Lua's own functions do.
    func testExtraArgumentsAreIgnoredAndMissingOnesAreNil() throws {
        let rt = runtime { m in m.function("opt") { (a: Int, b: String?) -> String in "\(a) \(b ?? "none")" } }
        defer { rt.close() }
        XCTAssertEqual(try rt.run(string: "local h = require('host'); return h.opt(1), h.opt(2, 'x', 'extra', {})"),
                       ["1 none", "2 x"])
    }

    /// Every conversion's message, in Lua's form (`bad argument #n to 'name' (T expected, got U)`).
    func testEveryConversionErrorMessage() throws {
        let rt = runtime { m in
            m.function("int") { (_: Int) in }
            m.function("int32") { (_: Int32) in }
            m.function("double") { (_: Double) in }
            m.function("bool") { (_: Bool) in }
            m.function("str") { (_: String) in }
            m.function("second") { (_: String, _: Int) in }
            m.function("optional") { (_: Int?) in }
            m.function("list") { (_: [Int]) in }
            m.function("nested") { (_: [[String: [Double]]]) in }
            m.function("dict") { (_: [String: Bool]) in }
            m.function("fn") { (_: LuaFunction) in }
            m.function("table") { (_: LuaTable) in }
            m.function("value") { (_: LuaValue) in }
        }
        defer { rt.close() }
        let cases: [(String, String)] = [
            ("host.int, 'x'", "bad argument #1 to 'int' (number expected, got string)"),
            ("host.int, 1.5", "bad argument #1 to 'int' (number has no integer representation)"),
            ("host.int", "bad argument #1 to 'int' (number expected, got no value)"),
            ("host.int, nil", "bad argument #1 to 'int' (number expected, got nil)"),
            ("host.int32, 2^40", "bad argument #1 to 'int32' (integer 1099511627776 out of range for Int32)"),
            ("host.double, '1'", "bad argument #1 to 'double' (number expected, got string)"),
            ("host.bool, 0", "bad argument #1 to 'bool' (boolean expected, got number)"),
            ("host.str, 42", "bad argument #1 to 'str' (string expected, got number)"),
            ("host.str, io.stdout", "bad argument #1 to 'str' (string expected, got FILE*)"),
            ("host.second, 'a', 'b'", "bad argument #2 to 'second' (number expected, got string)"),
            ("host.optional, true", "bad argument #1 to 'optional' (number expected, got boolean)"),
            ("host.list, 'x'", "bad argument #1 to 'list' (table expected, got string)"),
            ("host.list, {1, 2, 'three'}", "bad argument #1 to 'list' ([3]: number expected, got string)"),
            ("host.nested, {{a = {1}}, {b = {2, 'x'}}}", "bad argument #1 to 'nested' ([2].b[2]: number expected, got string)"),
            ("host.dict, {[1] = true}", "bad argument #1 to 'dict' (string key expected, got number key)"),
            ("host.dict, {['two words'] = 1}", "bad argument #1 to 'dict' ([\"two words\"]: boolean expected, got number)"),
            ("host.fn, {}", "bad argument #1 to 'fn' (function expected, got table)"),
            ("host.table, print", "bad argument #1 to 'table' (table expected, got function)"),
            ("host.value, coroutine.create(print)", "bad argument #1 to 'value' (a thread value cannot be converted to a Swift value)"),
            ("host.value, {x = {1, y = 2}}", "bad argument #1 to 'value' (x: table mixes array and string keys)"),
        ]
        for (call, expected) in cases {
            XCTAssertEqual(message(rt, call), expected, call)
        }
    }

    /// The same wrong arguments give the same messages as Lua's own library functions where the
    /// two agree on what a parameter accepts (strings, tables, userdata names, missing values).
    func testMessagesMatchLuasOwnFunctions() throws {
        let rt = runtime { m in
            m.function("rep") { (s: String, n: Int) -> String in String(repeating: s, count: n) }
            m.function("concat") { (t: LuaTable) in _ = t }
        }
        defer { rt.close() }
        // Called the way scripts call them (a field call), so that Lua names its own function
        // by the call site, as it does.
        for args in ["{}", "nil", "", "true", "io.stdout", "'x', 'y'", "'x', 1.5", "'x', {}"] {
            let ours = message(rt, "function() return host.rep(\(args)) end")
            let lua = message(rt, "function() return string.rep(\(args)) end")
            XCTAssertEqual(ours, lua, args)
        }
        XCTAssertEqual(message(rt, "function() return host.concat('x') end"), message(rt, "function() return table.concat('x') end"))
    }

    /// Side by side with the stock `lua5.4` command: an integer parameter given a string, or
    /// missing, has `string.rep`'s words ("number expected"), as do `Int32`, `Int64` and `Double`.
    func testIntegerParametersMatchStockLua() throws {
        let rt = runtime { m in
            m.function("rep") { (s: String, n: Int) -> String in String(repeating: s, count: n) }
            m.function("rep32") { (s: String, n: Int32) -> String in String(repeating: s, count: Int(n)) }
            m.function("rep64") { (s: String, n: Int64) -> String in String(repeating: s, count: Int(n)) }
            m.function("repd") { (s: String, n: Double) -> String in String(repeating: s, count: Int(n)) }
        }
        defer { rt.close() }
        let calls = ["'x', 'a'", "'x'", "'x', nil", "'x', {}", "'x', 1.5"]
        let script = calls.map { "print(select(2, pcall(function() return string.rep(\($0)) end)))" }.joined(separator: "\n")
        let stock = try Self.stockLua(script).split(separator: "\n").map(String.init)
        XCTAssertEqual(stock.count, calls.count, "lua5.4 printed \(stock)")
        XCTAssertEqual(stock.prefix(2), ["stdin:1: bad argument #2 to 'rep' (number expected, got string)",
                                         "stdin:2: bad argument #2 to 'rep' (number expected, got no value)"])
        // The position differs (stdin's line n, this chunk's line 1); the rest is the same text.
        let position = #/^[a-z]+:[0-9]+: /#
        for (call, lua) in zip(calls, stock) {
            let ours = message(rt, "function() return host.rep(\(call)) end")
            XCTAssertEqual(ours.replacing(position, with: ""), lua.replacing(position, with: ""), call)
        }
        for name in ["rep32", "rep64", "repd"] {
            XCTAssertEqual(message(rt, "host.\(name), 'x', 'a'"), "bad argument #2 to '\(name)' (number expected, got string)")
            XCTAssertEqual(message(rt, "host.\(name), 'x'"), "bad argument #2 to '\(name)' (number expected, got no value)")
        }
    }

    /// What `lua5.4 -` prints for `script` (standard output and error).
    static func stockLua(_ script: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["lua5.4", "-"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = output
        try p.run()
        input.fileHandleForWriting.write(Data(script.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    struct DiskFull: Error, CustomStringConvertible { var description: String { "disk full" } }

    /// A thrown error is a Lua error naming the function; `LuaError.message` is raised as it is.
    func testThrownErrorsBecomeLuaErrors() throws {
        let rt = runtime { m in
            m.function("save") { (_: String) throws in throw DiskFull() }
            m.function("check") { (n: Int) throws -> Int in
                guard n > 0 else { throw LuaError.argument(1, "positive integer expected") }
                return n
            }
            m.function("bad_result") { () -> [String: LuaValue] in ["f": .function(Self.foreignFunction)] }
        }
        defer { rt.close() }
        XCTAssertEqual(message(rt, "host.save, 'x'"), "save: disk full")
        XCTAssertEqual(message(rt, "function() host.check(-1) end"), "test:1: bad argument #1 to 'check' (positive integer expected)")
        XCTAssertEqual(message(rt, "host.bad_result"),
                       "bad_result: result: f: a Lua value of another interpreter cannot be used here")
    }

    static let other = TestRuntimes.make()
    static var foreignFunction: LuaFunction { try! other.load("return 1") }

    /// The untyped form keeps its behaviour and now takes functions too.
    func testUntypedFunctionsTakeFunctions() throws {
        let rt = runtime { m in
            m.function("apply") { args in
                guard case .function(let f) = args[0] else { return [] }
                return try f.call(arguments: Array(args.dropFirst()))
            }
        }
        defer { rt.close() }
        XCTAssertEqual(try rt.run(string: "return require('host').apply(function(a, b) return a + b, a * b end, 3, 4)"), [7, 12])
    }

    /// A Swift function made a Lua value: stored in a table, called by Lua later, freed when Lua
    /// drops it.
    func testSwiftFunctionsAsLuaValues() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let calls = CallCounter()
        weak var weakProbe: Probe?
        do {
            let probe = Probe()
            weakProbe = probe
            let double = try rt.makeFunction("double") { (n: Int) -> Int in
                calls.add()
                _ = probe
                return n * 2
            }
            try rt.globals.set("handlers", ["double": LuaValue.function(double)] as [String: LuaValue])
        }
        XCTAssertEqual(try rt.run(string: "return handlers.double(21), select(2, pcall(handlers.double, 'x'))", name: "=test"),
                       [42, "bad argument #1 to 'double' (number expected, got string)"])
        XCTAssertNotNil(weakProbe)
        try rt.run(string: "handlers = nil; collectgarbage(); collectgarbage()")
        XCTAssertNil(weakProbe, "the Swift closure was not released when Lua dropped the function")
        XCTAssertEqual(calls.value, 1, "a call whose arguments do not convert never reaches Swift")
    }
}

final class Probe: @unchecked Sendable {}

final class CallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add(_ k: Int = 1) { lock.withLock { n += k } }
    var value: Int { lock.withLock { n } }
}
