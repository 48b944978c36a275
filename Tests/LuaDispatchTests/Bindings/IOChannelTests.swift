import Foundation
import XCTest
@testable import LuaDispatch

final class IOChannelTests: XCTestCase {
    private var dir = ""

    override func setUp() { dir = IOHarness.temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func makeFile(_ name: String, _ bytes: Int) -> String {
        let path = dir + "/" + name
        let data = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try? data.write(to: URL(fileURLWithPath: path))
        return path
    }

    func testStreamReadInChunksBoundedByHighWater() {
        let path = makeFile("input", 100_000)
        let out = IOHarness().run("""
            local q = dispatch.queue("reader")
            local ch = dispatch.io{path = \(IOHarness.lua(path)), queue = q,
                                   cleanup = function(err) t.emit("cleanup", err) end}
            ch:set_limit{high = 8192, low = 1}
            local chunks, largest, all = 0, 0, dispatch.data()
            ch:read(0, math.huge, q, function(done, data, err)
              if #data > 0 then
                chunks = chunks + 1
                if #data > largest then largest = #data end
                all = all .. data
              end
              if done then
                t.emit("done", err, #all, chunks >= 13, largest <= 8192, dispatch.current_label())
                local f = io.open(\(IOHarness.lua(path)), "rb"); local want = f:read("a"); f:close()
                t.emit("same", all:bytes() == want, all == dispatch.data(want))
                ch:close()
              end
            end)
            """)
        XCTAssertEqual(out, ["done 0 100000 true true reader", "same true true", "cleanup 0"])
    }

    func testRandomOffsetWritesAndRelativePath() {
        let out = IOHarness().run("""
            local q = dispatch.queue("writer")
            local ch = dispatch.io{path = "random.bin", type = "random", mode = "w+", permissions = "0600", queue = q}
            local g = dispatch.group()
            for _, w in ipairs{{8, "CCCC"}, {0, dispatch.data("AAAA")}, {4, "BBBB"}} do
              g:enter()
              ch:write(w[1], w[2], q, function(done, remaining, err)
                if done then t.emit("wrote", w[1], #remaining, err); g:leave() end
              end)
            end
            g:wait()
            ch:read(2, 6, q, function(done, data, err)
              if done then t.emit("read back", data:bytes(), err); ch:close() end
            end)
            """.replacingOccurrences(of: "\"random.bin\"", with: IOHarness.lua(relativePath("random.bin"))))
        XCTAssertEqual(Set(out.prefix(3)), ["wrote 8 0 0", "wrote 0 0 0", "wrote 4 0 0"])
        XCTAssertEqual(out.last, "read back AABBBB 0")
        XCTAssertEqual(try? String(contentsOfFile: dir + "/random.bin", encoding: .utf8), "AAAABBBBCCCC")
    }

    /// `dir/name` relative to the current directory.
    private func relativePath(_ name: String) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        let parts = cwd.split(separator: "/").count
        return String(repeating: "../", count: parts) + String(dir.dropFirst()) + "/" + name
    }

    func testOpenErrorsReachHandlersAsErrno() {
        let out = IOHarness().run("""
            local q = dispatch.queue("errors")
            local ch = dispatch.io{path = \(IOHarness.lua(dir + "/missing/file")), queue = q,
                                   cleanup = function(err) t.emit("cleanup", dispatch.errno_name(err)) end}
            ch:read(0, 10, q, function(done, data, err)
              t.emit("read", tostring(done), #data, dispatch.errno_name(err))
              ch:close()
            end)
            """)
        XCTAssertEqual(Set(out), ["read true 0 ENOENT", "cleanup ENOENT"])
    }

    func testCloseWithStopDeliversECANCELED() {
        let out = IOHarness().run("""
            local q = dispatch.queue("stop")
            local r, w = dispatch.fd.pipe()
            local ch = dispatch.io{fd = r, queue = q, cleanup = function(err)
              t.emit("cleanup", err); dispatch.fd.close(r); dispatch.fd.close(w)
            end}
            ch:read(0, 100, q, function(done, data, err)
              if done then t.emit("read", #data, dispatch.errno_name(err)) end
            end)
            ch:close{stop = true}
            """)
        // No ch:barrier before the close: libdispatch loses a close(.stop) that follows a barrier
        // on a fresh pipe channel with a pending read in about 1 run in 15 under load, and then
        // nothing is ever delivered (reproduced in plain Swift; docs/reliability.md, "Known gaps").
        XCTAssertEqual(out.last, "cleanup 0")
        XCTAssertTrue(out.contains("read 0 ECANCELED"), "\(out)")
    }

    func testWriteToReadOnlyChannelGivesErrno() {
        let path = makeFile("ro", 10)
        let out = IOHarness().run("""
            local q = dispatch.queue("ro")
            local ch = dispatch.io{path = \(IOHarness.lua(path)), mode = "r", queue = q}
            ch:write(0, "zzz", q, function(done, remaining, err)
              if done then t.emit("write", #remaining, dispatch.errno_name(err)); ch:close() end
            end)
            """)
        XCTAssertEqual(out, ["write 3 EBADF"])
    }

    func testChannelToChannelCopyKeepsData() {
        let path = makeFile("src", 300_000)
        let copy = dir + "/copy"
        let out = IOHarness().run("""
            local q = dispatch.queue("copy")
            local input = dispatch.io{path = \(IOHarness.lua(path)), queue = q}
            local output = dispatch.io{path = \(IOHarness.lua(copy)), mode = "w", queue = q,
                                       cleanup = function(err) t.emit("output closed", err) end}
            input:set_limit{high = 65536}
            input:read(0, math.huge, q, function(done, data, err)
              if #data > 0 then output:write(0, data, q, function() end) end
              if done then input:close(); output:close() end
            end)
            """)
        XCTAssertEqual(out, ["output closed 0"])
        XCTAssertEqual(FileManager.default.contents(atPath: copy), FileManager.default.contents(atPath: path))
    }

    func testOneShotReadAndWrite() {
        let out = IOHarness().run("""
            local q = dispatch.queue("oneshot")
            local r, w = dispatch.fd.pipe()
            dispatch.io.write(w, dispatch.data("ping") .. "!", q, function(remaining, err)
              t.emit("written", #remaining, err)
              dispatch.fd.close(w)
            end)
            dispatch.io.read(r, 100, q, function(data, err)
              t.emit("read", data:bytes(), err)
              dispatch.fd.close(r)
            end)
            """)
        XCTAssertEqual(Set(out), ["written 0 0", "read ping! 0"])
    }

    func testBadArgumentsRaise() {
        let out = IOHarness().run("""
            local function try(f, ...) local ok, err = pcall(f, ...); t.emit(ok and "ok" or err) end
            local q = dispatch.queue("bad")
            try(dispatch.io, {path = "a", fd = 1})
            try(dispatch.io, {})
            try(dispatch.io, {path = "a", mode = "rw"})
            try(dispatch.io, {path = "a", type = "block"})
            try(dispatch.io, {path = "a", permissions = "999"})
            try(dispatch.io, {path = "a", permissions = -1})
            try(dispatch.io, {fd = -2})
            try(dispatch.io, {path = ""})
            try(dispatch.io, {path = "a", bogus = true})
            try(dispatch.io, "a")
            local ch = dispatch.io{fd = 0}
            try(ch.read, ch, -1, 10, q, print)
            try(ch.read, ch, 0, -10, q, print)
            try(ch.read, ch, 0, 10, q, nil)
            try(ch.write, ch, 0, {}, q, print)
            try(ch.set_interval, ch, 0/0)
            try(ch.set_limit, ch, {high = -1})
            try(ch.set_limit, ch, {middle = 1})
            try(ch.close, ch, {halt = true})
            try(dispatch.io.read, -1, 10, q, print)
            try(dispatch.io.write, 1, 5, q, print)
            ch:close()
            """)
        let expected = [
            "bad argument #1 to 'io' (exactly one of 'path' and 'fd' expected)",
            "bad argument #1 to 'io' (exactly one of 'path' and 'fd' expected)",
            "bad argument #1 to 'io' (option 'mode': invalid mode 'rw')",
            "bad argument #1 to 'io' (option 'type': \"stream\" or \"random\" expected, got \"block\")",
            "bad argument #1 to 'io' (option 'permissions': invalid octal string '999')",
            "bad argument #1 to 'io' (option 'permissions': out of range: -1)",
            "bad argument #1 to 'io' (option 'fd': invalid file descriptor -2)",
            "bad argument #1 to 'io' (option 'path': cannot resolve '')",
            "bad argument #1 to 'io' (unknown option 'bogus')",
            "bad argument #1 to 'io' (table expected, got string)",
            "bad argument #2 to 'read' (offset must be >= 0, got -1)",
            "bad argument #3 to 'read' (length must be >= 0, got -10)",
            "bad argument #5 to 'read' (function expected, got nil)",
            "bad argument #3 to 'write' (dispatch.data or string expected, got table)",
            "bad argument #2 to 'set_interval' (interval must be > 0)",
            "bad argument #2 to 'set_limit' (option 'high': must be >= 0, got -1)",
            "bad argument #2 to 'set_limit' (unknown option 'middle')",
            "bad argument #2 to 'close' (unknown option 'halt')",
            "bad argument #1 to 'read' (invalid file descriptor -1)",
            "bad argument #2 to 'write' (dispatch.data or string expected, got number)",
        ]
        XCTAssertEqual(out.count, expected.count, "\(out)")
        for (got, want) in zip(out, expected) { XCTAssertTrue(got.hasSuffix(want), "\(got) does not end with \(want)") }
    }
}
