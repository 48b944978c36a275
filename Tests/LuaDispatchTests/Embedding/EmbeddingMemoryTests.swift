import Foundation
import Synchronization
import XCTest
import CLuaShim
@testable import LuaDispatch

/// Values crossing the boundary leave nothing behind: no Swift object, no registry reference, no
/// Lua memory, no resident memory, over 100,000 round trips.
final class EmbeddingMemoryTests: XCTestCase {
    static let live = Atomic<Int>(0)

    final class Tracked: LuaUserData {
        static let luaType = LuaType<Tracked>("Tracked") { t in
            t.method("id") { (_: Tracked, i: Int) in i }
        }
        init() { EmbeddingMemoryTests.live.add(1, ordering: .relaxed) }
        deinit { EmbeddingMemoryTests.live.subtract(1, ordering: .relaxed) }
    }

    struct Payload: LuaCodable { var n: Int; var tags: [String] }

    func testAHundredThousandRoundTripsLeaveMemoryFlat() throws {
        let rt = TestRuntimes.make()
        defer { rt.close() }
        rt.register(module: "host") { m in
            m.function("wrap") { (o: Tracked, f: LuaFunction, t: LuaTable, p: Payload) -> LuaFunction in
                _ = (o, t, p)
                return f
            }
            m.function("untyped") { args in args }
        }
        // One round trip: Swift calls Lua with a new object and a Codable value; Lua calls a
        // typed and an untyped host function with the object, a new closure, a new table; the
        // closure comes back to Swift, which calls it and reads a live table.
        let trip = try rt.load("""
            local host = require('host')
            return function(obj, i, payload)
              local f = host.wrap(obj, function() return obj:id(i) end, {i}, payload)
              host.untyped(obj, f, {x = i})
              return f, {value = i}
            end
            """).call(returning: LuaFunction.self)
        let stats = try rt.load("""
            collectgarbage(); collectgarbage()
            local refs = 0
            for k, v in pairs(debug.getregistry()) do if math.type(k) == 'integer' then refs = refs + 1 end end
            return collectgarbage('count'), refs
            """)
        /// The async form of a call, awaited from a Swift task.
        func viaTask(_ f: LuaFunction) -> Int? {
            let result = Mutex<Int?>(nil), done = DispatchSemaphore(value: 0)
            Task {
                let v = try? await f.call(returning: Int.self)
                result.withLock { $0 = v }
                done.signal()
            }
            done.wait()
            return result.withLock { $0 }
        }
        func round(_ count: Int, from start: Int) throws {
            for i in start..<start + count {
                let results = try trip.call(Tracked(), i, Payload(n: i, tags: ["a"]))
                guard case .function(let f) = results[0] else { return XCTFail("no function") }
                let value = try f.call(returning: Int.self)
                let table = try LuaDecoder().decode([String: Int].self, from: results[1])
                if value != i || table["value"] != i { return XCTFail("round trip \(i): \(value), \(table)") }
                if i % 10 == 0, viaTask(f) != i { return XCTFail("async round trip \(i)") }
            }
        }
        try round(20_000, from: 0)
        let before = try stats.call()
        let rss0 = ProcessStats.rss()
        try round(80_000, from: 20_000)
        let after = try stats.call()
        let rss1 = ProcessStats.rss()
        let luaKB = (after[0].doubleValue ?? 0) - (before[0].doubleValue ?? 0)
        let refs = (after[1].intValue ?? 0) - (before[1].intValue ?? 0)
        XCTAssertLessThan(luaKB, 64, "Lua's memory grew by \(luaKB) KB")
        XCTAssertLessThanOrEqual(refs, 4, "\(refs) registry references more")
        XCTAssertLessThanOrEqual(Self.live.load(ordering: .relaxed), 4, "Swift objects still alive")
        // Under AddressSanitizer freed memory is quarantined, so resident memory is no measure.
        if ld_pool_enabled() != 0 {
            XCTAssertLessThan(rss1 - rss0, 16 << 20, "resident memory grew by \((rss1 - rss0) >> 20) MiB")
        }
    }
}
