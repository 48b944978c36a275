import Dispatch
import Foundation
import XCTest
@testable import LuaDispatch

/// A host that drives the main queue itself, and what a host function may call back into.
final class HostLoopTests: XCTestCase {
    /// A script on a host thread parked in `dispatch.main:sync` is outstanding work, and
    /// `run(.once)` runs its block: a loop that services the main queue only while
    /// `pendingWork > 0` lets the script finish.
    func testAMainQueueSyncFromAnotherThreadIsPendingWork() throws {
        // Not closed if the script hangs (close would wait for it): leaked then.
        let rt = TestRuntimes.make()
        XCTAssertEqual(rt.pendingWork, 0)
        let done = DispatchSemaphore(value: 0)
        let result = Locked<[LuaValue]?>(nil)
        Thread.detachNewThread {
            let r = try? rt.run(string: """
                local dispatch = require("dispatch")
                local item = dispatch.work_item(function() end)
                dispatch.main:sync(item)
                return dispatch.main:sync(function() return dispatch.thread().is_main end), dispatch.thread().is_main
                """)
            result.set(r)
            done.signal()
        }
        // The host loop the guide shows: service the main queue while there is work, else wait.
        var sawWork = false
        let deadline = Date().addingTimeInterval(20)
        while done.wait(timeout: .now()) == .timedOut {
            guard Date() < deadline else { return XCTFail("the script never finished: \(rt.outstandingWork() ?? "no work")") }
            if rt.pendingWork > 0 {
                sawWork = true
                rt.run(.once)
            } else {
                usleep(1000)
            }
        }
        XCTAssertTrue(sawWork)
        XCTAssertEqual(result.get(), [true, false])
        XCTAssertEqual(rt.pendingWork, 0)
        rt.close()
    }

    /// `run(.once)` returns once the parked block ran, with no work left.
    func testRunOnceServicesAParkedSync() throws {
        let rt = TestRuntimes.make()   // not closed if the script hangs
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? rt.run(string: "local d = require('dispatch'); d.main:sync(function() end)")
            done.signal()
        }
        let parked = "1 block running or parked in a blocking call; "
            + "queue 'com.apple.main-thread' (not suspended): 1 block or source waiting"
        let deadline = Date().addingTimeInterval(20)
        while rt.outstandingWork() != parked && Date() < deadline { usleep(1000) }
        XCTAssertEqual(rt.outstandingWork(), parked)
        XCTAssertEqual(rt.pendingWork, 1)
        rt.run(.once)
        guard done.wait(timeout: .now() + 20) == .success else { return XCTFail("run(.once) did not run the sync's block") }
        XCTAssertEqual(rt.pendingWork, 0)
        XCTAssertFalse(rt.run(.once))
        rt.close()
    }

    /// Inside a host function, `run` throws (as `call` does) instead of waiting for the
    /// interpreter its own thread holds; the blocking waits return at once; the runtime then
    /// closes normally.
    func testRunInsideAHostFunctionThrows() throws {
        let rt = TestRuntimes.make()
        let outcomes = Locked<[String]>([])
        rt.register(module: "host") { m in
            m.function("nested") { () -> String in
                for attempt in [{ try rt.run(string: "return 1") }, { try rt.run(file: "/dev/null") }, { try rt.call("print") }] {
                    do { _ = try attempt() } catch let e as LuaScriptError { outcomes.mutate { $0.append(e.message) } }
                }
                rt.runUntilIdle()
                outcomes.mutate { $0.append("waitUntilIdle: \(rt.waitUntilIdle(timeout: 5))") }
                return try rt.load("return 'loaded chunks nest'").call(returning: String.self)
            }
        }
        let done = DispatchSemaphore(value: 0)
        let result = Locked<[LuaValue]?>(nil)
        Thread.detachNewThread {
            result.set(try? rt.run(string: "return require('host').nested()"))
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success else {
            return XCTFail("run inside a host function hung")   // the runtime is leaked: it cannot close
        }
        XCTAssertEqual(result.get(), ["loaded chunks nest"])
        XCTAssertEqual(outcomes.get(), [
            "run(string:): the calling thread is already running Lua (inside a host function, compile with load(_:) and call the function)",
            "run(file:): the calling thread is already running Lua (inside a host function, compile with load(_:) and call the function)",
            "call(\"print\"): the calling thread is already running Lua",
            "waitUntilIdle: false",
        ])
        rt.close()
        XCTAssertThrowsError(try rt.run(string: "return 1"))
    }
}

/// A value behind a lock, for results handed between threads in tests.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func get() -> T { lock.withLock { value } }
    func set(_ v: T) { lock.withLock { value = v } }
    func mutate(_ body: (inout T) -> Void) { lock.withLock { body(&value) } }
}
