import CLua
import CLuaShim
import XCTest
@testable import LuaDispatch

/// The runtime's Lua states take small blocks from pages of their own (alloc.c): what Lua keeps
/// there stays intact through growth, shrinking and collection, and pages a script stops using
/// go back. (Under AddressSanitizer every block comes from the C library instead.)
final class AllocatorTests: XCTestCase {
    /// Pages in use by the runtime's state, under its lock.
    private func pages(_ runtime: Runtime) -> Int {
        runtime.acquire()
        defer { runtime.release() }
        return ld_state_pages(runtime.L)
    }

    func testPagesAreTakenForSmallObjectsAndGivenBackWhenCollected() {
        let run = runLua("""
            keep = {}
            for i = 1, 200000 do keep[i] = {i} end
            """)
        assertClean(run)
        let grown = pages(run.runtime)
        guard ld_pool_enabled() != 0 else {
            XCTAssertEqual(grown, 0, "without pages of its own, a state reports none")
            return
        }
        // 200,000 tables of 56 bytes plus their one-slot arrays: about 4,000 pages.
        XCTAssertGreaterThan(grown, 3000)
        try? run.runtime.run(string: "keep = nil; collectgarbage(); collectgarbage()", name: "=drop")
        let left = pages(run.runtime)
        XCTAssertLessThan(left, grown / 10, "pages were not given back: \(grown) -> \(left)")
    }

    /// Size classes go by 8 bytes: a closure with one upvalue (40 bytes in Lua 5.4) takes 40,
    /// not 48 (what every block pending on a queue holds, so what a script submitting in a loop
    /// pays per block).
    func testClosuresTakeTheirOwnSize() throws {
        try XCTSkipUnless(ld_pool_enabled() != 0, "blocks come from the C library under AddressSanitizer")
        let run = runLua("local up = 0; keep = {}")
        assertClean(run)
        let before = pages(run.runtime)
        try run.runtime.run(string: """
            local up = 0
            for i = 1, 100000 do keep[i] = function() up = up + 1 end end
            """, name: "=closures")
        let used = pages(run.runtime) - before
        // 100,000 closures: about 980 pages at 40 bytes each, 1,180 at 48.
        XCTAssertGreaterThan(used, 900)
        XCTAssertLessThan(used, 1080, "\(used) pages for 100,000 closures of 40 bytes")
    }

    /// Blocks that move between sizes (strings built up, tables that grow and shrink, across the
    /// small/large boundary both ways) keep their contents, and closing the state finds every
    /// small block freed (a debug-build assertion in `Runtime.close`).
    func testContentsSurviveMovesBetweenSizes() {
        let run = runLua("""
            local sum = 0
            for round = 1, 3 do
              local t = {}
              for i = 1, 600 do
                t[i] = string.rep(string.char(65 + i % 26), i % 300)
                if i % 7 == 0 then t[i - 3] = nil end
              end
              local h = {}
              for i = 1, 300 do h["k" .. i] = i end
              for i = 1, 290 do h["k" .. i] = nil end
              collectgarbage()
              for k, v in pairs(h) do sum = sum + v end
              for i, s in pairs(t) do
                assert(#s == i % 300 and (s == "" or s:byte(1) == 65 + i % 26), i)
                sum = sum + #s
              end
              local parts = {}
              for i = 1, 200 do parts[#parts + 1] = tostring(i) end
              sum = sum + #table.concat(parts, ",")
            end
            t.record(sum)
            """)
        assertClean(run)
        // The same computation in Swift.
        var expected = 0
        for _ in 1...3 {
            var t: [Int: Int] = [:]
            for i in 1...600 {
                t[i] = i % 300
                if i % 7 == 0 { t[i - 3] = nil }
            }
            expected += (291...300).reduce(0, +)
            expected += t.values.reduce(0, +)
            expected += (1...200).map(String.init).joined(separator: ",").count
        }
        XCTAssertEqual(run.ints, [expected])
        run.runtime.close()
    }
}
