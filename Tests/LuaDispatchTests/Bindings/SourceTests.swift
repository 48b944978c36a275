import Foundation
import XCTest
@testable import LuaDispatch

#if canImport(Glibc)
import Glibc
#endif

final class SourceTests: XCTestCase {
    func testRepeatingTimerFiresAndCancels() {
        let out = IOHarness().run("""
            local q = dispatch.queue("timers")
            local n, start = 0, dispatch.now()
            local s = dispatch.source.timer{deadline = 0.01, interval = 0.01, queue = q}
            s:set_event_handler(function()
              n = n + s.data
              t.emit("tick", dispatch.current_label())
              if n >= 3 then s:cancel() end
            end)
            s:set_cancel_handler(function() t.emit("cancelled", n >= 3, dispatch.now() - start >= 0.02) end)
            t.emit(tostring(s))
            s:resume()
            """)
        XCTAssertEqual(out.first, "dispatch.source (timer, suspended)")
        XCTAssertTrue(out.dropFirst().dropLast().allSatisfy { $0 == "tick timers" }, "\(out)")
        XCTAssertGreaterThanOrEqual(out.count, 3)
        XCTAssertEqual(out.last, "cancelled true true")
    }

    func testOneShotTimerWithWallDeadlineAndSchedule() {
        let out = IOHarness().run("""
            local s = dispatch.source.timer{deadline = dispatch.walltime() + 0.01, queue = dispatch.main}
            local fires = 0
            s:set_event_handler(function()
              fires = fires + 1
              t.emit("fire", fires, dispatch.current_label() == dispatch.main.label)
              if fires == 1 then
                s:schedule{deadline = dispatch.now() + 0.01, leeway = 0.001}  -- wall clock -> uptime
              else
                s:cancel()
              end
            end)
            s:resume()
            """)
        XCTAssertEqual(out, ["fire 1 true", "fire 2 true"])
    }

    func testDataSourcesMerge() {
        let out = IOHarness().run("""
            local q = dispatch.queue("merge")
            local add = dispatch.source.data_add{queue = q}
            local orr = dispatch.source.data_or{queue = q}
            local rep = dispatch.source.data_replace{queue = q}
            q:suspend()   -- hold the handlers so that the merges coalesce
            for _, s in ipairs{add, orr, rep} do
              s:set_event_handler(function() t.emit(s.kind, s.data); s:cancel() end)
              s:resume()
            end
            add:merge(5); add:merge(7)
            orr:merge(1); orr:merge(4)
            rep:merge(3); rep:merge(9)
            q:resume()
            """)
        XCTAssertEqual(Set(out), ["data_add 12", "data_or 5", "data_replace 9"])
    }

    func testPipeRoundTripWithReadAndWriteSources() {
        let out = IOHarness().run("""
            local q = dispatch.queue("pipe")
            local r, w = dispatch.fd.pipe()
            assert(dispatch.fd.set_nonblocking(r))
            local got, parts = {}, {"hello ", "from ", "a pipe"}
            local rs = dispatch.source.read{fd = r, queue = q}
            rs:set_event_handler(function()
              local chunk, msg, name = dispatch.fd.read(r, 4096)
              if chunk == "" then rs:cancel()
              elseif chunk then got[#got + 1] = chunk
              else assert(name == "EAGAIN", msg) end
            end)
            rs:set_cancel_handler(function()
              t.emit("read", table.concat(got), rs.handle == r)
              dispatch.fd.close(r)
            end)
            local ws = dispatch.source.write{fd = w, queue = q}
            ws:set_event_handler(function()
              local p = table.remove(parts, 1)
              if p then dispatch.fd.write(w, p) else ws:cancel() end
            end)
            ws:set_cancel_handler(function() dispatch.fd.close(w) end)
            rs:resume()
            ws:resume()
            """)
        XCTAssertEqual(out, ["read hello from a pipe true"])
    }

    func testSelfSignal() {
        let out = IOHarness().run("""
            local s = dispatch.source.signal{signal = "SIGUSR1", queue = dispatch.queue("signals")}
            s:set_registration_handler(function() assert(dispatch.kill(dispatch.pid(), "SIGUSR1")) end)
            s:set_event_handler(function()
              t.emit("signal", s.handle, s.data >= 1)
              s:cancel()
            end)
            s:resume()
            """)
        XCTAssertEqual(out, ["signal \(SIGUSR1) true"])
    }

    func testDirectoryWriteSeenByFileWatch() throws {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = IOHarness().run("""
            local dir = \(IOHarness.lua(dir))
            local s = dispatch.source.file{path = dir, events = {"write"}, queue = dispatch.queue("watch")}
            s:set_registration_handler(function()
              local fd = assert(dispatch.fd.open(dir .. "/new.txt", "w"))
              dispatch.fd.write(fd, "changed")
              dispatch.fd.close(fd)
            end)
            s:set_event_handler(function()
              t.emit("event", table.concat(s.data, ","), s.handle == dir)
              s:cancel()
            end)
            s:resume()
            """)
        XCTAssertEqual(out, ["event write true"])
    }

    func testFileWatchReportsExtendAttribAndDelete() throws {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/watched.txt"
        try? Data("a".utf8).write(to: URL(fileURLWithPath: file))
        let out = IOHarness().run("""
            local path = \(IOHarness.lua(file))
            local s = dispatch.source.file{path = path, queue = dispatch.queue("watch")}
            local step = 0
            local function act()
              step = step + 1
              if step == 1 then
                local fd = dispatch.fd.open(path, "a"); dispatch.fd.write(fd, "more"); dispatch.fd.close(fd)
              elseif step == 2 then
                os.execute("chmod 600 '" .. path .. "'")
              elseif step == 3 then
                os.remove(path)
              end
            end
            local seen = {}
            s:set_registration_handler(act)
            s:set_event_handler(function()
              for _, name in ipairs(s.data) do seen[name] = true end
              if seen.delete then s:cancel() return end
              if (step == 1 and seen.extend) or (step == 2 and seen.attrib) then act() end
            end)
            s:set_cancel_handler(function()
              t.emit(tostring(seen.write), tostring(seen.extend), tostring(seen.attrib), tostring(seen.delete))
            end)
            s:resume()
            """)
        XCTAssertEqual(out, ["true true true true"])
    }

    func testChildExitSeenByProcessWatch() throws {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("0.1"), nil]
        defer { argv.forEach { free($0) } }
        XCTAssertEqual(posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ), 0)
        defer {
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        let out = IOHarness().run("""
            local pid = \(pid)
            local s = dispatch.source.process{pid = pid, events = {"exit"}, queue = dispatch.main}
            s:set_event_handler(function()
              t.emit("exit", table.concat(s.data, ","), s.handle == pid)
              s:cancel()
            end)
            s:set_cancel_handler(function() t.emit("cancelled") end)
            s:resume()
            """)
        XCTAssertEqual(out, ["exit exit true", "cancelled"])
    }

    /// A process that exited and was reaped before the watch began is still reported, as
    /// libdispatch's process sources do on Darwin; a pid that never existed too.
    func testProcessGoneBeforeTheWatchIsReportedAsExited() throws {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { argv.forEach { free($0) } }
        XCTAssertEqual(posix_spawn(&pid, "/bin/true", nil, nil, argv, environ), 0)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        let out = IOHarness().run("""
            for _, pid in ipairs{\(pid), 4194303} do
              local s = dispatch.source.process{pid = pid, events = {"exit"}, queue = dispatch.main}
              s:set_event_handler(function()
                t.emit("exit", table.concat(s.data, ","), s.handle == pid)
                s:cancel()
              end)
              s:resume()
            end
            """)
        XCTAssertEqual(out, ["exit exit true", "exit exit true"])
    }

    func testSourceStaysAliveWithoutReference() {
        let out = IOHarness().run("""
            do
              local s = dispatch.source.timer{deadline = 0.05, queue = dispatch.main}
              s:set_event_handler(function() t.emit("fired"); s:cancel() end)
              s:resume()
            end
            collectgarbage(); collectgarbage()
            """)
        XCTAssertEqual(out, ["fired"])
    }

    func testSuspendAndResumeAreCounted() {
        let out = IOHarness().run("""
            local s = dispatch.source.data_add{queue = dispatch.main}
            s:set_event_handler(function() t.emit("data", s.data); s:cancel() end)
            s:suspend()                 -- two suspensions now: creation + this one
            s:resume()
            t.emit("still suspended", not s:is_cancelled())
            s:merge(2)
            s:resume()                  -- the source starts; the merged value is delivered
            local ok, err = pcall(s.resume, s)
            t.emit(tostring(ok), err)
            """)
        XCTAssertEqual(out, [
            "still suspended true",
            "false resume of source 'data_add', which is not suspended",
            "data 2",
        ])
    }

    func testCollectingUnresumedSuspendedAndCancelledSourcesDoesNotCrash() {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = IOHarness()
        // A pipe for the read sources, open throughout like the standard input they used to
        // watch (which may be /dev/null, where no read source can be made: EPERM).
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]); close(ends[1]) }
        let before = IOHarness.openDescriptorCount()
        h.run("""
            local r = \(ends[0])
            for i = 1, 50 do
              local a = dispatch.source.timer{interval = 1, handler = function() end}
              local b = dispatch.source.data_or{}; b:suspend(); b:suspend()
              local c = dispatch.source.signal{signal = "SIGUSR2"}; c:cancel()
              local d = dispatch.source.file{path = \(IOHarness.lua(dir))}
              local e = dispatch.source.read{fd = r}; e:cancel(); e:set_event_handler(function() end)
            end
            collectgarbage(); collectgarbage()
            -- a source that was resumed, then suspended and cancelled: no handler runs
            local s = dispatch.source.data_add{queue = dispatch.main, handler = function() t.emit("never") end}
            s:resume(); s:suspend(); s:merge(1); s:cancel()
            s:set_cancel_handler(function() t.emit("cancel ran") end)
            t.emit("survived")
            """)
        XCTAssertEqual(h.output, ["survived"])
        // The inotify descriptors of collected file sources are closed by their cancel handlers.
        let deadline = Date().addingTimeInterval(5)
        while IOHarness.openDescriptorCount() > before + 2 && Date() < deadline { RunLoop.main.run(until: Date().addingTimeInterval(0.05)) }
        XCTAssertLessThanOrEqual(IOHarness.openDescriptorCount(), before + 2)
    }

    func testMisuseAndBadInputRaise() {
        let out = IOHarness().run("""
            local function try(f, ...)
              local ok, err = pcall(f, ...)
              t.emit(ok and "ok" or err)
            end
            local S = dispatch.source
            try(S.timer, {interval = 0})
            try(S.timer, {interval = 0/0})
            try(S.timer, {leeway = -1})
            try(S.timer, {deadline = 0/0})
            try(S.timer, {deadline = "soon"})
            try(S.timer, {color = "red"})
            try(S.timer, {handler = 5})
            try(S.timer, 7)
            try(S.signal, {signal = "SIGNOPE"})
            try(S.signal, {signal = 99})
            try(S.signal, {signal = "SIGKILL"})
            try(S.signal, {})
            try(S.read, {fd = -1})
            try(S.write, {fd = 1.5})
            try(S.file, {path = "/tmp", events = {"write", "explode"}})
            try(S.file, {path = "/tmp", events = "write"})
            try(S.process, {pid = 1, events = {"fork"}})
            try(S.process, {pid = -3})
            try(S.data_add, {fd = 3})
            local tm = S.timer{}
            try(tm.merge, tm, 1)
            try(tm.schedule, tm, {interval = -2})
            try(tm.set_cancel_handler, tm, "x")
            local d = S.data_add{}
            try(d.schedule, d, {})
            try(d.merge, d, -1)
            try(d.resume, nil)
            t.emit(tostring(S.file{path = "/nonexistent/dir"}), select(3, S.file{path = "/nonexistent/dir"}))
            t.emit(select(3, S.read{fd = 999}))
            """)
        let expected = [
            "bad argument #1 to 'timer' (option 'interval': interval must be > 0, got 0.0)",
            "bad argument #1 to 'timer' (option 'interval': interval must be > 0, got -nan)",
            "bad argument #1 to 'timer' (option 'leeway': leeway must be >= 0, got -1.0)",
            "bad argument #1 to 'timer' (option 'deadline': NaN)",
            "bad argument #1 to 'timer' (option 'deadline': number, dispatch.time or dispatch.walltime expected, got string)",
            "bad argument #1 to 'timer' (unknown option 'color')",
            "bad argument #1 to 'timer' (option 'handler': function expected, got number)",
            "bad argument #1 to 'timer' (table expected, got number)",
            "bad argument #1 to 'signal' (option 'signal': unknown signal 'SIGNOPE')",
            "bad argument #1 to 'signal' (option 'signal': invalid signal number 99)",
            "bad argument #1 to 'signal' (option 'signal': SIGKILL cannot be caught)",
            "bad argument #1 to 'signal' (option 'signal' missing)",
            "bad argument #1 to 'read' (option 'fd': invalid file descriptor -1)",
            "bad argument #1 to 'write' (option 'fd': integer expected, got number)",
            "bad argument #1 to 'file' (option 'events': unknown event 'explode' (expected \"write\", \"delete\", \"rename\", \"attrib\", \"extend\", \"link\"))",
            "bad argument #1 to 'file' (option 'events': table of event names expected, got string)",
            "bad argument #1 to 'process' (option 'events': unknown event 'fork' (expected \"exit\"))",
            "bad argument #1 to 'process' (option 'pid': invalid pid -3)",
            "bad argument #1 to 'data_add' (unknown option 'fd')",
            "merge on a timer source (only data_add, data_or and data_replace sources merge)",
            "bad argument #2 to 'schedule' (option 'interval': interval must be > 0, got -2.0)",
            "bad argument #2 to 'set_cancel_handler' (function or nil expected, got string)",
            "schedule on a data_add source (only timer sources can be scheduled)",
            "bad argument #2 to 'merge' (value must be >= 0, got -1)",
            "bad argument #1 to 'resume' (dispatch.source expected, got nil)",
            "nil ENOENT",
            "EBADF",
        ]
        XCTAssertEqual(out.count, expected.count, "\(out)")
        for (got, want) in zip(out, expected) { XCTAssertTrue(got.hasSuffix(want), "\(got) does not end with \(want)") }
    }

    func testCancelWhileSuspendedRunsCancelHandlerOnResume() {
        let out = IOHarness().run("""
            local s = dispatch.source.timer{interval = 0.01, queue = dispatch.main}
            s:set_event_handler(function() t.emit("tick") end)
            s:set_cancel_handler(function() t.emit("cancel handler") end)
            s:resume()
            s:suspend()
            s:cancel()
            t.emit("cancelled", tostring(s:is_cancelled()))
            dispatch.main:after(0.05, function() t.emit("resuming"); s:resume() end)
            """)
        XCTAssertEqual(out, ["cancelled true", "resuming", "cancel handler"])
    }

    func testSourceOnSuspendedQueueDoesNotKeepRuntimeAlive() {
        let started = Date()
        let out = IOHarness().run("""
            local held = dispatch.queue("held")
            held:suspend()
            local s = dispatch.source.timer{queue = held, handler = function() t.emit("never") end}
            s:resume()
            t.emit("resumed")
            """)
        XCTAssertEqual(out, ["resumed"])
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
    }

    func testConcurrentMergesSuspendsAndCancels() {
        let out = IOHarness().run("""
            local n, cancelled = 0, 0
            local counts = dispatch.queue("counts")   -- the handlers run on 100 queues at once
            local g = dispatch.group()
            for i = 1, 100 do
              local q = dispatch.queue("q" .. i)
              local s = dispatch.source.data_add{queue = q}
              g:enter()
              s:set_event_handler(function() local d = s.data; counts:sync(function() n = n + d end) end)
              s:set_cancel_handler(function() counts:sync(function() cancelled = cancelled + 1 end); g:leave() end)
              s:resume()
              dispatch.global():async(function()
                for k = 1, 10 do
                  s:merge(1)
                  if k == 5 then s:suspend(); s:resume() end
                end
                q:async(function() s:cancel() end)
              end)
            end
            t.emit(tostring(g:wait(20)), cancelled, n > 0 and n <= 1000)
            """)
        XCTAssertEqual(out, ["true 100 true"])
    }

    func testErrorInHandlerIsReportedAndProcessGoesOn() {
        let h = IOHarness()
        let out = h.run("""
            local q = dispatch.queue("failing")
            local s = dispatch.source.data_add{queue = q}
            s:set_event_handler(function() s:cancel(); error("boom") end)
            s:set_cancel_handler(function() t.emit("cancel handler ran") end)
            s:resume()
            s:merge(1)
            """, expectErrors: true)
        XCTAssertEqual(out, ["cancel handler ran"])
        XCTAssertEqual(h.errors.count, 1)
        XCTAssertTrue(h.errors.first?.hasPrefix("failing: ") ?? false, "\(h.errors)")
        XCTAssertTrue(h.errors.first?.contains("boom") ?? false)
    }
}
