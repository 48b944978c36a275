import Foundation
import XCTest

/// `--memory-limit` and `--time-limit` against hostile scripts: each ends with status 1 and a
/// clear message; the process neither crashes nor hangs.
final class LimitsCLITests: XCTestCase {
    private func hostile(_ code: String, _ options: [String], expect message: String..., within seconds: Double = 30,
                         file: StaticString = #filePath, line: UInt = #line) throws {
        let started = Date()
        let r = try CLI.run(options + ["-e", code], timeout: 60)
        XCTAssertEqual(r.status, 1, "stdout: \(r.stdout)\nstderr: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(message.contains { r.stderr.contains($0) }, r.stderr, file: file, line: line)
        XCTAssertFalse(r.stderr.contains("PANIC") || r.stderr.contains("AddressSanitizer"), r.stderr, file: file, line: line)
        XCTAssertLessThan(Date().timeIntervalSince(started), seconds, file: file, line: line)
    }

    private let memory = ["--memory-limit", "32M"]
    private let time = ["--time-limit", "1"]

    func testMemoryBombs() throws {
        try hostile("local t = {} local i = 0 while true do i = i + 1; t[i] = ('x'):rep(100) .. i end", memory,
                    expect: "not enough memory")
        try hostile("collectgarbage('stop') local t = {} while true do t[#t + 1] = {1, 2, 3} end", memory,
                    expect: "not enough memory")
        try hostile("""
            local dispatch = require('dispatch')
            local q = dispatch.queue{label = 'bombs', concurrent = true}
            for _ = 1, 4 do q:async(function() local t = {} while true do t[#t + 1] = {} end end) end
            """, memory, expect: "not enough memory")  // a block's, or the chunk's if the blocks filled memory first
        // Lua refuses the size itself, or the allocation fails: either is a clear error.
        try hostile("print(#('x'):rep(2^40))", memory, expect: "resulting string too large", "not enough memory")
        try hostile("print(#('x'):rep(2^30))", memory, expect: "not enough memory")
        try hostile("local function f(n) return 1 + f(n + 1) end print(f(1))", memory, expect: "stack overflow", "not enough memory")
    }

    /// Caught, the memory error leaves the script running: it frees what it built and goes on.
    func testMemoryErrorIsCatchable() throws {
        let r = try CLI.run(memory + ["-e", """
            local ok, err = pcall(function() local t = {} while true do t[#t + 1] = ('y'):rep(64) end end)
            collectgarbage()
            print(ok, err, #('z'):rep(1000))
            """])
        XCTAssertEqual(r.stdout, "false\tnot enough memory\t1000\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// With the collector stopped, what is refused is never allocated: the peak resident memory
    /// stays near the limit (without one, the same loop grows until the machine swaps).
    func testResidentMemoryStaysNearTheLimitWithTheCollectorStopped() throws {
        let r = try CLI.run(memory + ["-e", """
            collectgarbage('stop')
            local t = {}
            local ok, err = pcall(function() while true do t[#t + 1] = ('w'):rep(200) .. #t end end)
            t = nil
            local status = io.open('/proc/self/status'):read('a')
            print(err, status:match('VmHWM:%s*(%d+) kB'))
            """], timeout: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        let fields = r.stdout.split(separator: "\t")
        XCTAssertEqual(fields.first, "not enough memory", r.stdout)
        let peakKiB = Int(fields.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? .max
        // 32 MiB of Lua memory plus the program itself (about 30 MiB in a debug build). Under
        // AddressSanitizer the resident size says nothing (its allocator and shadow memory).
        if StockLua.sanitizerRuntime == nil {
            XCTAssertLessThan(peakKiB, 100 * 1024, "peak resident memory \(peakKiB) KiB")
        }
    }

    func testTimeLimits() throws {
        try hostile("while true do end", time, expect: "time limit exceeded", within: 15)
        try hostile("while true do pcall(function() while true do end end) end", time, expect: "time limit exceeded", within: 15)
        try hostile("""
            local dispatch = require('dispatch')
            dispatch.global():async(function() while true do end end)
            """, time, expect: "time limit exceeded (1 s)", within: 15)
        try hostile("""
            local dispatch = require('dispatch')
            dispatch.main:after(50, function() print('timer') end)
            dispatch.global():async(function() dispatch.sleep(100) end)
            """, time, expect: "time limit exceeded (1 s)", within: 15)
    }

    /// Lua runs `__gc` with hooks off; an end turns them on again there (internals.c), so the
    /// limit ends a finalizer that never returns as any other code, on the main thread or a
    /// worker, well before the CLI's backstop (whose message says "cannot interrupt").
    func testAFinalizerThatNeverReturnsIsEndedByTheLimit() throws {
        let endless = "setmetatable({}, {__gc = function() while true do end end})"
        for (code, options) in [("\(endless); collectgarbage(); print('not reached')", time), ("""
            local dispatch = require('dispatch')
            dispatch.global():async(function()
              \(endless)
              while true do local t = {} end   -- collected here, on a worker thread
            end)
            """, ["--sandbox"] + time)] {
            let r = try CLI.run(options + ["-e", code], timeout: 60)
            XCTAssertEqual(r.status, 1, r.stderr)
            XCTAssertTrue(r.stderr.contains("time limit exceeded"), r.stderr)
            XCTAssertFalse(r.stderr.contains("cannot interrupt") || r.stdout.contains("not reached"), r.stderr)
        }
    }

    func testBadOptionValues() throws {
        let size = try CLI.run(["--memory-limit", "lots", "-e", "print(1)"])
        XCTAssertEqual(size.status, 1)
        XCTAssertTrue(size.stderr.contains("'--memory-limit': a size in bytes expected (e.g. 64M), got 'lots'"), size.stderr)
        let seconds = try CLI.run(["--time-limit", "-2", "-e", "print(1)"])
        XCTAssertEqual(seconds.status, 1)
        XCTAssertTrue(seconds.stderr.contains("'--time-limit': a number of seconds > 0 expected, got '-2'"), seconds.stderr)
        let missing = try CLI.run(["--time-limit"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("'--time-limit' needs argument"), missing.stderr)
    }

    /// Within its limits a script runs as without them, output and status alike.
    func testAScriptWithinItsLimitsRunsNormally() throws {
        let code = "local dispatch = require('dispatch') local g = dispatch.group() local n = 0 "
            + "local q = dispatch.queue('s') for i = 1, 100 do q:async(function() n = n + i end, {group = g}) end "
            + "g:wait() print(n)"
        let r = try CLI.run(memory + time + ["-e", code])
        XCTAssertEqual(r.stdout, "5050\n", r.stderr)
        XCTAssertEqual(r.status, 0)
    }
}
