import XCTest
@testable import LuaDispatch

#if canImport(Glibc)
import Glibc
#endif

/// Process sources on many short-lived children in one process: every exit is reported.
final class ProcessExitTests: XCTestCase {
    func testFiveHundredShortLivedChildrenAllReportExit() {
        let h = IOHarness()
        h.runtime.register(module: "kids", functions: [
            // Starts /bin/true and returns its pid (reaped by `reap` once its exit was seen).
            "spawn": { _ in
                var pid: pid_t = 0
                var argv: [UnsafeMutablePointer<CChar>?] = [strdup("true"), nil]
                defer { argv.forEach { free($0) } }
                guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { return [.nil] }
                return [.integer(Int(pid))]
            },
            "reap": { args in
                guard case .integer(let pid)? = args.first else { return [.boolean(false)] }
                var status: Int32 = 0
                return [.boolean(waitpid(pid_t(pid), &status, 0) == pid_t(pid))]
            },
        ])
        let out = h.run("""
            local kids = require("kids")
            local q = dispatch.queue("exits")
            local reported, lost, reaped, started = 0, 0, 0, 0
            for i = 1, 500 do
              local pid = kids.spawn()
              started = started + 1
              local done = dispatch.semaphore(0)
              local s
              s = dispatch.source.process{pid = pid, queue = q, handler = function()
                if s.data[1] == "exit" then reported = reported + 1 end
                s:cancel()
              end, cancel_handler = function() done:signal() end}
              s:resume()
              if not done:wait(5) then lost = lost + 1; s:cancel() end
              if kids.reap(pid) then reaped = reaped + 1 end
            end
            t.emit(started, reported, lost, reaped)
            """)
        XCTAssertEqual(out, ["500 500 0 500"])
    }

    /// 500 children alive at once, each source's handler reaping its child on another queue.
    func testConcurrentChildrenAllReportExit() {
        let h = IOHarness()
        h.runtime.register(module: "kids", functions: [
            "spawn": { _ in
                var pid: pid_t = 0
                var argv: [UnsafeMutablePointer<CChar>?] = [strdup("true"), nil]
                defer { argv.forEach { free($0) } }
                guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { return [.nil] }
                return [.integer(Int(pid))]
            },
            "reap": { args in
                guard case .integer(let pid)? = args.first else { return [.boolean(false)] }
                var status: Int32 = 0
                return [.boolean(waitpid(pid_t(pid), &status, 0) == pid_t(pid))]
            },
        ])
        let out = h.run("""
            local kids = require("kids")
            local g = dispatch.group()
            local reported, reaped = 0, 0
            local counts = dispatch.queue("counts")   -- the handlers run on many queues at once
            local sources = {}
            for i = 1, 500 do
              local pid = kids.spawn()
              local q = dispatch.queue("exit" .. (i % 8))
              g:enter()
              local s
              s = dispatch.source.process{pid = pid, queue = q, handler = function()
                local wasReaped = kids.reap(pid)
                counts:sync(function()
                  reported = reported + 1
                  if wasReaped then reaped = reaped + 1 end
                end)
                s:cancel()
              end, cancel_handler = function() g:leave() end}
              sources[i] = s
              s:resume()
            end
            local ok = g:wait(20)
            t.emit(ok, reported, reaped)
            for _, s in ipairs(sources) do s:cancel() end
            """)
        XCTAssertEqual(out, ["true 500 500"])
    }

    /// The pidfd of a new child often gets the number of a descriptor a script closed right
    /// after cancelling its read source. libdispatch keys its epoll entries by number: watching
    /// the script's own descriptor, the stale entry swallowed the pidfd and the exit was lost.
    func testExitIsReportedWhenThePidfdReusesAJustClosedNumber() {
        let h = IOHarness()
        h.runtime.register(module: "kids", functions: [
            "spawn": { _ in
                var pid: pid_t = 0
                var argv: [UnsafeMutablePointer<CChar>?] = [strdup("true"), nil]
                defer { argv.forEach { free($0) } }
                guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { return [.nil] }
                return [.integer(Int(pid))]
            },
            "reap": { args in
                guard case .integer(let pid)? = args.first else { return [.boolean(false)] }
                var status: Int32 = 0
                return [.boolean(waitpid(pid_t(pid), &status, 0) == pid_t(pid))]
            },
        ])
        let out = h.run("""
            local kids = require("kids")
            local q = dispatch.queue("exits")
            local reported, lost = 0, 0
            for i = 1, 200 do
              local r, w = dispatch.fd.pipe()
              local rs = dispatch.source.read{fd = r, queue = q, handler = function() end}
              rs:resume()
              rs:cancel()
              dispatch.fd.close(r); dispatch.fd.close(w)
              local pid = kids.spawn()
              local done = dispatch.semaphore(0)
              local s
              s = dispatch.source.process{pid = pid, queue = q, handler = function()
                reported = reported + 1; s:cancel()
              end, cancel_handler = function() done:signal() end}
              s:resume()
              if not done:wait(2) then lost = lost + 1; s:cancel() end
              kids.reap(pid)
            end
            t.emit(reported, lost)
            """)
        XCTAssertEqual(out, ["200 0"])
    }
}
