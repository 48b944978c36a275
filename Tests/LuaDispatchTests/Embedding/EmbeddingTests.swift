import Dispatch
import Foundation
import XCTest
@testable import LuaDispatch

/// The library as a Swift program embeds it.
final class EmbeddingTests: XCTestCase {
    func testTwoInterpretersDoNotInterfere() throws {
        let a = TestRuntimes.make(), b = TestRuntimes.make()
        defer { a.close(); b.close() }
        try a.run(string: "dispatch = require('dispatch')")
        try b.run(string: "dispatch = require('dispatch')")
        try a.run(string: "shared = 'a'; n = 0; q = dispatch.queue('a')")
        try b.run(string: "n = 0; q = dispatch.queue('b')")
        try a.run(string: "for i = 1, 500 do q:async(function() n = n + 1 end) end")
        try b.run(string: "for i = 1, 300 do q:async(function() n = n + 2 end) end")
        XCTAssertTrue(a.waitUntilIdle(timeout: 10))
        XCTAssertTrue(b.waitUntilIdle(timeout: 10))
        XCTAssertEqual(try a.run(string: "return n, shared"), [500, "a"])
        XCTAssertEqual(try b.run(string: "return n, shared"), [600, .nil])
        a.close()
        XCTAssertEqual(try b.run(string: "return q:sync(function() return n end)"), [600])
    }

    /// `Runtime.run(_:)`: a host servicing the main queue a step at a time.
    func testRunModesFromSwift() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        try rt.run(string: """
            local dispatch = require('dispatch')
            n = 0
            dispatch.main:after(0.02, function() n = n + 1 end)
            dispatch.main:after(0.4, function() n = n + 1 end)
            """)
        XCTAssertTrue(rt.run(.nowait))
        XCTAssertEqual(try rt.run(string: "return n"), [0])
        XCTAssertTrue(rt.run(.once))
        XCTAssertEqual(try rt.run(string: "return n"), [1])
        XCTAssertFalse(rt.run(.default))
        XCTAssertEqual(try rt.run(string: "return n"), [2])
        XCTAssertFalse(rt.run(.once))
    }

    func testValuesRoundTripBothWays() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host", functions: ["echo": { $0 }])
        let nested: LuaValue = ["list": [1, 2.5, "three", true], "inner": ["deep": ["x": -7]], "empty": [:]]
        try rt.run(string: "function roundtrip(...) return require('host').echo(...) end")
        XCTAssertEqual(try rt.call("roundtrip", [nested, .nil, 42, "s", false]), [nested, .nil, 42, "s", false])
        XCTAssertEqual(try rt.run(string: "local h = require('host'); local t = h.echo({1, {2, {3}}}); return t[2][2][1]"), [3])
        XCTAssertEqual(try rt.run(string: "return 1.0, 2^53, math.maxinteger"),
                       [.double(1.0), .double(9007199254740992), .integer(Int.max)])
    }

    func testUnsupportedValuesGiveClearErrors() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host", functions: ["echo": { $0 }])
        XCTAssertEqual(try rt.run(string: """
            local ok, err = pcall(require('host').echo, coroutine.create(print))
            return err
            """).first?.stringValue?.contains("bad argument #1 to 'echo' (a thread value cannot be converted"), true)
        // A function crosses by reference: it comes back as itself.
        XCTAssertEqual(try rt.run(string: "return rawequal(require('host').echo(print), print)"), [true])
        XCTAssertEqual(try rt.run(string: "return select(2, pcall(require('host').echo, {1, x = 2}))")
            .first?.stringValue?.contains("mixes array and string keys"), true)
        XCTAssertThrowsError(try rt.run(string: "return require('dispatch').queue('q')")) { error in
            XCTAssertTrue("\(error)".contains("result #1"), "\(error)")
        }
        XCTAssertThrowsError(try rt.run(string: "local t = {}; t.t = t; return t")) { error in
            XCTAssertTrue("\(error)".contains("cyclic"), "\(error)")
        }
    }

    /// A preloaded module costs nothing until required: its source is compiled on first use
    /// (a syntax error surfaces there), runs once, and gets its host functions as `...`.
    func testPreloadedModulesLoadOnFirstRequire() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.preload(module: "lazy", source: "local host = ...; loads = (loads or 0) + 1; return {twice = host.twice}",
                   functions: ["twice": { [.integer($0[0].intValue! * 2)] }])
        rt.preload(module: "broken", source: "return (")
        XCTAssertEqual(try rt.run(string: "return loads, package.loaded.lazy, type(package.preload.lazy)"),
                       [.nil, .nil, "function"])
        XCTAssertEqual(try rt.run(string: "return require('lazy').twice(21), require('lazy').twice(1), loads"), [42, 2, 1])
        let r = try rt.run(string: "return pcall(require, 'broken')")
        XCTAssertEqual(r.first, false)
        XCTAssertTrue(r[1].stringValue?.contains("broken:1:") ?? false, "\(r)")
    }

    struct HostFailure: Error, CustomStringConvertible {
        var description: String { "disk on fire" }
    }

    func testHostErrorsAreLuaErrorsWithTheirMessage() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host", functions: ["fail": { _ in throw HostFailure() }])
        let r = try rt.run(string: "local ok, err = pcall(require('host').fail); return ok, err")
        XCTAssertEqual(r.first, false)
        XCTAssertTrue(r[1].stringValue!.contains("disk on fire"), "\(r)")
        XCTAssertTrue(r[1].stringValue!.contains("fail"), "\(r)")
    }

    func testLuaErrorsReachSwiftWithTheirTraceback() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        XCTAssertThrowsError(try rt.run(string: "local function inner() error('deep') end\ninner()", name: "=chunk")) { e in
            let error = e as! LuaScriptError
            XCTAssertTrue(error.message.contains("chunk:1: deep"), error.message)
            XCTAssertTrue(error.traceback.contains("stack traceback") && error.traceback.contains("inner"), error.traceback)
        }
        XCTAssertThrowsError(try rt.run(string: "this is not lua")) { e in
            XCTAssertTrue((e as! LuaScriptError).message.contains("syntax error"), "\(e)")
        }
        XCTAssertThrowsError(try rt.call("no_such_function")) { e in
            XCTAssertTrue("\(e)".contains("not a function"), "\(e)")
        }
        let seen = Collected()
        rt.uncaughtErrorHandler = { seen.add($0) }
        try rt.run(string: "require('dispatch').queue('async.fail'):async(function() error('later') end)")
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        let errors = seen.errors
        XCTAssertEqual(errors.count, 1)
        XCTAssertEqual(errors.first?.label, "async.fail")
        XCTAssertTrue(errors.first?.message.contains("later") ?? false)
        XCTAssertTrue(errors.first?.traceback.contains("stack traceback") ?? false)
    }

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [LuaScriptError] = []
        private var tags: [Int] = []
        func add(_ e: LuaScriptError) { lock.withLock { stored.append(e) } }
        func tag(_ t: Int) { lock.withLock { tags.append(t) } }
        var errors: [LuaScriptError] { lock.withLock { stored } }
        var order: [Int] { lock.withLock { tags } }
    }

    func testASharedQueueKeepsFIFOOrderAcrossLuaAndSwift() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let queue = DispatchQueue(label: "host.shared")
        let order = Collected()
        rt.register(module: "host", functions: [
            "record": { args in
                order.tag(args[0].intValue!)
                return []
            },
            "swift_async": { args in
                let n = args[0].intValue!
                queue.async { order.tag(n) }
                return []
            },
        ], queues: ["work": SharedQueue(queue)])
        try rt.run(string: """
            local host = require('host')
            assert(host.work.label == 'host.shared' and not host.work.concurrent)
            for i = 1, 200 do
              if i % 2 == 1 then host.work:async(function() host.record(i) end) else host.swift_async(i) end
            end
            """)
        queue.sync {}
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        XCTAssertEqual(order.order, Array(1...200))
    }

    func testChoosingStandardLibraries() throws {
        let safe = TestRuntimes.make(libraries: .safe)
        defer { safe.close() }
        XCTAssertEqual(try safe.run(string: "return io == nil, os == nil, string ~= nil, require('dispatch') ~= nil"),
                       [true, true, true, true])
        let bare = TestRuntimes.make(libraries: [.base])
        defer { bare.close() }
        XCTAssertEqual(try bare.run(string: "return require == nil, type(dispatch.queue), string == nil"),
                       [true, "function", true])
    }

    func testRunWithoutTakingOverTheMainThread() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let done = DispatchSemaphore(value: 0)
        let result = Collected()
        rt.register(module: "host", functions: ["done": { args in
            result.tag(args[0].intValue!)
            done.signal()
            return []
        }])
        // The script is started from a background thread; its main-queue block runs when this
        // (main) thread services the main queue, as an app's run loop would.
        DispatchQueue.global().async {
            _ = try? rt.run(string: """
                local host, dispatch = require('host'), require('dispatch')
                dispatch.main:async(function() host.done(dispatch.thread().is_main and 1 or 0) end)
                """)
        }
        let deadline = Date().addingTimeInterval(10)
        while done.wait(timeout: .now()) == .timedOut && Date() < deadline {
            _ = RunLoop.main.run(mode: .default, before: Date().addingTimeInterval(0.01))
        }
        XCTAssertEqual(result.order, [1])
    }

    func testCallFromInsideLuaIsRefusedNotDeadlocked() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        let failure = Collected()
        rt.register(module: "host", functions: ["reenter": { [unowned rt] _ in
            do { try rt.call("print") } catch let error as LuaScriptError { failure.add(error) }
            return []
        }])
        try rt.run(string: "require('host').reenter()")
        XCTAssertTrue(failure.errors.first?.message.contains("already running Lua") ?? false)
    }

    func testCloseIsDeterministicAndIdempotent() throws {
        let rt = TestRuntimes.make()
        try rt.run(string: """
            local dispatch = require('dispatch')
            parked = dispatch.queue('parked'); parked:suspend()
            for i = 1, 10 do parked:async(function() error('must not run after close') end) end
            idle = dispatch.queue{label = 'inactive', inactive = true}
            idle:async(function() end)
            busy = dispatch.queue('busy')
            busy:async(function() dispatch.sleep(0.05) end)
            """)
        let errors = Collected()
        rt.uncaughtErrorHandler = { errors.add($0) }
        rt.close()          // waits for the sleeping block
        rt.close()
        XCTAssertThrowsError(try rt.run(string: "return 1"))
        XCTAssertTrue(rt.waitUntilIdle(timeout: 10))
        XCTAssertEqual(errors.errors.count, 0)
    }

    func testCloseResumesTheMainQueueLuaSuspended() throws {
        let rt = TestRuntimes.make()
        try rt.run(string: "require('dispatch').main:suspend()")
        rt.close()
        let ran = expectation(description: "main queue runs again")
        DispatchQueue.main.async { ran.fulfill() }
        wait(for: [ran], timeout: 5)
    }

    /// Thread count and memory stay flat over many interpreters created, used and closed.
    func testManyInterpretersLeaveNoThreadsOrMemoryBehind() throws {
        func cycle(_ n: Int) throws {
            for _ in 0..<n {
                // Untracked: each is closed here, and the list would hold the memory the test bounds.
                let rt = TestRuntimes.untracked()
                rt.register(module: "host", functions: ["twice": { [.integer($0[0].intValue! * 2)] }])
                let r = try rt.run(string: """
                    local dispatch = require('dispatch')
                    local q = dispatch.queue{label = 'w', concurrent = true}
                    local g, n, count = dispatch.group(), 0, dispatch.queue('count')
                    for i = 1, 20 do
                      q:async(function()
                        local v = require('host').twice(1)
                        count:sync(function() n = n + v end)   -- blocks of q may interleave
                      end, {group = g})
                    end
                    g:wait()
                    local s = dispatch.queue('s'); s:suspend(); s:async(function() end)
                    return n
                    """)
                XCTAssertEqual(r, [40])
                rt.close()
            }
        }
        try cycle(30)  // warm up Dispatch's thread pool and malloc's arenas
        Thread.sleep(forTimeInterval: 0.5)
        let threads0 = ProcessStats.threads(), rss0 = ProcessStats.rss()
        try cycle(200)
        // Workers that Dispatch added while others were blocked on the interpreter lock retire
        // after 5 s idle (libdispatch's pool timeout on Linux); a thread kept per interpreter never
        // does. So wait for the count to settle rather than bound the pool's transient growth.
        var threads1 = ProcessStats.threads()
        let settle = Date().addingTimeInterval(15)
        while threads1 > threads0 + 8 && Date() < settle {
            Thread.sleep(forTimeInterval: 0.25)
            threads1 = ProcessStats.threads()
        }
        let rss1 = ProcessStats.rss()
        XCTAssertLessThanOrEqual(threads1, threads0 + 8, "threads grew from \(threads0) to \(threads1) and stayed")
        // Under AddressSanitizer freed memory stays resident in its quarantine (256 MiB): 41 MiB
        // was seen there. The bound holds for the plain build; ASan checks for leaks itself.
        if !underAddressSanitizer {
            XCTAssertLessThan(rss1 - rss0, 40 << 20, "RSS grew by \((rss1 - rss0) >> 20) MiB")
        }
    }
}

enum ProcessStats {
    static func status(_ key: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(key + ":") } ?? ""
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
            ?? line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces)) ?? 0
    }

    static func threads() -> Int { status("Threads") }
    static func rss() -> Int { status("VmRSS") * 1024 }
}
