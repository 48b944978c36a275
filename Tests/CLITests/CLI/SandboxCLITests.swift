import Foundation
import XCTest

/// `luadispatch --sandbox`: hostile scripts end with status 1 and a clear message, never a crash,
/// and leave no file behind; the same scripts without `--sandbox` do get out (the checks bite).
/// Lua modules, a binary chunk and a C module (built here) sit in a directory put on
/// LUA_PATH_5_4 and LUA_CPATH_5_4, which the interpreter reads when it is made.
final class SandboxCLITests: XCTestCase {
    private var dir: URL!
    private var environment: [String: String] { ["LUA_PATH_5_4": dir.path + "/?.lua", "LUA_CPATH_5_4": dir.path + "/?.so"] }

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try "return {answer = 42}\n".write(to: dir.appendingPathComponent("mod.lua"), atomically: false, encoding: .utf8)
        // A C module whose function writes a file, built with the toolchain's clang.
        let source = dir.appendingPathComponent("cmod.c")
        try """
            #include <lua5.4/lua.h>
            #include <lua5.4/lauxlib.h>
            #include <stdio.h>
            static int touch(lua_State *L) { FILE *f = fopen(luaL_checkstring(L, 1), "w"); if (f) fclose(f); return 0; }
            int luaopen_cmod(lua_State *L) { lua_newtable(L); lua_pushcfunction(L, touch); lua_setfield(L, -2, "touch"); return 1; }
            """.write(to: source, atomically: false, encoding: .utf8)
        let clang = URL(fileURLWithPath: StockLua.toolchainLib.path + "/../../../bin/clang").standardized
        let cc = try CLI.run(["-shared", "-fPIC", "-o", dir.appendingPathComponent("cmod.so").path, source.path], executable: clang)
        XCTAssertEqual(cc.status, 0, cc.stderr)
        // A binary chunk where a Lua module is looked for, and a binary script.
        let dump = try CLI.run(["-e", """
            local function write(name, f) local h = assert(io.open(name, 'wb')); h:write(string.dump(f)); h:close() end
            write('\(dir.path)/binmod.lua', function() return {answer = 1} end)
            write('\(dir.path)/script.luac', function() print('binary script ran') end)
            """])
        XCTAssertEqual(dump.status, 0, dump.stderr)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    private func run(_ arguments: [String], stdin: String? = nil) throws -> CLIResult {
        try CLI.run(arguments, stdin: stdin, environment: environment, timeout: 60, directory: dir)
    }

    private func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path) }

    /// Each script tries one way out (`@` is the test's directory), and must end with status 1,
    /// the message given, and no file `escape` behind it. Without the sandbox, those marked
    /// `escapes` do write the file.
    func testHostileScriptsEndWithStatusOneAndAClearMessage() throws {
        let cases: [(code: String, message: String, escapes: Bool)] = [
            ("assert(load(string.dump(function() return 1 end)))()", "attempt to load a binary chunk (mode is 't')", false),
            ("require('cmod').touch('@/escape')",
             "module 'cmod' is a C module ('@/cmod.so'): the sandbox loads Lua modules only", true),
            ("package.loadlib('@/cmod.so', 'luaopen_cmod')().touch('@/escape')",
             "attempt to call a nil value (field 'loadlib')", true),
            ("require('binmod')", "error loading module 'binmod' from file '@/binmod.lua':\n\tattempt to load a binary chunk (mode is 't')", false),
            ("package.path = '@/?.luac'", "package.path cannot be changed in the sandbox", false),
            ("io.open('@/escape', 'w'):write('x')", "attempt to index a nil value (global 'io')", true),
            ("os.execute('touch @/escape')", "attempt to call a nil value (field 'execute')", true),
            ("os.rename(os.tmpname(), '@/escape')", "attempt to call a nil value (field 'tmpname')", true),
            ("os.exit(3)", "attempt to call a nil value (field 'exit')", false),
            ("require('dispatch').exit(3)", "attempt to call a nil value (field 'exit')", false),
            ("dofile('@/mod.lua')", "attempt to call a nil value (global 'dofile')", false),
            ("debug.getregistry()", "attempt to index a nil value (global 'debug')", false),
            ("require('dispatch').fd.close(require('dispatch').fd.open('@/escape', 'w'))",
             "attempt to index a nil value (field 'fd')", true),
            ("local d = require('dispatch'); local c = d.io{path = '@/escape', mode = 'w'}; c:write(0, 'x', d.main, function(done) if done then c:close() end end)",
             "attempt to call a nil value (field 'io')", true),
            ("require('dispatch').global():async(function() io.open('@/escape', 'w'):close() end)",
             "attempt to index a nil value (global 'io')", true),
            ("require('dispatch').concurrent_map(2, function() io.open('@/escape', 'w'):close() end)",
             "concurrent_map: iteration 1: ", true),
            ("local p = require('dispatch').workers{count = 1}; p:submit(function() require('cmod').touch('@/escape') end):wait()",
             "module 'cmod' is a C module", true),
            ("require('scenario')", "module 'scenario' not found", false),
        ]
        for (code, message, escapes) in cases {
            let code = code.replacingOccurrences(of: "@", with: dir.path)
            let message = message.replacingOccurrences(of: "@", with: dir.path)
            let r = try run(["--sandbox", "-e", code])
            XCTAssertEqual(r.status, 1, "\(code)\n\(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(code)\nexpected: \(message)\ngot: \(r.stderr)")
            XCTAssertFalse(exists("escape"), code)
            if escapes {
                let control = try run(["-e", code])
                XCTAssertEqual(control.status, 0, "without --sandbox: \(code)\n\(control.stderr)")
                XCTAssertTrue(exists("escape"), "without --sandbox, \(code) writes the file")
                try? FileManager.default.removeItem(at: dir.appendingPathComponent("escape"))
            }
        }
    }

    func testLuaModulesOnThePathLoad() throws {
        let r = try run(["--sandbox", "-e", "print(require('mod').answer, package.path)"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "42\t\(dir.path)/?.lua\n")
        let l = try run(["--sandbox", "-l", "mod", "-e", "print(mod.answer)"])
        XCTAssertEqual(l.status, 0, l.stderr)
        XCTAssertEqual(l.stdout, "42\n")
        // -l of a C module is refused the same way.
        let c = try run(["--sandbox", "-l", "cmod", "-e", "print('ran')"])
        XCTAssertEqual(c.status, 1, c.stderr)
        XCTAssertTrue(c.stderr.contains("module 'cmod' is a C module"), c.stderr)
        XCTAssertEqual(c.stdout, "")
    }

    /// The script itself, standard input and LUA_INIT are loaded as text only too.
    func testBinaryScriptsAreRefused() throws {
        let script = dir.appendingPathComponent("script.luac").path
        let plain = try run([script])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(plain.stdout, "binary script ran\n")
        let sandboxed = try run(["--sandbox", script])
        XCTAssertEqual(sandboxed.status, 1)
        XCTAssertTrue(sandboxed.stderr.contains("attempt to load a binary chunk (mode is 't')"), sandboxed.stderr)
        XCTAssertEqual(sandboxed.stdout, "")
        let binary = try String(contentsOfFile: script, encoding: .isoLatin1)
        let piped = try CLI.run(["--sandbox", "-"], stdin: binary, environment: environment, directory: dir)
        XCTAssertEqual(piped.status, 1)
        XCTAssertTrue(piped.stderr.contains("attempt to load a binary chunk"), piped.stderr)
        let initialised = try CLI.run(["--sandbox", "-e", "print('main')"], environment: environment.merging(["LUA_INIT": "@" + script]) { $1 },
                                      directory: dir)
        XCTAssertEqual(initialised.status, 1)
        XCTAssertTrue(initialised.stderr.contains("attempt to load a binary chunk"), initialised.stderr)
        XCTAssertEqual(initialised.stdout, "")
    }

    /// `--sandbox` is an option like lua's: before the script, with lua's other options in any
    /// order; after the script it is the script's argument.
    func testTheOptionEndsWhereLuasOptionsEnd() throws {
        let script = dir.appendingPathComponent("show.lua")
        try "print(io == nil, ...)".write(to: script, atomically: false, encoding: .utf8)
        XCTAssertEqual(try run(["--sandbox", script.path, "a"]).stdout, "true\ta\n")
        XCTAssertEqual(try run(["run", "--sandbox", script.path]).stdout, "true\n")
        XCTAssertEqual(try run([script.path, "--sandbox"]).stdout, "false\t--sandbox\n")
        XCTAssertEqual(try run(["-E", "--sandbox", "-e", "x = 1", script.path]).stdout, "true\n")
        XCTAssertEqual(try run(["-e", "print(io == nil)", "--sandbox"]).stdout, "true\n")
        // With -E the default path, as lua's; the sandbox keeps whatever path it was given.
        XCTAssertFalse(try run(["-E", "--sandbox", "-e", "print(package.path)"]).stdout.contains(dir.path))
        let trace = dir.appendingPathComponent("t.json").path
        let traced = try run(["--sandbox", "--trace", trace, "-e", "print(io == nil)"])
        XCTAssertEqual(traced.stdout, "true\n", traced.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: trace))
        let unknown = try run(["--sandboxed", "-e", "print(1)"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("unrecognized option '--sandboxed'"), unknown.stderr)
        let stopped = try run(["--", "--sandbox"])
        XCTAssertEqual(stopped.status, 1)
        XCTAssertTrue(stopped.stderr.contains("cannot open --sandbox"), stopped.stderr)
        let prompt = try run(["--sandbox", "-i"], stdin: "print(io, os.getenv)\n")
        XCTAssertTrue(prompt.stdout.contains("nil\tnil"), prompt.stdout + prompt.stderr)
    }
}
