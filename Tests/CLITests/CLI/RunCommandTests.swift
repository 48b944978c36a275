import XCTest

/// `luadispatch run` and `-e`: output, exit status and lifetime, as a user sees them.
final class RunCommandTests: XCTestCase {
    func testStringOfCodeRuns() throws {
        let r = try CLI.run(["-e", "print('hello', require('dispatch').thread().number)"])
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stdout, "hello\t1\n")
        XCTAssertEqual(r.stderr, "")
    }

    func testScriptArgumentsAreInArgAndVarargs() throws {
        let r = try CLI.script("print(#arg, arg[1], arg[2], ...)", arguments: ["one", "--two"])
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stdout, "2\tone\t--two\tone\t--two\n")
    }

    func testTheMainQueueIsServicedUntilNoWorkIsLeft() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            local q = dispatch.queue("worker")
            q:after(0.05, function()
              dispatch.main:async(function() print("main", dispatch.thread().is_main) end)
            end)
            print("script done")
            """)
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stdout, "script done\nmain\ttrue\n")
    }

    func testUncaughtBlockErrorIsReportedOtherWorkGoesOnAndStatusIsOne() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            dispatch.queue("com.example.failing"):async(function() error("kaboom") end)
            dispatch.queue("other"):after(0.05, function() print("other work ran") end)
            """)
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stdout, "other work ran\n")
        XCTAssertTrue(r.stderr.contains("com.example.failing"), r.stderr)
        XCTAssertTrue(r.stderr.contains("kaboom"), r.stderr)
        XCTAssertTrue(r.stderr.contains("stack traceback"), r.stderr)
    }

    func testErrorHandlerReplacesTheDefaultReport() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            dispatch.set_error_handler(function(msg, tb, label) print("handled:", label, (msg:gsub("^.-:%d+: ", ""))) end)
            dispatch.queue("q"):async(function() error("oops") end)
            """)
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stdout, "handled:\tq\toops\n")
        XCTAssertEqual(r.stderr, "")
    }

    func testMainChunkErrorExitsOne() throws {
        let r = try CLI.script("print('before'); error('top level')")
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stdout, "before\n")
        XCTAssertTrue(r.stderr.contains("top level") && r.stderr.contains("stack traceback"), r.stderr)
    }

    func testSyntaxErrorAndMissingFile() throws {
        let syntax = try CLI.script("print('unterminated)")
        XCTAssertNotEqual(syntax.status, 0)
        XCTAssertTrue(syntax.stderr.contains("unfinished string"), syntax.stderr)
        let missing = try CLI.run(["run", "/nonexistent/script.lua"])
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("cannot open /nonexistent/script.lua"), missing.stderr)
        let e = try CLI.run(["-e", "x = = 1"])
        XCTAssertNotEqual(e.status, 0)
        XCTAssertTrue(e.stderr.contains("unexpected symbol"), e.stderr)
    }

    func testWorkLeftOnSuspendedOrInactiveQueuesEndsWithAWarning() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            local s = dispatch.queue("held.suspended"); s:suspend()
            s:async(function() print("never") end); s:async(function() print("never") end)
            local i = dispatch.queue{label = "held.inactive", inactive = true}
            i:async(function() print("never") end)
            local child = dispatch.queue{label = "held.child", target = s}
            child:async(function() print("never") end)
            print("end of script")
            """)
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.stdout, "end of script\n")
        XCTAssertTrue(r.stderr.contains("'held.suspended' (suspended, 2 blocks)"), r.stderr)
        XCTAssertTrue(r.stderr.contains("'held.inactive' (inactive, 1 block)"), r.stderr)
        XCTAssertTrue(r.stderr.contains("'held.child'"), r.stderr)
    }

    func testExitEndsTheProcessWithItsCodeAfterFlushingOutput() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            io.write("buffered ")
            dispatch.queue("q"):after(0.02, function() print("from a block"); dispatch.exit(3) end)
            dispatch.queue("never"):after(30, function() print("too late") end)
            """)
        XCTAssertEqual(r.status, 3)
        XCTAssertEqual(r.stdout, "buffered from a block\n")
    }

    func testMisuseRaisesAndTheProcessSurvives() throws {
        let r = try CLI.script("""
            local dispatch = require("dispatch")
            local q = dispatch.queue("self")
            print(pcall(q.sync, q, function() q:sync(function() end) end))
            print(pcall(dispatch.main.sync, dispatch.main, print))
            print(pcall(q.resume, q))
            print(pcall(dispatch.group().leave, dispatch.group()))
            print("alive")
            """)
        XCTAssertEqual(r.status, 0)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 5)
        XCTAssertTrue(lines[0].hasPrefix("false") && lines[0].contains("'self'") && lines[0].contains("deadlock"))
        XCTAssertTrue(lines[1].hasPrefix("false") && lines[1].contains("main queue"))
        XCTAssertTrue(lines[2].hasPrefix("false") && lines[2].contains("not suspended"))
        XCTAssertTrue(lines[3].hasPrefix("false") && lines[3].contains("not entered"))
        XCTAssertEqual(lines[4], "alive")
    }

    /// An error in the main chunk ends the process at once, even with a block parked for ever
    /// (the interpreter is not closed then: closing would wait for that block).
    func testMainChunkErrorWithAParkedBlockExitsAtOnce() throws {
        let t0 = Date()
        let r = try CLI.run(["-e", "local d = require('dispatch'); d.queue('q'):async(function() d.semaphore(0):wait() end); d.sleep(0.1); error('x')"], timeout: 30)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("(command line):1: x"), r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(t0), 20)
    }
}
