import Foundation
import XCTest

/// The memory limit holds for everything a script causes to be allocated, not only Lua's own
/// allocations: what bindings return, Swift-side copies of script data, and objects a script
/// makes in bulk. Each attack runs under `--memory-limit 16M` in a child process and must end
/// with the memory error, its peak resident memory under the limit plus 32 MiB. Before the
/// runtime charged these, the same attacks peaked at 66 MB (labels pushed at once), 141 MB (labelled queues), 316 MB (task errors), 406 MB (data doubled),
/// 526 MB (channel messages), 527 MB (job arguments), 334 MB (timers), 343 MB (blocks).
final class MemoryChargeCLITests: XCTestCase {
    private static let limitMiB = 16

    /// Runs `code` under `luadispatch --memory-limit 16M` in a child process: it must end with the
    /// memory error, and the child's peak resident memory (VmHWM, read from /proc while it waits
    /// after the attack) must stay under the limit plus 32 MiB. (`wait4`'s `ru_maxrss` would not
    /// do: a child spawned with vfork keeps the parent's peak across exec.)
    private func attack(_ code: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let wrapper = """
            local ok, e = pcall(load(...))
            io.stdout:write('measure\\n') io.stdout:flush()
            io.stdin:read(1)
            if not ok then error(e, 0) end
            """
        // Its own Process, not CLI.run: the child's peak memory is read mid-run, when it says "measure".
        let p = Process()
        p.executableURL = CLI.binary
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("memcharge-\(UUID().uuidString).lua")
        try wrapper.write(to: script, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        p.arguments = ["--memory-limit", "\(Self.limitMiB)M", script.path, code]
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input
        _ = CLI.ignoreBrokenPipes
        try p.run()
        let collected = Collected()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { collected.set(1, err.fileHandleForReading.readDataToEndOfFile()) }
        // The attack is over when the wrapper says so: its peak is then final, and readable.
        var said = Data()
        let deadline = Date().addingTimeInterval(60)
        while !String(decoding: said, as: UTF8.self).contains("measure"), Date() < deadline {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said.append(chunk)
        }
        let status = try? String(contentsOfFile: "/proc/\(p.processIdentifier)/status", encoding: .utf8)
        let peakKiB = status.flatMap { s in
            s.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") }
        }
        try? input.fileHandleForWriting.close()
        let killer = DispatchWorkItem { if p.isRunning { p.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: killer)
        p.waitUntilExit()
        killer.cancel()
        group.wait()
        let stderr = collected.string(1)
        XCTAssertEqual(p.terminationStatus, 1, String(stderr.prefix(500)), file: file, line: line)
        XCTAssertEqual(p.terminationReason, .exit, file: file, line: line)
        XCTAssertTrue(stderr.contains("not enough memory"), String(stderr.prefix(500)), file: file, line: line)
        XCTAssertFalse(stderr.contains("PANIC"), String(stderr.prefix(500)), file: file, line: line)
        // Under AddressSanitizer the resident size says nothing (its allocator and shadow memory).
        if StockLua.sanitizerRuntime == nil {
            guard let peakKiB else { return XCTFail("no VmHWM for the child: \(said)", file: file, line: line) }
            XCTAssertLessThan(peakKiB, (Self.limitMiB + 32) * 1024, "peak resident memory \(peakKiB) KiB", file: file, line: line)
        }
    }

    /// Strings a binding returns, pushed with no Lua allocation between them (a table
    /// constructor's registers): each one is charged, and the binding that passes the limit raises.
    func testLabelsReturnedByCurrentLabel() throws {
        try attack("""
            local d = require('dispatch')
            local q = d.queue(('x'):rep(4 << 20))
            local t
            q:sync(function()
                t = {d.current_label(), d.current_label(), d.current_label(), d.current_label(), d.current_label(),
                     d.current_label(), d.current_label(), d.current_label(), d.current_label(), d.current_label()}
            end)
            """)
    }

    func testTostringOfAQueueWithABigLabel() throws {
        try attack("""
            local d = require('dispatch')
            local q = d.queue(('x'):rep(4 << 20))
            local t = {tostring(q), tostring(q), tostring(q), tostring(q), tostring(q),
                       tostring(q), tostring(q), tostring(q), tostring(q), tostring(q)}
            """)
    }

    func testQueuesNamedByOneBigString() throws {
        try attack("""
            local d = require('dispatch')
            local s = ('x'):rep(5 << 20)
            local t = {}
            for i = 1, 10 do t[i] = d.queue(s) end
            """)
    }

    /// Caught, the error leaves nothing behind: tasks and `after` blocks past the limit are
    /// refused before they exist (each started task or pending block lives on, so a script
    /// catching the error would otherwise pile them up: 223 MB before they were refused).
    func testTasksAndAftersCaughtInPcallStillStop() throws {
        try attack("""
            local d = require('dispatch')
            local q = d.queue('held')
            q:suspend()
            local f, n = function() end, 0
            while n < 1e6 and pcall(d.task, f, q) do n = n + 1 end
            for i = 1, 300 do pcall(d.task, f, q) end
            for i = 1, 300 do pcall(q.after, q, 1000, f) end
            d.task(f, q)
            """)
    }

    func testAMillionQueues() throws {
        try attack("local d = require('dispatch') local t = {} for i = 1, 1000000 do t[i] = d.queue() end")
    }

    func testErrorsReraisedByTaskWait() throws {
        try attack("""
            local d = require('dispatch')
            local big = ('e'):rep(4 << 20)
            local t = {}
            for i = 1, 50 do
                local task = d.task(function() error(big, 0) end)
                local ok, e = pcall(task.wait, task)
                if e == 'not enough memory' then error(e) end
                t[i] = e
            end
            """)
    }

    func testErrorsReraisedByJobWait() throws {
        try attack("""
            local d = require('dispatch')
            local pool = d.workers{count = 1}
            local big = ('e'):rep(4 << 20)
            local t = {}
            for i = 1, 50 do
                local j = pool:submit(function(s) error(s, 0) end, big)
                local ok, e = pcall(j.wait, j)
                if e == 'not enough memory' then error(e) end
                t[i] = e
            end
            """)
    }

    func testDataConcatenatedWithItself() throws {
        try attack("local d = require('dispatch') local x = d.data('ab') for i = 1, 23 do x = x .. x end")
    }

    func testTasksOnASuspendedQueue() throws {
        try attack("""
            local d = require('dispatch')
            local q = d.queue('held')
            q:suspend()
            local t, f = {}, function() end
            for i = 1, 200000 do t[i] = d.task(f, q) end
            """)
    }

    func testChannelMessages() throws {
        try attack("""
            local d = require('dispatch')
            local ch, s = d.channel(), ('m'):rep(1 << 20)
            for i = 1, 500 do pcall(ch.send, ch, s) end
            ch:send(s)
            """)
    }

    func testQueuedJobArguments() throws {
        try attack("""
            local d = require('dispatch')
            local pool = d.workers{count = 1}
            local s, t = ('a'):rep(1 << 20), {}
            pool:submit(function() local x = 0 while x >= 0 do x = x + 1 end end)
            for i = 1, 500 do t[i] = pool:submit(function() end, s) end
            """)
    }

    func testTimers() throws {
        try attack("""
            local d = require('dispatch')
            local f = function() end
            for i = 1, 300000 do d.source.timer{deadline = 1000, handler = f}:resume() end
            """)
    }

    func testBlocksOnASuspendedQueue() throws {
        try attack("""
            local d = require('dispatch')
            local q = d.queue('held')
            q:suspend()
            local f = function() end
            for i = 1, 3000000 do q:async(f) end
            """)
    }

    /// The error is catchable; what it refused is not made, so a script that catches it and goes
    /// on piles nothing up (a loop of 400,000 caught submissions reached 223 MB before a block
    /// past the limit was refused), and meets the error again.
    func testBlocksCaughtInPcallStillStop() throws {
        try attack("""
            local d = require('dispatch')
            local q = d.queue('held')
            q:suspend()
            local f, n = function() end, 0
            while n < 3e6 and pcall(q.async, q, f) do n = n + 1 end
            for i = 1, 2000 do pcall(q.async, q, f) end
            q:async(f)
            """)
    }
}
