import Foundation
import XCTest

/// `luadispatch` as a drop-in `lua`: every case runs the built binary and Debian's `lua5.4` on
/// the same arguments, standard input and environment, and requires the same standard output,
/// standard error (each program's own path replaced by PROG) and exit status.
final class LuaCompatTests: XCTestCase {
    static let lua = URL(fileURLWithPath: "/usr/bin/lua5.4")
    var dir: URL!

    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: Self.lua.path), "lua5.4 is not installed (scripts/setup --tests installs it)")
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("compat-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try write("args.lua", """
            for i = -3, #arg do io.write(i, "=", tostring(arg[i]), " ") end
            print("|", ...)
            """)
        try write("mod.lua", "print('loading mod', ...); return {name = 'mod'}")
        try write("fails.lua", "print('before'); local t = nil; return t.x")
        try write("syntax.lua", "print('unterminated)")
        try write("init.lua", "print('init file ran')")
        try write("tableerr.lua", "error({code = 1})")
        try write("tostringerr.lua", "error(setmetatable({}, {__tostring = function() return 'custom message' end}))")
        try write("exit.lua", "io.write('no newline'); os.exit(3)")
        try write("exitfalse.lua", "io.write('x'); os.exit(false)")
        try write("exittrue.lua", "os.exit(true, true)")
        try write("warn.lua", "warn('@on'); warn('visible'); warn('@off'); warn('hidden')")
    }

    override func tearDownWithError() throws {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    func write(_ name: String, _ code: String) throws {
        try code.write(to: dir.appendingPathComponent(name), atomically: false, encoding: .utf8)
    }

    /// Runs both and compares; `env` is added to an environment without LUA_INIT*.
    /// `addedLine`: the index of a line of standard output that luadispatch adds (`-v`).
    func same(_ args: [String], stdin: String? = nil, env: [String: String] = [:], addedLine: Int? = nil,
              file: StaticString = #filePath, line: UInt = #line) throws {
        var environment = ProcessInfo.processInfo.environment
        for k in ["LUA_INIT", "LUA_INIT_5_4", "LUA_PATH", "LUA_PATH_5_4"] { environment.removeValue(forKey: k) }
        environment.merge(env) { $1 }
        var ours = try Self.run(CLI.binary, args, stdin: stdin, env: environment, dir: dir)
        let theirs = try Self.run(Self.lua, args, stdin: stdin, env: environment, dir: dir)
        let what = "arguments \(args)"
        if let addedLine {
            var lines = ours.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            XCTAssertTrue(lines.count > addedLine && lines[addedLine].hasPrefix("LuaDispatch "), "\(what): \(ours.stdout)", file: file, line: line)
            if lines.count > addedLine { lines.remove(at: addedLine) }
            ours = CLIResult(status: ours.status, stdout: lines.joined(separator: "\n"), stderr: ours.stderr)
        }
        XCTAssertEqual(ours.stdout, theirs.stdout, "stdout, \(what)", file: file, line: line)
        XCTAssertEqual(ours.stderr, theirs.stderr, "stderr, \(what)", file: file, line: line)
        XCTAssertEqual(ours.status, theirs.status, "status, \(what)", file: file, line: line)
    }

    static func run(_ exe: URL, _ args: [String], stdin: String?, env: [String: String], dir: URL) throws -> CLIResult {
        let r = try CLI.run(args, stdin: stdin, environment: env, directory: dir, executable: exe)
        let norm = { (s: String) in s.replacingOccurrences(of: exe.path, with: "PROG") }
        return CLIResult(status: r.status, stdout: norm(r.stdout), stderr: norm(r.stderr))
    }

    func testStringsRunInOrder() throws {
        try same(["-e", "print(1, 2)"])
        try same(["-e", "x = 1", "-e", "print(x + 1)"])
        try same(["-eprint('joined')"])
        try same(["-e", "print(arg[-1], arg[0], #arg)"])
        try same(["-e", "print(...)"])
    }

    func testScriptArgumentsAndNegativeIndexes() throws {
        try same(["args.lua", "a", "b c"])
        try same(["-e", "x=1", "args.lua", "-e", "not an option"])
        try same(["-W", "args.lua"])
        try same(["--", "args.lua", "--"])
        try same(["-", "a", "b"], stdin: "print(..., arg[0], arg[-1])")
        try same(["--", "-"], stdin: "print('unused')")
        try same(["-e", "print(1)", "-", "x"], stdin: "print('stdin', ...)")
    }

    func testStandardInputIsTheScriptWhenNoneIsGiven() throws {
        try same([], stdin: "print('from stdin', #arg, arg[0])")
        try same([], stdin: "error('stdin fails')")
        try same(["-W"], stdin: "warn('on from stdin')")
        try same(["-e", "print(1)"], stdin: "print('not run')")
        try same(["-v"], stdin: "print('not run either')", addedLine: 0)
    }

    func testLibrariesWithDashL() throws {
        let env = ["LUA_PATH": dir.path + "/?.lua"]
        try same(["-l", "mod", "-e", "print(mod.name)"], env: env)
        try same(["-lmod", "-e", "print(type(mod))"], env: env)
        try same(["-l", "m=mod", "-e", "print(m.name, mod)"], env: env)
        try same(["-l", "nosuch"], env: env)
        try same(["-E", "-l", "mod"], env: env)
    }

    func testLuaInit() throws {
        try same(["-e", "print('main')"], env: ["LUA_INIT": "print('init')"])
        try same(["-e", "print('main')"], env: ["LUA_INIT": "@init.lua"])
        try same(["-e", "print('main')"], env: ["LUA_INIT": "print('plain')", "LUA_INIT_5_4": "print('versioned')"])
        try same(["-E", "-e", "print('main')"], env: ["LUA_INIT": "print('ignored')"])
        try same(["-e", "print('main')"], env: ["LUA_INIT": "error('in init')"])
        try same(["-e", "print('main')"], env: ["LUA_INIT": "@missing.lua"])
        try same(["-E", "-e", "print(package.path:find(';;') ~= nil)"], env: ["LUA_PATH": "/nowhere/?.lua"])
    }

    /// `-v` (and `-i`, which implies it): lua5.4's output with one line added before the
    /// banner, naming LuaDispatch's version and the Swift compiler's.
    func testVersionAndWarnings() throws {
        for args in [["-v"], ["-v", "-e", "print(1)"]] {
            try same(args, stdin: "print('read')", addedLine: 0)
        }
        let v = try Self.run(CLI.binary, ["-v"], stdin: nil, env: [:], dir: dir)
        XCTAssertTrue(v.stdout.range(of: #"^LuaDispatch [0-9]+\.[0-9]+\.[0-9]+ .*Swift [0-9]+\.[0-9]+"#, options: .regularExpression) != nil,
                      v.stdout)
        try same(["-W", "-e", "warn('hello', ' world')"])
        try same(["-e", "warn('silent')"])
        try same(["warn.lua"])
    }

    /// A bad option: lua5.4's message and usage lines, its status and (empty) standard output;
    /// the usage goes on to name luadispatch's own options and commands.
    func testBadOptions() throws {
        for args in [["-x"], ["-e"], ["-l"], ["-e", "-x"], ["-ix"], ["-vx"], ["-Ex"], ["-Wx"], ["--x"], ["-h"], ["-e", "print(1)", "-z"]] {
            let ours = try Self.run(CLI.binary, args, stdin: nil, env: [:], dir: dir)
            let theirs = try Self.run(Self.lua, args, stdin: nil, env: [:], dir: dir)
            XCTAssertEqual(ours.stdout, theirs.stdout, "\(args)")
            XCTAssertEqual(ours.status, theirs.status, "\(args)")
            XCTAssertTrue(ours.stderr.hasPrefix(theirs.stderr), "\(args): lua's lines first\n\(ours.stderr)\n---\n\(theirs.stderr)")
            for name in ["--trace FILE", "--sandbox", "--memory-limit SIZE", "--time-limit SECONDS", "--help",
                         "PROG run script", "PROG scenarios list", "PROG scenarios run", "PROG scenarios exec", "PROG trace view"] {
                XCTAssertTrue(ours.stderr.contains(name), "\(args): \(name) named in\n\(ours.stderr)")
            }
        }
    }

    func testErrorsAndTracebacks() throws {
        try same(["fails.lua"])
        try same(["syntax.lua"])
        try same(["missing.lua"])
        try same(["tableerr.lua"])
        try same(["tostringerr.lua"])
        try same(["-e", "error('in -e')"])
        try same(["-e", "x = = 1"])
        try same(["-e", "error()"])
        try same(["-e", "error('no position', 0)"])
        try same(["-e", "local function f() error('deep') end local function g() f() end g()"])
        try same(["-e", "error('first')", "-e", "print('not reached')"])
    }

    func testExitStatusesAndFlushing() throws {
        try same(["exit.lua"])
        try same(["exitfalse.lua"])
        try same(["exittrue.lua"])
        try same(["-e", "io.write('unflushed')"])
        try same(["-e", "io.stdout:setvbuf('full'); io.write('a'); io.stderr:write('b')"])
    }

    /// `run FILE` is `FILE`; `--trace FILE` before the script is taken by luadispatch.
    func testRunAliasAndTraceOption() throws {
        let direct = try Self.run(CLI.binary, ["args.lua", "x"], stdin: nil, env: ProcessInfo.processInfo.environment, dir: dir)
        let alias = try Self.run(CLI.binary, ["run", "args.lua", "x"], stdin: nil, env: ProcessInfo.processInfo.environment, dir: dir)
        XCTAssertEqual(alias.stdout, direct.stdout)
        XCTAssertEqual(alias.status, 0)
        let traced = try Self.run(CLI.binary, ["--trace", dir.path + "/t.json", "-e", "print(os.getenv('LUADISPATCH_TRACE'))"],
                                  stdin: nil, env: ProcessInfo.processInfo.environment, dir: dir)
        XCTAssertEqual(traced.stdout, dir.path + "/t.json\n")
        XCTAssertEqual(traced.status, 0)
        let scriptArg = try Self.run(CLI.binary, ["args.lua", "--trace", "x"], stdin: nil, env: ProcessInfo.processInfo.environment, dir: dir)
        XCTAssertTrue(scriptArg.stdout.contains("1=--trace 2=x"), "after the script it belongs to the script: \(scriptArg.stdout)")
    }
}
