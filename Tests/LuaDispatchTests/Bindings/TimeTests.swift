import XCTest
@testable import LuaDispatch

final class TimeTests: XCTestCase {
    func testMonotonicArithmeticAndComparison() {
        let run = runLua("""
            local a = dispatch.now()
            local b = a + 1.5
            t.record(b - a, (b - 0.5) - a, a < b, b > a, a == a + 0, a <= a, 2 + a == a + 2)
            local c = dispatch.now()
            t.record(c >= a, c - a >= 0)
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], [1.5, 1.0, true, true, true, true, true])
        XCTAssertEqual(run.records[1], [true, true])
    }

    func testWallTimeFromStringTableAndNumber() {
        let run = runLua("""
            local w = dispatch.walltime("2018-03-08 13:30:00")
            t.record(tostring(w), w.seconds)
            t.record(w == dispatch.walltime{year = 2018, month = 3, day = 8, hour = 13, min = 30})
            t.record(w == dispatch.walltime(1520515800))
            t.record(tostring(w + 90), (w + 3600) - w, w < w + 1)
            local now = dispatch.walltime()
            t.record(now.seconds > 1.7e9)
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["2018-03-08 13:30:00", 1520515800.0])
        XCTAssertEqual(run.records[1], [true])
        XCTAssertEqual(run.records[2], [true])
        XCTAssertEqual(run.records[3], ["2018-03-08 13:31:30", 3600.0, true])
        XCTAssertEqual(run.records[4], [true])
    }

    func testBadTimes() {
        XCTAssertTrue(luaError("dispatch.walltime('yesterday')").contains("YYYY-MM-DD HH:MM:SS"))
        XCTAssertTrue(luaError("dispatch.walltime{year = 2020}").contains("field 'month' missing"))
        XCTAssertTrue(luaError("return dispatch.now() < dispatch.walltime()").contains("dispatch.time expected"))
        XCTAssertTrue(luaError("return dispatch.now() + 'x'").contains("number expected"))
        XCTAssertTrue(luaError("dispatch.walltime(1/0)").contains("finite"))
    }

    /// As DispatchTime in Swift's overlay: `now - math.huge` is uptime 1 ns, and `now +
    /// math.huge` one farthest time whatever `now`. Wall times are not bounded that way.
    func testMonotonicTimesStayWithinDispatchTime() {
        let run = runLua("""
            local a = dispatch.now()
            dispatch.sleep(0.001)
            local b = dispatch.now()
            t.record((a - math.huge).seconds, a - math.huge == b - 1e300, a + math.huge == b + math.huge)
            t.record(a + math.huge > b + 1e9, (a - math.huge) < a, ((a + math.huge) - a) > 146 * 365 * 86400)
            local w = dispatch.walltime()
            t.record((w - 2e9).seconds < 0)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[1e-9, true, true], [true, true, true], [true]])
    }

    func testHugeDeadlinesAreClampedNotFatal() {
        // DISPATCH_TIME_FOREVER in asyncAfter aborts libdispatch; the runtime clamps instead.
        let run = runLua("""
            local g = dispatch.group()
            t.record(g:wait(1e300))
            t.record(dispatch.semaphore(0):wait(-5))
            local q = dispatch.queue("far")
            q:suspend()
            q:after(math.huge, function() end)
            q:after(dispatch.now() + 1e300, function() end)
            t.record("survived")
            """, drive: false)
        assertClean(run)
        XCTAssertEqual(run.records, [[true], [false, "timeout"], ["survived"]])
    }
}
