import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The memory limit holds for everything a script causes to be allocated, not only Lua's own
/// allocations: what bindings return, Swift-side copies of script data, and objects a script
/// makes in bulk. Each attack runs under `--memory-limit 16M` in a child process and must end
/// with the memory error, its peak resident memory (the child's own, from `wait4`) under the
/// limit plus 32 MiB. Before the runtime charged these, the same attacks peaked at 66 MB (labels
/// pushed at once), 141 MB (labelled queues), 316 MB (task errors), 406 MB (data doubled),
/// 526 MB (channel messages), 527 MB (job arguments), 334 MB (timers), 343 MB (blocks).
final class MemoryChargeCLITests: XCTestCase {
    private static let limitMiB = 16

    /// Runs `luadispatch --memory-limit 16M -e code` and returns its status, stderr and peak
    /// resident memory in KiB.
    private func attack(_ code: String, sandbox: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("memcharge-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        var args = [CLI.binary.path] + (sandbox ? ["--sandbox"] : []) + ["--memory-limit", "\(Self.limitMiB)M", "-e", code]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, out.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, args[0], &actions, nil, &argv, environ)
        XCTAssertEqual(spawned, 0, file: file, line: line)
        guard spawned == 0 else { return }
        // A watchdog: an attack that got through would otherwise run on (a pending timer).
        let killer = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: killer)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        killer.cancel()
        args.removeAll()
        let stderr = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0, code = (status >> 8) & 0xff
        XCTAssertTrue(exited && code == 1, "status \(status): \(stderr.prefix(500))", file: file, line: line)
        XCTAssertTrue(stderr.contains("not enough memory"), String(stderr.prefix(500)), file: file, line: line)
        XCTAssertFalse(stderr.contains("PANIC"), String(stderr.prefix(500)), file: file, line: line)
        // Under AddressSanitizer the resident size says nothing (its allocator and shadow memory).
        if StockLua.sanitizerRuntime == nil {
            let peakKiB = Int(usage.ru_maxrss)
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
