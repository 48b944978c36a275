import CLuaShim
import Foundation
import XCTest
@testable import LuaDispatch

/// Blocking C calls release the interpreter while they wait (API.md, "Switching between
/// blocks"; docs/execution-model.md, "Blocking calls"): the standard library's, and a C module's
/// between the pair of include/luadispatch.h (Tests/lua/blocker.c, compiled here and loaded by
/// this Swift host).
///
/// Each case runs one call in a background block that waits in it, while a 20 ms timer ticks on
/// a serial queue of its own, and counts the ticks meanwhile. The wait ends once the ticker has
/// ticked 15 times during the call (it makes a gate file, which the call's shell command or the
/// C module waits for), 10 s at most: a call that releases the interpreter sees 15 ticks however
/// little time a loaded machine gives the ticker. Each is run again with the release removed
/// (the runtime's release function replaced by one that releases nothing), waiting 0.6 s at
/// most, which must hold the ticks back (at most a few): the check bites.
final class BlockingCallsTests: XCTestCase {
    /// After `releasing` and `gate`: `CAP(s)` is how long a wait of `s` seconds may last (10 s
    /// when the release is in place), `WAIT(s)` a shell command that waits for the gate that long.
    private static let prelude = """
        local ticks, before, opened = 0, nil, false
        local timer = dispatch.source.timer{interval = 0.02, queue = dispatch.queue("ticker"), handler = function()
          ticks = ticks + 1
          if before and ticks - before >= 15 and not opened then opened = true; assert(io.open(gate, 'w')):close() end
        end}
        timer:resume()
        dispatch.sleep(0.05)                     -- the timer has started
        local function CAP(s) return releasing and 10 or s end
        local function WAIT(s)
          return string.format('i=0; while [ ! -e %s ] && [ $i -lt %d ]; do sleep 0.02; i=$((i+1)); done',
                               gate, math.ceil(CAP(s) / 0.02))
        end
        local function waited(call)
          dispatch.global():async(function()
            before = ticks
            local results = table.pack(call())
            local n = ticks - before
            timer:cancel()
            for i = 1, results.n do results[i] = tostring(results[i]) end
            t.emit(n, table.concat(results, " "))
          end)
        end

        """

    /// The ticks while `call` ran, and its results (as strings, space-separated). The gate file
    /// is made in `gateDirectory` (by default a directory of its own).
    private func run(_ call: String, releasing: Bool = true, gateDirectory: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) -> (ticks: Int, results: String) {
        let h = IOHarness()  // sets the runtime's release up (again)
        if !releasing { ld_blocking_init({ _ in nil }, Runtime.retakeAfterBlockingCall) }
        defer { Runtime.setUpBlockingCalls() }
        let dir = gateDirectory ?? IOHarness.temporaryDirectory()
        defer { if gateDirectory == nil { try? FileManager.default.removeItem(atPath: dir) } }
        let setup = "local releasing, gate = \(releasing), \(IOHarness.lua(dir + "/gate"))\n"
        let out = h.run(setup + Self.prelude + "waited(function() \(call) end)", file: file, line: line)
        XCTAssertEqual(out.count, 1, "one report", file: file, line: line)
        let parts = (out.first ?? "").split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        return (Int(parts.first ?? "") ?? -1, parts.count > 1 ? String(parts[1]) : "")
    }

    /// Ticks go on while `call` waits, and stop when its release is removed; `results` both times.
    private func assertReleases(_ call: String, results: String, heldResults: String? = nil,
                                file: StaticString = #filePath, line: UInt = #line) {
        let released = run(call, file: file, line: line)
        XCTAssertEqual(released.results, results, file: file, line: line)
        XCTAssertGreaterThanOrEqual(released.ticks, 15, "ticks while the call waited", file: file, line: line)
        let held = run(call, releasing: false, file: file, line: line)
        XCTAssertEqual(held.results, heldResults ?? results, file: file, line: line)
        // (Where Lua runs between two waits, the ticker catches up once or twice.)
        XCTAssertLessThanOrEqual(held.ticks, 8, "ticks while the call waited, release removed", file: file, line: line)
    }

    func testOsExecute() {
        assertReleases("return os.execute(WAIT(0.6))", results: "true exit 0")
    }

    func testPopenRead() {
        assertReleases("return io.popen(WAIT(0.6) .. '; echo hi'):read('l')", results: "hi")
    }

    func testPcloseWaitsForTheCommand() {
        assertReleases("local f = io.popen(WAIT(0.6)); return f:close()", results: "true exit 0")
        assertReleases("local f = io.popen(WAIT(0.6) .. '; exit 3'); return f:close()", results: "nil exit 3")
    }

    func testReadingAPipeEveryWay() {
        let pipe = "io.popen(WAIT(0.3) .. '; printf \"12 ab\\\\ncd\"; ' .. WAIT(0.3) .. '; printf \"ef\\\\n34\\\\n\"')"
        assertReleases("local f = \(pipe); return f:read('a')", results: "12 ab\ncdef\n34\n")
        assertReleases("local f = \(pipe); return f:read('n', 'l', 'L', 'n', 'l', 'l')", results: "12  ab cdef\n 34  nil")
        assertReleases("local f = \(pipe); return f:read(4, 5, 0, 100, 0)", results: "12 a b\ncde  f\n34\n nil")
        assertReleases("io.input(\(pipe)); return io.read('l', 'l')", results: "12 ab cdef")
        assertReleases("local s = {}; for l in \(pipe):lines() do s[#s + 1] = l end; return table.concat(s, ',')",
                       results: "12 ab,cdef,34")
        assertReleases("io.input(\(pipe)); local s = {}; for a, b in io.lines(nil, 3, 'l') do s[#s + 1] = a .. '|' .. tostring(b) end; return table.concat(s, ',')",
                       results: "12 |ab,cde|f,34\n|nil")
    }

    /// A terminal's lines typed once the ticker has ticked 15 times during the read (0.6 s
    /// later with the release removed): a pseudo-terminal's master side, written by a thread of
    /// the test that waits for the gate file. Read every way.
    func testReadingATerminal() throws {
        func typed(_ call: (String) -> String, results: String, file: StaticString = #filePath, line: UInt = #line) throws {
            for releasing in [true, false] {
                let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
                var unlock: Int32 = 0, number: UInt32 = 0
                guard master >= 0, ioctl(master, 0x4004_5431 /* TIOCSPTLCK */, &unlock) == 0,
                      ioctl(master, 0x8004_5430 /* TIOCGPTN */, &number) == 0 else {
                    throw NSError(domain: "pty", code: 1)
                }
                defer { close(master) }
                let dir = IOHarness.temporaryDirectory()
                defer { try? FileManager.default.removeItem(atPath: dir) }
                let typist = Thread {
                    let end = Date().addingTimeInterval(releasing ? 10 : 0.6)
                    while !FileManager.default.fileExists(atPath: dir + "/gate") && Date() < end { usleep(20_000) }
                    _ = "typed line\nsecond\n".withCString { write(master, $0, strlen($0)) }
                }
                typist.start()
                let r = run(call("/dev/pts/\(number)"), releasing: releasing, gateDirectory: dir, file: file, line: line)
                XCTAssertEqual(r.results, results, file: file, line: line)
                if releasing {
                    XCTAssertGreaterThanOrEqual(r.ticks, 15, "ticks while the read waited", file: file, line: line)
                } else {
                    XCTAssertLessThanOrEqual(r.ticks, 8, "ticks while the read waited, release removed", file: file, line: line)
                }
            }
        }
        try typed({ "return io.open('\($0)'):read('l', 'L')" }, results: "typed line second\n")
        try typed({ "io.input('\($0)'); return io.read('L')" }, results: "typed line\n")
        try typed({ "for l in io.open('\($0)'):lines() do return l end" }, results: "typed line")
        try typed({ "for l in io.lines('\($0)', 5) do return l end" }, results: "typed")
    }

    /// A megabyte into a pipe whose reader starts after a wait: the writer waits on a full pipe.
    /// Every byte arrives (wc counts them into a file).
    func testWritingAFullPipe() throws {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let count = "\(dir)/count"
        assertReleases("""
            local f = io.popen(WAIT(0.6) .. '; wc -c > \(count)', 'w')
            local same = f:write(string.rep('x', 1 << 19), 12345, ' ', 0.5, string.rep('y', 1 << 19)) == f
            return same, f:close()
            """, results: "true true exit 0")
        XCTAssertEqual(try String(contentsOfFile: count, encoding: .utf8).trimmingCharacters(in: .whitespaces), "\(1 << 20 + 9)\n")
        assertReleases("""
            io.output(io.popen(WAIT(0.6) .. '; cat > /dev/null', 'w'))
            return io.write(string.rep('z', 1 << 20)) == io.output(), io.close()
            """, results: "true true exit 0")
    }

    /// A block reads a line that a main-queue handler writes: without the release, the reader
    /// would keep the interpreter the handler needs, for ever.
    func testReadingWhatAnotherBlockWrites() {
        let out = IOHarness().run("""
            local r, w = dispatch.fd.pipe()
            local f = assert(io.open('/proc/self/fd/' .. r, 'r'))
            dispatch.main:after(0.2, function() dispatch.fd.write(w, 'hello\\nworld\\n'); dispatch.fd.close(w) end)
            dispatch.global():async(function()
              local a, b = f:read('l'), f:read('a')
              t.emit(a, b, f:read('l'))
              f:close(); dispatch.fd.close(r)
            end)
            """)
        XCTAssertEqual(out, ["hello world\n nil"])
    }

    /// The file is closed by another block while the reader waits: the reader raises liolib's
    /// error for a closed file once it has the interpreter back.
    func testFileClosedWhileWaiting() {
        let out = IOHarness().run("""
            local r, w = dispatch.fd.pipe()
            local f = assert(io.open('/proc/self/fd/' .. r, 'r'))
            dispatch.main:after(0.1, function() f:close() end)
            dispatch.main:after(0.3, function() dispatch.fd.write(w, 'late\\n'); dispatch.fd.close(w) end)
            dispatch.global():async(function()
              local ok, message = pcall(f.read, f, 'l')
              t.emit(ok, message)
              dispatch.fd.close(r)
            end)
            """)
        XCTAssertEqual(out, ["false attempt to use a closed file"])
    }

    // MARK: a C module's pair (include/luadispatch.h)

    func testCModuleReleasesBetweenThePair() throws {
        let cpath = "package.cpath = \(IOHarness.lua(try BlockerModule.directory() + "/?.so;")) .. package.cpath; local blocker = require 'blocker'; "
        // (The module says whether the pair released the interpreter.)
        assertReleases(cpath + "return blocker.sleep(CAP(0.6), gate)", results: "true", heldResults: "false")
        assertReleases(cpath + "return blocker.sleep_macro(CAP(0.6), gate)", results: "true", heldResults: "false")
        // The module that blocks without the pair holds the interpreter: ticks stop.
        let held = run(cpath + "return blocker.sleep_held(0.6)")
        XCTAssertEqual(held.results, "false")
        XCTAssertLessThanOrEqual(held.ticks, 3)
    }

    /// A block waits in the module's read(2) for what a main-queue handler writes; in a
    /// finalizer the pair releases nothing (the collector's step must not see other blocks run).
    func testCModuleReadAndFinalizer() throws {
        let out = IOHarness().run("""
            package.cpath = \(IOHarness.lua(try BlockerModule.directory() + "/?.so;")) .. package.cpath
            local blocker = require 'blocker'
            local r, w = dispatch.fd.pipe()
            dispatch.main:after(0.2, function() dispatch.fd.write(w, 'pong'); dispatch.fd.close(w) end)
            dispatch.global():async(function()
              local data, released = blocker.read(r)
              local in_gc
              setmetatable({}, {__gc = function() in_gc = blocker.sleep(0.01) end})
              collectgarbage()
              t.emit(data, released, in_gc)
              dispatch.fd.close(r)
            end)
            """)
        XCTAssertEqual(out, ["pong true false"])
    }
}

/// Tests/lua/blocker.c built as a Lua C module against Lua's headers and include/luadispatch.h.
enum BlockerModule {
    private static let built: Result<String, Error> = Result {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let dir = NSTemporaryDirectory() + "blocker-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["clang", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I/usr/include/lua5.4", "-I\(root.path)/include",
                       "-o", "\(dir)/blocker.so", root.appendingPathComponent("Tests/lua/blocker.c").path]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw NSError(domain: "clang", code: Int(p.terminationStatus)) }
        return dir
    }

    /// The directory holding blocker.so (built once per process).
    static func directory() throws -> String { try built.get() }
}
