import Foundation
import XCTest

/// Ctrl-C: SIGINT sent to the process alone, once it says it is ready. As with `lua5.4`, the
/// running Lua code stops with "interrupted!" and a traceback, output written before is
/// flushed, and the status is 1; a blocking `dispatch` wait on the main thread ends the same way.
final class InterruptTests: XCTestCase {
    struct Outcome: Equatable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Starts `exe -e code`, waits for "ready" on stdout, sends SIGINT to the process alone.
    /// `quietInput`: standard input a pipe that stays open and silent.
    static func interrupt(_ exe: URL, _ code: String, quietInput: Bool = false) throws -> Outcome {
        // Its own Process, not CLI.run: the signal is sent once the child printed "ready", mid-run.
        let p = Process()
        p.executableURL = exe
        p.arguments = ["-e", code]
        let input = Pipe()
        if quietInput { p.standardInput = input }
        defer { try? input.fileHandleForWriting.close() }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        var seen = Data()
        let deadline = Date().addingTimeInterval(30)
        while !String(decoding: seen, as: UTF8.self).contains("ready"), Date() < deadline {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        usleep(200_000)  // into the loop or the wait
        // A call meant to be interrupted while it waits for input or output: into the wait,
        // however long a loaded machine takes to get there.
        if quietInput { waitUntilSleeping(p.processIdentifier) }
        kill(p.processIdentifier, SIGINT)
        // A process that ignores it fails the test instead of hanging it.
        let pid = p.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + 20) { if p.isRunning { kill(pid, SIGKILL) } }
        seen.append(out.fileHandleForReading.readDataToEndOfFile())
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let norm = { (s: String) in s.replacingOccurrences(of: exe.path, with: "PROG") }
        return Outcome(status: p.terminationStatus, stdout: norm(String(decoding: seen, as: UTF8.self)),
                       stderr: norm(String(decoding: e, as: UTF8.self)))
    }

    /// Until the process's main thread sleeps (in a system call: it runs nothing else), 10 s at most.
    private static func waitUntilSleeping(_ pid: Int32) {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            // "pid (comm) S ...": the state follows the last parenthesis.
            guard let close = stat.lastIndex(of: ")") else { return }
            if stat[close...].dropFirst().trimmingCharacters(in: .whitespaces).hasPrefix("S") { return }
            usleep(10_000)
        }
    }

    func testABusyLoopStopsAsInLua() throws {
        let lua = URL(fileURLWithPath: "/usr/bin/lua5.4")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: lua.path), "lua5.4 is not installed")
        let code = "io.stdout:setvbuf('full'); print('ready'); io.stdout:flush(); io.write('unflushed'); while true do end"
        let ours = try Self.interrupt(CLI.binary, code)
        let theirs = try Self.interrupt(lua, code)
        XCTAssertEqual(ours, theirs)
        XCTAssertEqual(ours.status, 1)
        XCTAssertTrue(ours.stderr.hasPrefix("PROG: interrupted!\nstack traceback:\n"), ours.stderr)
        XCTAssertTrue(ours.stdout.hasSuffix("unflushed"), ours.stdout)
    }

    func testABlockingWaitOnTheMainThreadEnds() throws {
        for wait in ["dispatch.semaphore(0):wait()", "dispatch.group():enter(); dispatch.sleep(60)",
                     "local g = dispatch.group(); g:enter(); g:wait()"] {
            let code = "local dispatch = require('dispatch'); print('ready'); io.stdout:flush(); io.write('unflushed'); \(wait)"
            let r = try Self.interrupt(CLI.binary, code)
            XCTAssertEqual(r.status, 1, wait)
            XCTAssertTrue(r.stderr.hasPrefix("PROG: interrupted!\nstack traceback:\n\t[C]: in "), "\(wait): \(r.stderr)")
            XCTAssertTrue(r.stderr.hasSuffix("(command line):1: in main chunk\n\t[C]: in ?\n"), "\(wait): \(r.stderr)")
            XCTAssertEqual(r.stdout, "ready\nunflushed", wait)
        }
    }

    /// Reading a pipe on the main thread waits without the interpreter (docs/execution-model.md,
    /// "Blocking calls"); Ctrl-C still ends the read as under lua5.4: it fails with EINTR and
    /// "interrupted!" follows.
    func testAReadOrWriteThatWaitsStopsAsInLua() throws {
        let lua = URL(fileURLWithPath: "/usr/bin/lua5.4")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: lua.path), "lua5.4 is not installed")
        for (setup, call) in [("", "print(io.read('l'))"), ("", "print(io.read('a'))"), ("", "for l in io.lines() do end"),
                              ("", "print(pcall(io.read, 'n'))"), ("", "print(io.stdin:read(10))")] {
            let code = "\(setup); print('ready'); io.stdout:flush(); io.write('unflushed'); \(call); print('after')"
            let ours = try Self.interrupt(CLI.binary, code, quietInput: true)
            let theirs = try Self.interrupt(lua, code, quietInput: true)
            XCTAssertEqual(ours, theirs, call)
            XCTAssertTrue((ours.stderr + ours.stdout).contains("interrupted!"), "\(call): \(ours)")
        }
        // A write waiting for a full pipe fails as a write(2) interrupted before it transferred
        // anything does (lua5.4's own write may be in the middle of a transfer, which a signal
        // does not end: its outcome depends on when the signal comes).
        // (The string is made before 'ready': Ctrl-C must come during the write, not during
        // string.rep, which a slow build, such as the sanitizer's, can still be in.)
        let code = "local s = string.rep('x', 1 << 20); local f = io.popen('sleep 1; cat > /dev/null', 'w'); " +
            "print('ready'); io.stdout:flush(); print(f:write(s))"
        let write = try Self.interrupt(CLI.binary, code, quietInput: true)
        XCTAssertEqual(write.stdout, "ready\n", write.stderr)
        // (Ctrl-C's hook fires as the failed write returns, as after a read.)
        XCTAssertTrue(write.stderr.hasPrefix("PROG: (command line):1: interrupted!\nstack traceback:\n\t[C]: in method 'write'"),
                      write.stderr)
        XCTAssertEqual(write.status, 1)
    }

    /// pcall catches the interruption of a wait, once: the code goes on.
    func testAnInterruptedWaitCanBeCaught() throws {
        let code = """
            local dispatch = require('dispatch'); print('ready'); io.stdout:flush()
            print(pcall(dispatch.semaphore(0).wait, dispatch.semaphore(0)))
            for i = 1, 1000 do end
            print('after')
            """
        let r = try Self.interrupt(CLI.binary, code)
        XCTAssertEqual(r, Outcome(status: 0, stdout: "ready\nfalse\tinterrupted!\nafter\n", stderr: ""))
    }

    /// After the script, while the main queue is serviced: "interrupted!", status 1.
    func testWhileServicingTheMainQueue() throws {
        let code = "local dispatch = require('dispatch'); dispatch.main:after(60, print); print('ready'); io.write('unflushed')"
        let r = try Self.interrupt(CLI.binary, code)
        XCTAssertEqual(r, Outcome(status: 1, stdout: "ready\nunflushed", stderr: "PROG: interrupted!\n"))
    }
}
