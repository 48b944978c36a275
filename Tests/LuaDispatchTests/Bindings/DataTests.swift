import Foundation
import XCTest
@testable import LuaDispatch

final class DataTests: XCTestCase {
    func testSlicingLikeStringSub() {
        let out = IOHarness().run("""
            local s = "hello, dispatch"
            local d = dispatch.data(s)
            local cases = {{1}, {1, 5}, {-8}, {-8, -2}, {0}, {3, 2}, {20}, {-100, 3}, {5, 100}, {8, -1}}
            for _, c in ipairs(cases) do
              local a, b = d:sub(c[1], c[2]):bytes(), s:sub(c[1], c[2])
              t.emit(a == b and "same" or ("differs: " .. a .. " vs " .. b))
              t.emit(d:bytes(c[1], c[2]) == b and "same" or "bytes differs")
            end
            t.emit(#d, #dispatch.data(), #dispatch.data(""), tostring(dispatch.data("abc")))
            """)
        XCTAssertEqual(out.dropLast(), Array(repeating: "same", count: 20))
        XCTAssertEqual(out.last, "15 0 0 dispatch.data (3 bytes)")
    }

    func testConcatenationSharesRegions() {
        let out = IOHarness().run("""
            local a, b = dispatch.data("abc"), dispatch.data("defg")
            local c = a .. b .. "hi" .. 42
            t.emit(#c, c:bytes())
            local parts = {}
            for offset, region in c:regions() do parts[#parts + 1] = offset .. "=" .. region:bytes() end
            t.emit(table.concat(parts, " "))
            local s = "x" .. a
            t.emit(s:bytes(), tostring(c == dispatch.data("abcdefghi42")), tostring(c == a), tostring(a == "abc"))
            -- a slice across regions keeps only the regions it covers
            local n = 0
            for _ in c:sub(2, 5):regions() do n = n + 1 end
            t.emit(c:sub(2, 5):bytes(), n)
            """)
        XCTAssertEqual(out, [
            "11 abcdefghi42",
            "0=abc 3=defg 7=hi42",
            "xabc true false false",
            "bcde 2",
        ])
    }

    func testMapFileWithoutCopying() throws {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/mapped"
        let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        try? bytes.write(to: URL(fileURLWithPath: path))
        try? Data().write(to: URL(fileURLWithPath: dir + "/empty"))
        let out = IOHarness().run("""
            local m = dispatch.data.map(\(IOHarness.lua(path)))
            t.emit(#m, m:bytes(256, 258) == "\\255\\0\\1")
            local e = dispatch.data.map(\(IOHarness.lua(dir + "/empty")))
            t.emit(#e)
            local none, msg, name = dispatch.data.map(\(IOHarness.lua(dir + "/nope")))
            t.emit(tostring(none), name)
            t.emit(select(3, dispatch.data.map(\(IOHarness.lua(dir)))))
            -- a slice outlives the mapping's own object
            local tail = m:sub(-3)
            m = nil
            collectgarbage(); collectgarbage()
            t.emit(#tail, tail:bytes() == "\\61\\62\\63")
            """)
        XCTAssertEqual(out, ["200000 true", "0", "nil ENOENT", "EISDIR", "3 true"])
    }

    func testBadArgumentsRaise() {
        let out = IOHarness().run("""
            local function try(f, ...) local ok, err = pcall(f, ...); t.emit(ok and "ok" or err) end
            local d = dispatch.data("abc")
            try(dispatch.data, 5)
            try(dispatch.data, {})
            try(function() return d .. {} end)
            try(function() return d .. nil end)
            try(d.sub, d, "x")
            try(d.sub, d, 1.5)
            try(d.bytes, d, 1, {})
            try(d.sub, nil, 1)
            try(dispatch.data.map, nil)
            """)
        let expected = [
            "bad argument #1 to 'data' (string or nil expected, got number)",
            "bad argument #1 to 'data' (string or nil expected, got table)",
            "attempt to concatenate a table value with a dispatch.data",
            "attempt to concatenate a nil value with a dispatch.data",
            "bad argument #2 to 'sub' (number expected, got string)",
            "bad argument #2 to 'sub' (number has no integer representation)",
            "bad argument #3 to 'bytes' (number expected, got table)",
            "bad argument #1 to 'sub' (dispatch.data expected, got nil)",
            "bad argument #1 to 'map' (string expected, got nil)",
        ]
        XCTAssertEqual(out.count, expected.count, "\(out)")
        for (got, want) in zip(out, expected) { XCTAssertTrue(got.hasSuffix(want), "\(got) does not end with \(want)") }
    }
}
