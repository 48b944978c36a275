import Foundation
import XCTest
@testable import LuaDispatch

/// File sources share the runtime's one inotify instance (`InotifyHub`): many files at once,
/// each event routed to the sources of its file, and the kernel's watch limit named.
final class FileWatchTests: XCTestCase {
    private var dir = ""
    override func setUp() { dir = IOHarness.temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func makeFiles(_ n: Int) {
        for i in 1...n { _ = FileManager.default.createFile(atPath: dir + "/f\(i)", contents: Data()) }
    }

    /// 10,000 files watched at once (an instance per source stopped at 128), one write to each,
    /// in turn: every source sees its own write, once, and no other; one descriptor serves them
    /// all.
    func testTenThousandFilesWatchedAtOnce() {
        let n = 10_000
        makeFiles(n)
        let before = IOHarness.openDescriptorCount()
        let harness = IOHarness()
        harness.runtime.register(module: "fds", functions: [
            "count": { _ in [.integer(IOHarness.openDescriptorCount())] },
        ])
        let out = harness.run("""
            local dir, n = \(IOHarness.lua(dir)), \(n)
            local q = dispatch.queue("watch")
            local seen, wrong, made, done = {}, 0, dispatch.group(), dispatch.group()
            local sources = {}
            for i = 1, n do
              local s, err = dispatch.source.file{path = dir .. "/f" .. i, events = {"write"}, queue = q}
              if not s then
                t.emit("source " .. i .. " failed: " .. err)
                for _, made in ipairs(sources) do made:resume(); made:cancel() end
                return
              end
              sources[i] = s
              made:enter()
              s:set_registration_handler(function() made:leave() end)
              s:set_event_handler(function()
                -- Its own file was written already (an event routed to the wrong source comes
                -- while that file is still empty, for most sources).
                local f = assert(io.open(dir .. "/f" .. i, "r"))
                local size = f:seek("end")
                f:close()
                if seen[i] or table.concat(s.data, ",") ~= "write" or size ~= 1 then wrong = wrong + 1 end
                seen[i] = true
                s:cancel()
              end)
              done:enter()
              s:set_cancel_handler(function() done:leave() end)
              s:resume()
            end
            made:wait()
            t.emit("descriptors", require("fds").count())
            for i = 1, n do
              local f = assert(io.open(dir .. "/f" .. i, "a"))
              f:write("x")
              f:close()
            end
            t.emit(done:wait(30))
            local count = 0
            q:sync(function() for _ in pairs(seen) do count = count + 1 end end)
            t.emit(count, wrong)
            """)
        XCTAssertEqual(out.count, 3, "\(out)")
        if let d = out.first?.split(separator: " ").last.flatMap({ Int($0) }) {
            XCTAssertLessThanOrEqual(d - before, 4, "descriptors grew from \(before) to \(d) for \(n) file sources")
        }
        XCTAssertEqual(Array(out.dropFirst()), ["true", "\(n) 0"])
    }

    /// Two sources on one file share the kernel's watch: both see a write; cancelling one keeps
    /// the other's watch; a source cancelled before the write sees nothing.
    func testSourcesOnOneFileShareItsWatch() {
        makeFiles(1)
        let out = IOHarness().run("""
            local path = \(IOHarness.lua(dir + "/f1"))
            local q = dispatch.queue("watch")
            local made = dispatch.group()
            local function watch(name)
              local s = assert(dispatch.source.file{path = path, events = {"write"}, queue = q})
              made:enter()
              s:set_registration_handler(function() made:leave() end)
              s:set_event_handler(function() t.emit(name, table.concat(s.data, ",")); s:cancel() end)
              s:resume()
              return s
            end
            local a, b, c = watch("a"), watch("b"), watch("c")
            made:wait()
            local cancelled = dispatch.semaphore(0)
            c:set_cancel_handler(function() cancelled:signal() end)
            c:cancel()
            cancelled:wait()
            local f = assert(io.open(path, "a")); f:write("x"); f:close()
            """)
        XCTAssertEqual(Set(out), ["a write", "b write"])
        XCTAssertEqual(out.count, 2)
    }

    /// A deleted file's watch goes (the kernel's IN_IGNORED); a new file watched afterwards gets
    /// its own events, and the old source none of them.
    func testDeletedFileThenNewWatch() {
        makeFiles(2)
        let out = IOHarness().run("""
            local dir = \(IOHarness.lua(dir))
            local q = dispatch.queue("watch")
            local old = assert(dispatch.source.file{path = dir .. "/f1", queue = q})
            local deleted = dispatch.semaphore(0)
            old:set_event_handler(function()
              t.emit("old", table.concat(old.data, ","))
              for _, e in ipairs(old.data) do if e == "delete" then deleted:signal() end end
            end)
            old:resume()
            os.remove(dir .. "/f1")
            deleted:wait(10)
            local new = assert(dispatch.source.file{path = dir .. "/f2", events = {"write"}, queue = q})
            new:set_event_handler(function()
              t.emit("new", table.concat(new.data, ","))
              new:cancel()
              old:cancel()
            end)
            new:set_registration_handler(function()
              local f = assert(io.open(dir .. "/f2", "a")); f:write("x"); f:close()
            end)
            new:resume()
            """)
        XCTAssertEqual(out.last, "new write")
        XCTAssertTrue(out.contains { $0.hasPrefix("old") && $0.contains("delete") }, "\(out)")
        XCTAssertFalse(out.contains { $0.hasPrefix("old") && !$0.contains("delete") && !$0.contains("attrib") }, "\(out)")
    }

    /// The kernel's watches on the hub's instance (`/proc/self/fdinfo` lists one `inotify wd:`
    /// line per watch).
    private static func kernelWatches() -> Int {
        guard let hub = try? InotifyHub.shared().get(),
              let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(hub.fd)", encoding: .utf8) else { return -1 }
        return info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
    }

    /// No watch outlives its sources: cancelled (with two sources on one file, one cancelled
    /// first), never resumed and collected, never resumed and cancelled, and on a file deleted
    /// under them (the kernel drops that watch itself): the kernel's watches come back to their
    /// number before.
    func testNoWatchOutlivesItsSources() {
        makeFiles(200)
        let before = Self.kernelWatches()
        XCTAssertGreaterThanOrEqual(before, 0)
        let harness = IOHarness()
        harness.runtime.register(module: "watches", functions: [
            "count": { _ in [.integer(Self.kernelWatches())] },
        ])
        let out = harness.run("""
            local dir, count = \(IOHarness.lua(dir)), require("watches").count
            local base = count()
            -- Cancel handlers and collection end watches asynchronously: waits for n of them.
            local function settle(n)
              for _ = 1, 400 do
                if count() - base == n then break end
                dispatch.sleep(0.05)
              end
              return count() - base
            end
            local q = dispatch.queue("watch")
            local made = dispatch.group()
            local function watch(i, resume)
              local s = assert(dispatch.source.file{path = dir .. "/f" .. i, queue = q})
              if resume then
                made:enter()
                s:set_registration_handler(function() made:leave() end)
                s:resume()
              end
              return s
            end
            local kept, dropped = {}, {}
            for i = 1, 100 do kept[i] = watch(i, true) end
            local twin = watch(1, true)
            for i = 101, 150 do dropped[i] = watch(i, false) end
            for i = 151, 190 do kept[i] = watch(i, false) end
            for i = 191, 200 do kept[i] = watch(i, true) end
            made:wait()
            t.emit(count() - base)
            twin:cancel()
            for i = 191, 200 do os.remove(dir .. "/f" .. i) end
            t.emit(settle(190))
            dropped = nil
            for _ = 1, 3 do collectgarbage() end
            t.emit(settle(140))
            for i = 1, 200 do if kept[i] then kept[i]:cancel() end end
            kept, twin = nil, nil
            for _ = 1, 3 do collectgarbage() end
            t.emit(settle(0))
            """)
        // 200 files watched (the twin shares f1's watch); f191-f200's go with their files, then
        // the 50 collected sources', then the rest.
        XCTAssertEqual(out, ["200", "190", "140", "0"])
        XCTAssertEqual(Self.kernelWatches(), before)
    }

    /// A runtime closed with file sources still active (resumed, suspended, never resumed, on a
    /// suspended queue) ends their watches: the interpreter's close cancels them.
    func testClosingTheRuntimeEndsItsWatches() throws {
        makeFiles(40)
        let before = Self.kernelWatches()
        let rt = TestRuntimes.make()
        try rt.run(string: """
            local dispatch = require('dispatch')
            local dir = \(IOHarness.lua(dir))
            local q, held = dispatch.queue('watch'), dispatch.queue('held')
            sources = {}
            for i = 1, 40 do
              local s = assert(dispatch.source.file{path = dir .. '/f' .. i, queue = i > 30 and held or q})
              s:set_event_handler(function() end)
              if i <= 20 or i > 30 then s:resume() end
              if i > 10 and i <= 20 then s:suspend() end
              sources[i] = s
            end
            held:suspend()
            dispatch.sleep(0.05)
            """)
        XCTAssertEqual(Self.kernelWatches() - before, 40)
        rt.close()
        // The cancel handlers run on Dispatch's threads.
        let deadline = Date().addingTimeInterval(10)
        while Self.kernelWatches() != before && Date() < deadline { usleep(1000) }
        XCTAssertEqual(Self.kernelWatches(), before, "watches outlived their closed runtime")
    }

    /// The kernel's limits, named with their values: the watches per user (ENOSPC, whose
    /// strerror text, "No space left on device", says nothing of the kind) and the instances.
    func testLimitsAreNamed() {
        let watches = InotifyHub.failure(ENOSPC, path: "/some/file")
        XCTAssertEqual(watches.code, ENOSPC)
        XCTAssertTrue(watches.message?.contains("fs.inotify.max_user_watches = ") ?? false, "\(watches)")
        XCTAssertNotNil(watches.message?.range(of: #"max_user_watches = [0-9]+"#, options: .regularExpression))
        let instances = InotifyHub.failure(EMFILE, path: nil)
        XCTAssertNotNil(instances.message?.range(of: #"max_user_instances = [0-9]+"#, options: .regularExpression), "\(instances)")
        XCTAssertNil(InotifyHub.failure(ENOENT, path: "/x").message)
    }

    /// When the kernel's queue overflows (IN_Q_OVERFLOW: events were dropped) every source is
    /// told "write" and "attrib", whatever its file, rather than miss a change: one event each.
    func testQueueOverflowTellsEverySource() {
        makeFiles(2)
        let harness = IOHarness()
        harness.runtime.register(module: "overflow", functions: [
            "post": { _ in
                var event = inotify_event()
                event.wd = -1
                event.mask = UInt32(IN_Q_OVERFLOW)
                withUnsafeBytes(of: &event) { try! InotifyHub.shared().get().route($0) }
                return []
            },
        ])
        let out = harness.run("""
            local dir = \(IOHarness.lua(dir))
            local q = dispatch.queue("watch")
            local made, fired = dispatch.group(), dispatch.group()
            local seen = {}
            local function watch(name, events)
              local s = assert(dispatch.source.file{path = dir .. "/" .. name, events = events, queue = q})
              made:enter(); fired:enter()
              s:set_registration_handler(function() made:leave() end)
              s:set_event_handler(function()
                seen[#seen + 1] = name .. " " .. table.concat(s.data, ",")
                fired:leave()
              end)
              s:resume()
              return s
            end
            local a, b = watch("f1", {"write"}), watch("f2")
            made:wait()
            require("overflow").post()
            t.emit(fired:wait(10))
            dispatch.sleep(0.2)  -- a second event would show here
            a:cancel(); b:cancel()
            q:sync(function() table.sort(seen); t.emit(table.concat(seen, "; ")) end)
            """)
        XCTAssertEqual(out, ["true", "f1 write; f2 write,attrib"])
    }

    /// The message reaches Lua as `nil, "PATH: ...", "ENAME"` (here for a missing path).
    func testFailureReachesLua() {
        let out = IOHarness().run("""
            t.emit(select(2, dispatch.source.file{path = \(IOHarness.lua(dir + "/missing"))}),
                   select(3, dispatch.source.file{path = \(IOHarness.lua(dir + "/missing"))}))
            """)
        XCTAssertEqual(out, ["\(dir)/missing: No such file or directory ENOENT"])
    }
}
