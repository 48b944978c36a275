import Foundation
import XCTest

/// `dispatch.so` loaded by Debian's stock `lua5.4` (the module product of this package).
enum StockLua {
    static let interpreter = URL(fileURLWithPath: "/usr/bin/lua5.4")

    /// A directory holding `dispatch.so`, linked to the module built next to the tests.
    static let moduleDirectory: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dispatch-module-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let link = dir.appendingPathComponent("dispatch.so")
        try? FileManager.default.removeItem(at: link)
        try? FileManager.default.createSymbolicLink(
            at: link, withDestinationURL: CLI.productsDirectory.appendingPathComponent("libLuaDispatchModule.so"))
        return dir
    }()

    /// What makes `require "dispatch"` find the module.
    static var cpath: String { "package.cpath = '\(moduleDirectory.path)/?.so;' .. package.cpath" }

    static func run(_ arguments: [String], timeout: TimeInterval = 60, started: ((Process) -> Void)? = nil) throws -> CLIResult {
        XCTAssertTrue(FileManager.default.fileExists(atPath: CLI.productsDirectory.appendingPathComponent("libLuaDispatchModule.so").path),
                      "the module is built by `swift build` (product LuaDispatchModule)")
        let environment = sanitizerRuntime.map { ["LD_PRELOAD": $0] } ?? [:]
        return try CLI.run(arguments, environment: environment, timeout: timeout, executable: interpreter, started: started)
    }

    /// In an AddressSanitizer build (scripts/sanitize/asan) the module needs the sanitizer's
    /// runtime, which lua5.4 does not have: it is preloaded, so that the module runs checked too.
    static let sanitizerRuntime: String? = {
        guard dlsym(dlopen(nil, RTLD_NOW), "__asan_init") != nil,
              // procfs files report size 0: read to the end instead of by size.
              let data = FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile(),
              case let maps = String(decoding: data, as: UTF8.self),
              let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libswiftCore.so") }),
              let path = line.split(separator: " ").last
        else { return nil }
        // <toolchain>/usr/lib/swift/linux/libswiftCore.so -> <toolchain>/usr/lib/clang/*/lib/linux
        let lib = URL(fileURLWithPath: String(path)).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("clang")
        for version in (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? [] {
            let so = lib.appendingPathComponent("\(version)/lib/linux/libclang_rt.asan-x86_64.so").path
            if FileManager.default.fileExists(atPath: so) { return so }
        }
        XCTFail("no libclang_rt.asan-x86_64.so under \(lib.path)")
        return nil
    }()

    /// Runs `code` as a file under `lua5.4`, with the module on `package.cpath`.
    static func script(_ code: String, timeout: TimeInterval = 60, started: ((Process) -> Void)? = nil) throws -> CLIResult {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("module-\(UUID().uuidString).lua")
        try (cpath + "\n" + code).write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try run([file.path], timeout: timeout, started: started)
    }
}

final class ModuleTests: XCTestCase {
    /// The command the README gives, verbatim apart from the directory.
    func testTickFromStockLua() throws {
        let r = try StockLua.run(["-e", StockLua.cpath + "; local d = require 'dispatch'; "
                                  + "d.main:after(0.1, function() print('tick') end); d.run()"])
        XCTAssertEqual(r.stdout, "tick\n", r.stderr)
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stderr, "")
    }

    func testLoadsWithDashL() throws {
        let r = try StockLua.run(["-e", StockLua.cpath, "-l", "dispatch", "-e", "print(type(dispatch.queue), dispatch.main.label)"])
        XCTAssertEqual(r.stdout, "function\tcom.apple.main-thread\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// Workers, groups, sync, tasks and the main queue, with the order Dispatch promises.
    func testRuntimeAttachedToStockLua() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            assert(require("dispatch") == dispatch)
            local q = dispatch.queue("worker")
            local group = dispatch.group()
            local done = {}
            for i = 1, 3 do
              q:async(function() dispatch.sleep(0.01) done[#done + 1] = i end, {group = group})
            end
            group:notify(dispatch.main, function()
              print("notify", table.concat(done, ","), dispatch.thread().is_main)
            end)
            print("sync", q:sync(function() return #done end))
            local t = dispatch.task(function() dispatch.sleep(0.01) return "task result" end)
            print("run", dispatch.run())
            print("wait", t:wait())
            -- a second require after unloading finds the same runtime
            package.loaded.dispatch = nil
            print("same", require("dispatch") == dispatch)
            """)
        XCTAssertEqual(r.stdout, "sync\t3\nnotify\t1,2,3\ttrue\nrun\tfalse\nwait\ttrue\ttask result\nsame\ttrue\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// A coroutine made before `require` has no runtime in its extra space of its own.
    func testCoroutineMadeBeforeRequire() throws {
        let r = try StockLua.script("""
            local co = coroutine.wrap(function()
              local d = require("dispatch")
              local q = d.queue("from a coroutine")
              coroutine.yield(q:sync(function() return q.label end))
            end)
            print(co())
            """)
        XCTAssertEqual(r.stdout, "from a coroutine\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    func testRunModes() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            local n = 0
            print("nowait idle", dispatch.run("nowait"))
            dispatch.main:after(0.05, function() n = n + 1 end)
            dispatch.main:after(0.4, function() n = n + 1 end)
            print("nowait", dispatch.run("nowait"), n)
            print("once", dispatch.run("once"), n)
            print("once", dispatch.run("once"), n)
            local q = dispatch.queue("bg")
            local finished = false
            q:async(function() dispatch.sleep(0.05) finished = true end)
            print("once until idle", dispatch.run("once"), finished)
            print(pcall(dispatch.run, "forever"))
            dispatch.main:async(function() print(pcall(dispatch.run)) end)
            dispatch.run()
            """)
        XCTAssertEqual(r.stdout, """
            nowait idle\tfalse
            nowait\ttrue\t0
            once\ttrue\t1
            once\tfalse\t2
            once until idle\tfalse\ttrue
            false\tbad argument #1 to 'run' (invalid option 'forever')
            false\tdispatch.run: cannot be called from a block, a handler or a task

            """, r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// The same modes through the CLI (the chunk runs on a pooled thread there).
    func testRunInTheCLI() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            local n = 0
            dispatch.main:after(0.05, function() n = n + 1 end)
            print(dispatch.run("once"), n)
            print(dispatch.run("nowait"), n)
            """)
        XCTAssertEqual(r.stdout, "false\t1\nfalse\t1\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// A task's error that nobody waits for is reported when the chunk hands over to
    /// `dispatch.run`, or when the state closes; either way the exit status is 1.
    func testUnobservedTaskErrorsAreReported() throws {
        let atRun = try StockLua.script("""
            local dispatch = require("dispatch")
            dispatch.task(function() error("failed before run") end)
            dispatch.sleep(0.05)
            io.stderr:write("before run\\n")
            dispatch.run()
            io.stderr:write("after run\\n")
            """)
        XCTAssertTrue(atRun.stderr.hasPrefix("before run\n"), atRun.stderr)
        XCTAssertTrue(atRun.stderr.contains("failed before run"), atRun.stderr)
        XCTAssertTrue(atRun.stderr.hasSuffix("after run\n"), atRun.stderr)
        XCTAssertEqual(atRun.status, 1)

        let atClose = try StockLua.script("""
            local dispatch = require("dispatch")
            local t = dispatch.task(function() error("failed before close") end)
            dispatch.sleep(0.05)
            print("end of chunk")
            """)
        XCTAssertEqual(atClose.stdout, "end of chunk\n")
        XCTAssertTrue(atClose.stderr.contains("failed before close"), atClose.stderr)
        XCTAssertEqual(atClose.status, 1)
    }

    func testUncaughtBlockErrorMakesStatusOne() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            dispatch.queue("q"):async(function() error("boom") end)
            dispatch.run()
            """)
        XCTAssertTrue(r.stderr.contains("error in block on queue 'q'"), r.stderr)
        XCTAssertTrue(r.stderr.contains("boom"), r.stderr)
        XCTAssertEqual(r.status, 1)
    }

    /// The state closes while workers are parked, blocks wait for the lock and sources are
    /// live: the runtime detaches, lua_close unloads the module (which stays mapped), and the
    /// process exits cleanly every time.
    func testClosingWithWorkInFlight() throws {
        for _ in 0..<5 {
            let r = try StockLua.script("""
                local dispatch = require("dispatch")
                local q = dispatch.queue("c", {concurrent = true})
                for i = 1, 8 do q:async(function() dispatch.sleep(0.02 * i) end) end
                local s = dispatch.source.timer{deadline = 0.01, interval = 0.01, queue = q}
                s:set_event_handler(function() end)
                s:resume()
                dispatch.sleep(0.03)
                print("closing")
                """)
            XCTAssertEqual(r.stdout, "closing\n", r.stderr)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
    }

    /// One Ctrl-C ends `dispatch.run` with lua5.4's "interrupted!", like any running chunk.
    func testOneInterruptEndsRun() throws {
        let r = try StockLua.script("""
            local dispatch = require("dispatch")
            local function again() dispatch.main:after(0.02, again) end
            again()
            print("running") io.stdout:flush()
            print(pcall(dispatch.run))
            """, timeout: 30) { p in
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { kill(p.processIdentifier, SIGINT) }
            }
        XCTAssertEqual(r.stdout, "running\nfalse\tinterrupted!\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// The definitions check bites: a function dropped from the definitions, one defined but not
    /// documented, and (with the module loaded) one the module lacks, each fail it.
    func testTypesCheckFailsWhenDocsAndDefinitionsDisagree() throws {
        let root = CLI.packageRoot
        let check = root.appendingPathComponent("Tests/lua/check-types.lua").path
        let ok = try StockLua.run(["-e", StockLua.cpath, check, root.path])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.contains("agree") && ok.stdout.contains("the loaded module"), ok.stdout)

        let types = try String(contentsOf: root.appendingPathComponent("types/dispatch.lua"), encoding: .utf8)
        let mutants: [(String, String, String)] = [
            ("function dispatch.run(mode) end", "", "documented but not defined: dispatch.run"),
            ("function semaphore:signal() end", "", "documented but not defined: dispatch.semaphore:signal"),
            ("return dispatch", "function dispatch.frobnicate() end\nreturn dispatch", "defined but not documented: dispatch.frobnicate"),
        ]
        for (from, to, expected) in mutants {
            XCTAssertTrue(types.contains(from), from)
            let copy = FileManager.default.temporaryDirectory.appendingPathComponent("types-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: copy.appendingPathComponent("types"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: root.appendingPathComponent("docs"), to: copy.appendingPathComponent("docs"))
            defer { try? FileManager.default.removeItem(at: copy) }
            try types.replacingOccurrences(of: from, with: to)
                .write(to: copy.appendingPathComponent("types/dispatch.lua"), atomically: false, encoding: .utf8)
            let r = try StockLua.run([check, copy.path])
            XCTAssertEqual(r.status, 1, expected)
            XCTAssertTrue(r.stderr.contains(expected), r.stderr)
        }
        // A function the module has and neither the docs nor the definitions know.
        let extra = try StockLua.run(["-e", StockLua.cpath + "; require('dispatch').secret = function() end", check, root.path])
        XCTAssertEqual(extra.status, 1)
        XCTAssertTrue(extra.stderr.contains("in the module but not defined: dispatch.secret"), extra.stderr)
    }
}
