import Dispatch
import Foundation
import XCTest
@testable import LuaDispatch

/// Queue QoS as in Swift: a queue made without a QoS takes its target's, and `q.qos` is what
/// Dispatch reports. Each Lua result is compared with the same construction in plain Swift.
final class QueueQoSTests: XCTestCase {
    static let levels = ["background", "utility", "default", "user_initiated"]

    /// Four concurrent queues without a QoS, each targeting the global queue of one level, run
    /// their blocks on that level's own worker threads: no thread serves two levels. (With the
    /// old default of "default", all four ran on the default level's threads, one after another.)
    func testQueuesWithoutQoSRunOnTheirTargetLevelsThreads() {
        let lua = luaThreadsPerLevel(qosOption: "")
        XCTAssertEqual(Set(lua.keys), Set(Self.levels))
        XCTAssertTrue(Self.disjoint(lua), "Lua: a thread served two QoS levels: \(lua)")
        let swift = swiftThreadsPerLevel(qos: .unspecified)
        XCTAssertTrue(Self.disjoint(swift), "Swift: a thread served two QoS levels: \(swift)")
    }

    /// An explicit QoS wins over the target global queue's, in Lua as in Swift: four queues with
    /// qos "default" share the default level's threads whatever global queue they target.
    func testAnExplicitQoSWinsOverTheTargetGlobalQueues() {
        let lua = luaThreadsPerLevel(qosOption: "qos = 'default',")
        let swift = swiftThreadsPerLevel(qos: .default)
        XCTAssertFalse(Self.disjoint(swift), "Swift: expected shared threads: \(swift)")
        XCTAssertFalse(Self.disjoint(lua), "Lua: expected shared threads, as in Swift: \(lua)")
    }

    /// `q.qos` is read back from Dispatch, and agrees with Swift's `DispatchQueue.qos` for the
    /// same construction.
    func testQoSIsReadBackFromDispatch() {
        let run = runLua("""
            t.record(dispatch.queue("plain").qos)
            t.record(dispatch.queue{label = "u", qos = "utility"}.qos)
            t.record(dispatch.queue{label = "tb", target = dispatch.global("background")}.qos)
            t.record(dispatch.queue{label = "ti", qos = "user_initiated", target = dispatch.global("background")}.qos)
            t.record(dispatch.queue{label = "x", qos = "unspecified"}.qos)
            t.record(dispatch.global("utility").qos, dispatch.global().qos)
            t.record(dispatch.main.qos)
            """)
        assertClean(run)
        func name(_ q: DispatchQueue) -> String { QoS.name(q.qos.qosClass) }
        let expected: [[LuaValue]] = [
            [.string(name(DispatchQueue(label: "plain")))],
            [.string(name(DispatchQueue(label: "u", qos: .utility)))],
            [.string(name(DispatchQueue(label: "tb", target: .global(qos: .background))))],
            [.string(name(DispatchQueue(label: "ti", qos: .userInitiated, target: .global(qos: .background))))],
            [.string(name(DispatchQueue(label: "x", qos: .unspecified)))],
            [.string(name(.global(qos: .utility))), .string(name(.global()))],
            [.string(name(.main))],
        ]
        XCTAssertEqual(run.records.all, expected)
        // What those are, so that the comparison cannot pass with everything "unspecified".
        XCTAssertEqual(run.records[1], ["utility"])
        XCTAssertEqual(run.records[2], ["background"])
        XCTAssertEqual(run.records[3], ["user_initiated"])
        // The default global queue is Dispatch's fallback for work without a QoS: it reports none.
        XCTAssertEqual(run.records[5], ["utility", "unspecified"])
    }

    /// An inactive queue's QoS changes when it gets a target and when it is activated: `q.qos`
    /// follows as Swift's `DispatchQueue.qos` does, also after the queue's first method call
    /// (which gives it a fields table of its own, set again where the QoS can change).
    func testQoSFollowsSetTargetAndActivate() {
        let run = runLua("""
            local q = dispatch.queue{label = "late", inactive = true}
            t.record(q.qos)
            q:set_target(dispatch.global("background"))
            t.record(q.qos)
            q:activate()
            t.record(q.qos)
            local r = dispatch.queue{label = "early", inactive = true}
            r:set_target(dispatch.global("utility"))
            r:activate()
            t.record(r.qos)
            """)
        assertClean(run)
        func name(_ q: DispatchQueue) -> String { QoS.name(q.qos.qosClass) }
        let q = DispatchQueue(label: "late", attributes: .initiallyInactive)
        var expected = [name(q)]
        q.setTarget(queue: .global(qos: .background))
        expected.append(name(q))
        q.activate()
        expected.append(name(q))
        let r = DispatchQueue(label: "early", attributes: .initiallyInactive)
        r.setTarget(queue: .global(qos: .utility))
        r.activate()
        expected.append(name(r))
        XCTAssertEqual(run.strings, expected)
        XCTAssertEqual(run.strings.last, "utility", "the comparison must not pass with everything unspecified")
    }

    // MARK: helpers

    /// Thread numbers that ran blocks of each level's queue. Every block sleeps a moment, so that
    /// each level needs more than one thread and levels overlap in time.
    private func luaThreadsPerLevel(qosOption: String) -> [String: Set<Int>] {
        let run = runLua("""
            local group = dispatch.group()
            for _, level in ipairs({"background", "utility", "default", "user_initiated"}) do
                local q = dispatch.queue{label = level, concurrent = true, \(qosOption) target = dispatch.global(level)}
                for _ = 1, 6 do
                    q:async(function()
                        t.record(level, dispatch.thread().number)
                        dispatch.sleep(0.02)
                    end, {group = group})
                end
            end
            group:wait()
            """)
        assertClean(run)
        var result: [String: Set<Int>] = [:]
        for r in run.records {
            if let level = r[0].stringValue, let n = r[1].intValue { result[level, default: []].insert(n) }
        }
        return result
    }

    private func swiftThreadsPerLevel(qos: DispatchQoS) -> [String: Set<UInt>] {
        final class Threads: @unchecked Sendable {
            let lock = NSLock()
            var byLevel: [String: Set<UInt>] = [:]
            func add(_ level: String) { lock.withLock { _ = byLevel[level, default: []].insert(UInt(pthread_self())) } }
        }
        let group = DispatchGroup()
        let threads = Threads()
        let classes: [DispatchQoS.QoSClass] = [.background, .utility, .default, .userInitiated]
        for (level, cls) in zip(Self.levels, classes) {
            let q = DispatchQueue(label: level, qos: qos, attributes: .concurrent, target: .global(qos: cls))
            for _ in 0..<6 {
                q.async(group: group) {
                    threads.add(level)
                    usleep(20_000)
                }
            }
        }
        group.wait()
        return threads.lock.withLock { threads.byLevel }
    }

    private static func disjoint<T: Hashable>(_ sets: [String: Set<T>]) -> Bool {
        var seen = Set<T>()
        for s in sets.values {
            if !seen.isDisjoint(with: s) { return false }
            seen.formUnion(s)
        }
        return true
    }
}
