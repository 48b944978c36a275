import Foundation
import Synchronization
import XCTest
@testable import LuaDispatch

/// Async host functions: a task suspends in them without holding a thread, a plain block waits
/// with the interpreter released, cancelling the task cancels the Swift `Task`.
final class AsyncHostFunctionTests: XCTestCase {
    struct NotFound: Error, CustomStringConvertible { var description: String { "no such page" } }

    /// What the Swift side of `slow` saw.
    final class Observed: @unchecked Sendable {
        let started = Atomic<Int>(0)
        let cancelled = Atomic<Int>(0)
        let finished = Atomic<Int>(0)
    }

    private func setup(_ observed: Observed) -> (Runtime) -> Void {
        { rt in
            rt.register(module: "host") { m in
                m.asyncFunction("fetch") { (page: String, delay: Double?) async throws -> String in
                    try await Task.sleep(nanoseconds: UInt64((delay ?? 0.01) * 1e9))
                    guard page != "missing" else { throw NotFound() }
                    return "<" + page + ">"
                }
                m.asyncFunction("slow") { (seconds: Double) async throws in
                    observed.started.add(1, ordering: .relaxed)
                    do { try await Task.sleep(nanoseconds: UInt64(seconds * 1e9)) } catch {
                        observed.cancelled.add(1, ordering: .relaxed)
                        throw error
                    }
                    observed.finished.add(1, ordering: .relaxed)
                }
                m.asyncFunction("count") { (list: [Int]) async -> Int in list.count }
            }
        }
    }

    func testResultsAndErrorsInTasksPlainBlocksAndTheMainChunk() {
        let run = runLua("""
            local host = require('host')
            t.record(host.fetch('main chunk'), host.count({1, 2, 3}))
            local task = dispatch.task(function()
              local ok, err = pcall(host.fetch, 'missing')
              return host.fetch('task'), err, dispatch.in_task()
            end)
            t.record(select(2, task:wait()))
            dispatch.queue('plain'):sync(function() t.record(host.fetch('block')) end)
            t.record(select(2, pcall(host.fetch, 42)))
            """, setup: setup(Observed()))
        assertClean(run)
        XCTAssertEqual(run.records, [["<main chunk>", 3], ["<task>", "fetch: no such page", true], ["<block>"],
                                     ["bad argument #1 to 'fetch' (string expected, got number)"]])
    }

    /// A plain block waiting in an async host function has released the interpreter: another
    /// block runs Lua meanwhile, and finishes first.
    func testAPlainBlockWaitsWithTheInterpreterReleased() {
        let run = runLua("""
            local host = require('host')
            local order = dispatch.queue('order')
            local function note(s) order:sync(function() t.record(s) end) end
            local g = dispatch.group()
            dispatch.queue('waiter'):async(function() note('waiting'); host.slow(0.3); note('waited') end, {group = g})
            dispatch.sleep(0.05)
            dispatch.queue('other'):async(function() note('other ran') end, {group = g})
            g:wait()
            """, setup: setup(Observed()))
        assertClean(run)
        XCTAssertEqual(run.strings, ["waiting", "other ran", "waited"])
    }

    /// A thousand tasks awaiting an async host function at once finish together, on few threads:
    /// a suspended task holds none, and the Swift side awaits without blocking.
    func testAThousandTasksAwaitOnFewThreads() {
        let observed = Observed()
        let run = runLua("""
            local host = require('host')
            local function threads()
              local f = io.open('/proc/self/status'); local s = f:read('a'); f:close()
              return tonumber(s:match('Threads:%s*(%d+)'))
            end
            local before = threads()
            local seen = dispatch.queue('seen')
            local threadsUsed, count = {}, 0
            local tasks = {}
            local t0 = dispatch.now()
            for i = 1, 1000 do
              tasks[i] = dispatch.task(function()
                host.slow(0.5)
                local n = dispatch.thread().number
                seen:sync(function() if not threadsUsed[n] then threadsUsed[n] = true; count = count + 1 end end)
              end)
            end
            dispatch.sleep(0.25)
            local during = threads()
            for i = 1, 1000 do tasks[i]:wait() end
            t.record(dispatch.now() - t0, before, during, seen:sync(function() return count end))
            """, timeout: 60, setup: setup(observed))
        assertClean(run)
        let r = run.records.first ?? []
        XCTAssertEqual(observed.finished.load(ordering: .relaxed), 1000)
        XCTAssertLessThan(r[0].doubleValue ?? 99, 5, "1000 waits of 0.5 s took \(r[0]) s")
        XCTAssertLessThanOrEqual(r[3].intValue ?? 99, 16, "Lua ran on \(r[3]) threads")
        XCTAssertLessThanOrEqual((r[2].intValue ?? 99) - (r[1].intValue ?? 0), 16, "threads grew from \(r[1]) to \(r[2])")
    }

    /// Cancelling a task in the middle of an async host call cancels the Swift Task: it stops
    /// sleeping at once, and the Lua call raises the task's cancellation.
    func testCancellingTheTaskCancelsTheSwiftTask() {
        let observed = Observed()
        let run = runLua("""
            local host = require('host')
            local task = dispatch.task(function() host.slow(30) end)
            dispatch.sleep(0.2)
            task:cancel()
            local t0 = dispatch.now()
            t.record(pcall(task.wait, task))
            t.record(dispatch.now() - t0 < 5)
            """, timeout: 20, setup: setup(observed))
        assertClean(run)
        XCTAssertEqual(run.records.first?.first, false)
        XCTAssertTrue(run.records.first?.last?.stringValue?.contains("task cancelled (in 'slow')") ?? false, "\(run.records)")
        XCTAssertEqual(run.records.last, [true])
        // The Swift side saw the cancellation (soon: the task's next step ends the wait).
        let deadline = Date(timeIntervalSinceNow: 5)
        while observed.cancelled.load(ordering: .relaxed) == 0 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(observed.started.load(ordering: .relaxed), 1)
        XCTAssertEqual(observed.cancelled.load(ordering: .relaxed), 1)
        XCTAssertEqual(observed.finished.load(ordering: .relaxed), 0)
    }

    /// An async method of a Swift object, awaited from a task.
    func testAsyncMethods() {
        final class Store: LuaUserData {
            static let luaType = LuaType<Store>("Store") { t in
                t.asyncMethod("load") { (s: Store, key: String) async throws -> String in
                    await Task.yield()
                    return "value of \(key)"
                }
            }
        }
        let run = runLua("""
            local store = require('host').store
            t.record(select(2, dispatch.task(function() return store:load('k') end):wait()))
            t.record(select(2, pcall(store.load, {}, 'k')))
            """, setup: { rt in rt.register(module: "host") { m in m.value("store", Store()) } })
        assertClean(run)
        XCTAssertEqual(run.records, [["value of k"], ["bad argument #1 to 'load' (Store expected, got table)"]])
    }
}
