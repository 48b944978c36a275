import XCTest
@testable import LuaDispatch
import CLuaShim

/// Blocking calls that run Lua code on the calling OS thread nest at most LD_MAX_NESTING deep:
/// past that, a "stack overflow" error, not the end of the process's C stack (SIGSEGV).
final class NestingTests: XCTestCase {
    /// Each form recursing without end: the error names the overflow, and the depth reached is
    /// the bound (or close to it: concurrent_perform and perform add no level of their own).
    private let forms: [(String, String)] = [
        ("global sync", "dispatch.global():sync(function() f() end)"),
        ("queue sync", "dispatch.queue('q' .. depth):sync(function() f() end)"),
        ("barrier_sync", "dispatch.queue('c' .. depth, {concurrent = true}):barrier_sync(function() f() end)"),
        ("perform", "dispatch.work_item(function() f() end):perform()"),
        ("sync of an item", "dispatch.global():sync(dispatch.work_item(function() f() end))"),
        ("concurrent_perform", "dispatch.concurrent_perform(1, function() f() end)"),
        ("mixed", "if depth % 2 == 0 then dispatch.global():sync(f) else dispatch.concurrent_perform(1, f) end"),
    ]

    private func script(_ call: String) -> String {
        """
        local depth, err = 0, nil
        function f()
            depth = depth + 1
            local ok, e = pcall(function() \(call) end)
            if not ok and not err then err = e end
        end
        """
    }

    func testNestedBlockingCallsOnTheMainThreadEndInStackOverflow() {
        for (name, call) in forms {
            let run = runLua(script(call) + "\nf()\nt.record(depth, err)", timeout: 60)
            assertClean(run)
            XCTAssertEqual(run.records.count, 1, name)
            let depth = run.records.first?[0].intValue ?? 0
            let err = run.records.first?[1].stringValue ?? ""
            XCTAssertTrue(err.contains("stack overflow"), "\(name): \(err)")
            XCTAssertTrue((150...Int(LD_MAX_NESTING) + 1).contains(depth), "\(name): depth \(depth)")
        }
    }

    func testNestedBlockingCallsInABlockEndInStackOverflow() {
        for (name, call) in forms {
            let run = runLua(script(call) + "\ndispatch.global():async(function() f() t.record(depth, err) end)", timeout: 60)
            assertClean(run)
            let err = run.records.first?[1].stringValue ?? ""
            XCTAssertTrue(err.contains("stack overflow"), "\(name): \(err)")
        }
    }

    /// The bound counts per OS thread: nesting that ends is left with the full depth again.
    func testTheDepthIsGivenBackAfterAnOverflow() {
        let run = runLua(script(forms[0].1) + """

            f()
            local first = depth
            depth, err = 0, nil
            f()
            t.record(first, depth)
            """, timeout: 60)
        assertClean(run)
        XCTAssertEqual(run.records.first?[0], run.records.first?[1])
    }

    /// Lua's own nesting (coroutines, pcall, gsub callbacks) at each level stays within the
    /// stack the bound leaves.
    func testLuaNestingInsideEachLevelStaysWithinTheStack() {
        let run = runLua("""
            local f
            local function g(k) if k > 0 then return coroutine.wrap(function() return g(k - 1) end)() end return f() end
            local function h(k) if k > 0 then return (string.gsub("a", "a", function() return h(k - 1) end)) end return f() end
            local n = 0
            function f() n = n + 1 dispatch.global():sync(function() if n % 2 == 0 then g(150) else h(150) end end) end
            t.record(pcall(f))
            """, timeout: 120)
        assertClean(run)
        XCTAssertEqual(run.records.first?[0], false)
    }
}
