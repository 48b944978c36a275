import Foundation
import XCTest
@testable import LuaDispatch

/// Operations on one descriptor are performed in the order they were submitted (API.md, I/O):
/// `dispatch.io.read`/`write` and `fd=` channels share the runtime's one duplicate of it
/// (`IODescriptors`), on which libdispatch keeps them in one queue.
final class IOOrderTests: XCTestCase {
    private var dir = ""
    override func setUp() { dir = IOHarness.temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    /// 300 one-line writes land in order, whichever queue their handlers run on; afterwards no
    /// duplicate is left open.
    func testWritesLandInSubmissionOrder() throws {
        for queue in ["dispatch.global()", "dispatch.queue('handlers')"] {
            let path = dir + "/lines-\(queue.count).txt"
            let before = IOHarness.openDescriptorCount()
            let out = IOHarness().run("""
                local fd = dispatch.fd.open(\(IOHarness.lua(path)), "w")
                local g, q, failed = dispatch.group(), \(queue), {}
                for i = 1, 300 do
                  g:enter()
                  dispatch.io.write(fd, string.format("%03d\\n", i), q, function(rest, err)
                    -- a slot per write: on a global queue the handlers may run at the same time
                    if err ~= 0 or #rest ~= 0 then failed[i] = true end
                    g:leave()
                  end)
                end
                g:wait()
                dispatch.fd.close(fd)
                local errors = 0
                for _ in pairs(failed) do errors = errors + 1 end
                t.emit(errors)
                """)
            XCTAssertEqual(out, ["0"])
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            XCTAssertEqual(lines, (1...300).map { String(format: "%03d", $0)[...] }, "handlers on \(queue)")
            XCTAssertEqual(IODescriptors.count, 0, "every duplicate is closed after its last operation")
            XCTAssertEqual(IOHarness.openDescriptorCount(), before)
        }
    }

    /// Consecutive reads continue where the previous one ended: four reads of 64 KiB of a
    /// 256 KiB file return its four parts in order, and so do 26 reads of 4 KiB, three rounds.
    func testConsecutiveReadsContinueWhereThePreviousEnded() throws {
        for (count, size) in [(4, 65536), (26, 4096), (26, 4096), (26, 4096)] {
            let path = dir + "/parts-\(count).bin"
            let letters = (0..<count).map { String(UnicodeScalar(UInt8(65 + $0))) }
            try letters.map { String(repeating: $0, count: size) }.joined().write(toFile: path, atomically: true, encoding: .utf8)
            let out = IOHarness().run("""
                local fd = dispatch.fd.open(\(IOHarness.lua(path)), "r")
                local g, got = dispatch.group(), {}
                local results = dispatch.queue("results")
                for i = 1, \(count) do
                  g:enter()
                  dispatch.io.read(fd, \(size), dispatch.global(), function(data, err)
                    local s = data:bytes()
                    results:sync(function() got[i] = s:sub(1, 1) .. (#s == \(size) and "" or #s) end)
                    g:leave()
                  end)
                end
                g:wait()
                dispatch.fd.close(fd)
                t.emit(table.concat(got))
                """)
            XCTAssertEqual(out, [letters.joined()], "\(count) reads of \(size) bytes")
        }
    }

    /// Reads and writes on one "r+" descriptor take turns at its file offset in submission order.
    func testMixedReadsAndWritesShareTheOffsetInOrder() throws {
        let path = dir + "/mixed.txt"
        try String(repeating: "0123456789", count: 20).write(toFile: path, atomically: true, encoding: .utf8)
        let out = IOHarness().run("""
            local fd = dispatch.fd.open(\(IOHarness.lua(path)), "r+")
            local g, got = dispatch.group(), {}
            local q = dispatch.queue("handlers")
            for i = 1, 50 do         -- write two letters, read the next two digits
              local letters = string.char(96 + (i - 1) % 26 + 1):rep(2)
              g:enter(); dispatch.io.write(fd, letters, q, function() g:leave() end)
              g:enter(); dispatch.io.read(fd, 2, q, function(data) got[i] = data:bytes(); g:leave() end)
            end
            g:wait()
            dispatch.fd.close(fd)
            t.emit(table.concat(got, " "))
            """)
        let digits = "0123456789"
        let expected = (0..<50).map { i -> String in
            let at = (4 * i + 2) % 10
            return String(digits[digits.index(digits.startIndex, offsetBy: at)...].prefix(2))
        }
        XCTAssertEqual(out, [expected.joined(separator: " ")])
        let letters = (0..<50).map { String(repeating: String(UnicodeScalar(UInt8(97 + $0 % 26))), count: 2) + expected[$0] }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), letters.joined())
    }

    /// A channel made from a descriptor and one-shot writes on that descriptor are one sequence.
    /// As in libdispatch, a one-shot operation's handler runs once every user of the descriptor
    /// has let go of it: here, once the channel is closed.
    func testChannelAndOneShotWritesOnOneDescriptorStayInOrder() throws {
        let path = dir + "/both.txt"
        let out = IOHarness().run("""
            local fd = dispatch.fd.open(\(IOHarness.lua(path)), "w")
            local ch = dispatch.io{fd = fd, type = "stream"}
            local g, q = dispatch.group(), dispatch.global()
            for i = 1, 100 do
              g:enter()
              local line = string.format("%03d\\n", i)
              if i % 2 == 0 then
                ch:write(0, line, q, function(done) if done then g:leave() end end)
              else
                dispatch.io.write(fd, line, q, function() g:leave() end)
              end
            end
            ch:close()
            g:wait()
            dispatch.fd.close(fd)
            t.emit("done")
            """)
        XCTAssertEqual(out, ["done"])
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines, (1...100).map { String(format: "%03d", $0)[...] })
    }

    /// A script that closes its descriptor while a write is in flight and opens another file,
    /// which gets the same number: each write reaches its own file. (Each open is a descriptor
    /// of its own, so the writes of different rounds are not ordered with each other.)
    func testReusedNumberGetsADuplicateOfItsOwn() throws {
        let first = dir + "/first.txt", second = dir + "/second.txt"
        let out = IOHarness().run("""
            local g, q, same = dispatch.group(), dispatch.queue("handlers"), 0
            for i = 1, 50 do
              local a = dispatch.fd.open(\(IOHarness.lua(first)), "a")
              g:enter(); dispatch.io.write(a, string.format("first %02d\\n", i), q, function() g:leave() end)
              dispatch.fd.close(a)                       -- the write is still in flight
              local b = dispatch.fd.open(\(IOHarness.lua(second)), "a")
              if b == a then same = same + 1 end
              g:enter(); dispatch.io.write(b, string.format("second %02d\\n", i), q, function() g:leave() end)
              dispatch.fd.close(b)
            end
            g:wait()
            t.emit(same > 0)
            """)
        XCTAssertEqual(out, ["true"], "the second file reused the first one's number")
        let a = try String(contentsOfFile: first, encoding: .utf8).split(separator: "\n")
        let b = try String(contentsOfFile: second, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(a.sorted(), (1...50).map { String(format: "first %02d", $0)[...] })
        XCTAssertEqual(b.sorted(), (1...50).map { String(format: "second %02d", $0)[...] })
    }
}
