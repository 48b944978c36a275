import XCTest
@testable import LuaDispatch

/// Numbers from Lua are range-checked before Swift arithmetic or a conversion uses them (Swift
/// traps on overflow, which ended the process): out of range is lauxlib's `bad argument`.
final class RangeCheckTests: XCTestCase {
    /// The error of `code`, without its position.
    private func bad(_ code: String, line: UInt = #line) -> String {
        luaError(code, line: line).replacingOccurrences(of: #"^test:\d+: "#, with: "", options: .regularExpression)
    }

    // TimeBinding.swift
    func testDatesBeyondWhatNanosecondsHoldAreErrors() {
        for code in ["dispatch.walltime{year = 3000, month = 1, day = 1}", "dispatch.walltime('0001-01-01 00:00:00')",
                     "dispatch.walltime{year = 1677, month = 1, day = 1}", "dispatch.walltime('2262-12-31 00:00:00')"] {
            XCTAssertEqual(bad(code), "bad argument #1 to 'walltime' (date out of range)", code)
        }
        let run = runLua("""
            t.record(tostring(dispatch.walltime{year = 2262, month = 4, day = 11}), tostring(dispatch.walltime{year = 1678, month = 1, day = 1}))
            t.record(tostring(dispatch.walltime(-1e300) - 1e300), tostring(dispatch.walltime(1e300) + 1e300))
            t.record(tostring(dispatch.walltime(-1)), tostring(dispatch.walltime(-0.5)))
            t.record(tostring(dispatch.now() - math.huge), tostring(dispatch.now() + -math.huge))
            """)
        assertClean(run)
        XCTAssertEqual(run.records[0], ["2262-04-11 00:00:00", "1678-01-01 00:00:00"])
        XCTAssertEqual(run.records[1], ["1677-09-21 00:12:43.145224", "2262-04-11 23:47:16.854775"])
        XCTAssertEqual(run.records[2], ["1969-12-31 23:59:59", "1969-12-31 23:59:59.500000"])
        XCTAssertEqual(run.records[3], ["dispatch.time(1e-09)", "dispatch.time(1e-09)"])
    }

    // ConcurrentMapBinding.swift
    func testConcurrentMapCountsAndChunksOutOfRange() {
        for code in ["dispatch.concurrent_map(math.maxinteger, function() end)",
                     "dispatch.concurrent_map(2^34, function() end, {chunk = 1})",
                     "dispatch.concurrent_map(2^31, function() end)"] {
            XCTAssertEqual(bad(code), "bad argument #1 to 'concurrent_map' (count out of range)", code)
        }
        XCTAssertEqual(bad("dispatch.concurrent_map(2^31 - 1, function() end, {chunk = 1})"),
                       "bad argument #3 to 'concurrent_map' (option 'chunk' too small: more than 8388608 chunks)")
        let run = runLua("t.record(#dispatch.concurrent_map(5, function(i) return i end, {chunk = math.maxinteger}))")
        assertClean(run)
        XCTAssertEqual(run.ints, [5])
    }

    // SwitchingBinding.swift
    func testSwitchIntervalShowsAnyBadNumber() {
        XCTAssertEqual(bad("dispatch.switch_interval(-1e308)"), "bad argument #1 to 'switch_interval' (interval must be >= 0, got -1e+308)")
        XCTAssertEqual(bad("dispatch.switch_interval(-math.huge)"), "bad argument #1 to 'switch_interval' (interval must be >= 0, got -inf)")
        XCTAssertEqual(bad("dispatch.switch_interval(math.mininteger)"),
                       "bad argument #1 to 'switch_interval' (interval must be >= 0, got -9223372036854775808)")
    }

    // ThreadBinding.swift
    func testKillPidOutOfRange() {
        XCTAssertEqual(bad("dispatch.kill(math.maxinteger, 0)"), "bad argument #1 to 'kill' (pid out of range)")
        XCTAssertEqual(bad("dispatch.kill(2^32 + 1, 0)"), "bad argument #1 to 'kill' (pid out of range)")
    }
}
