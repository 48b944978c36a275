import Foundation
import XCTest

/// Blocking C calls under the CLI and under stock `lua5.4` with the module: the standard
/// library's replacements give Lua 5.4.4's results and messages exactly (side by side with
/// `lua5.4` on the same inputs), the main chunk's waits in them let other blocks run, and a C
/// module's pair (include/luadispatch.h) releases the interpreter in every host and does
/// nothing where no runtime is.
final class BlockingCallsCLITests: XCTestCase {
    /// Tests/lua/stdlib-blocking.lua under both interpreters, standard input a pipe.
    func testResultsAreStockLuas() throws {
        let script = CLI.packageRoot.appendingPathComponent("Tests/lua/stdlib-blocking.lua").path
        let stdin = "  42 0x1F rest\nsecond\n3.5e1x tail\nmore"
        func run(_ executable: URL?) throws -> CLIResult {
            let dir = NSTemporaryDirectory() + "stdlib-blocking-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            try "hello\nsmall\n".write(toFile: dir + "/small", atomically: false, encoding: .utf8)
            return try CLI.run([script, dir], stdin: stdin, executable: executable)
        }
        let ours = try run(nil)
        let theirs = try run(StockLua.interpreter)
        XCTAssertEqual(ours.status, 0, ours.stderr)
        XCTAssertEqual(ours.stderr, theirs.stderr)
        XCTAssertEqual(ours.stdout, theirs.stdout)
        // It read what it was meant to: the pieces of the pipes, standard input, the statuses.
        for line in ["l L l l\t\"one\" \"two\\\n\" \"three\" nil", "chars\t\"ab\" \"cdef\" \"\" \"gh\" nil",
                     "stdin n n l L\t42 31 \" rest\"", "close kill\tnil \"signal\" 9", "big write\t118893"] {
            XCTAssertTrue(ours.stdout.contains(line), "\(line) in \(ours.stdout)")
        }
    }

    /// The main chunk waits in each call while a timer ticks on a queue of its own. Each call
    /// waits until the ticker has ticked 15 times during it (the ticker makes a gate file that
    /// the call's shell command waits for; 10 s at most): a call that releases the interpreter
    /// sees 15 ticks however little time a loaded machine gives the ticker, and one that held it
    /// would keep the gate shut and see none.
    private static let ticking = """
        local gate = os.tmpname()
        local ticks, before = 0, nil
        local timer = dispatch.source.timer{interval = 0.02, queue = dispatch.queue("ticker"), handler = function()
          ticks = ticks + 1
          if before and ticks - before >= 15 then before = nil; assert(io.open(gate, "w")):close() end
        end}
        timer:resume()
        dispatch.sleep(0.05)
        local WAIT = string.format("i=0; while [ ! -e %s ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done", gate)
        local function ticked(label, call)
          os.remove(gate)
          local start = ticks
          before = start
          local results = table.pack(call())
          for i = 1, results.n do results[i] = tostring(results[i]) end
          print(label, ticks - start >= 15, table.concat(results, " "))
        end
        ticked("execute", function() return os.execute(WAIT) end)
        ticked("popen", function() return io.popen(WAIT .. "; echo hi"):read("l") end)
        ticked("pclose", function() return io.popen(WAIT .. "; exit 4"):close() end)
        ticked("write", function()
          local f = io.popen(WAIT .. "; cat > /dev/null", "w")
          return f:write(string.rep("x", 1 << 20)) == f, f:close()
        end)
        timer:cancel()
        os.remove(gate)
        """

    private static let tickingOutput = """
        execute\ttrue\ttrue exit 0
        popen\ttrue\thi
        pclose\ttrue\tnil exit 4
        write\ttrue\ttrue true exit 0

        """

    func testMainChunkWaitsWithoutTheInterpreter() throws {
        let r = try CLI.run(["-e", "local dispatch = require('dispatch')\n" + Self.ticking])
        XCTAssertEqual(r.stdout, Self.tickingOutput, r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    func testUnderStockLuaWithTheModule() throws {
        let r = try StockLua.script("local dispatch = require('dispatch')\n" + Self.ticking)
        XCTAssertEqual(r.stdout, Self.tickingOutput, r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// scripts/examples/luasocket.lua: a block waits for a reply that a main-queue handler
    /// sends. Through a read source on the socket it gets it; waiting in luasocket's receive
    /// instead holds the interpreter the handler needs, until luasocket gives up.
    func testLuasocketThroughAReadSource() throws {
        let example = CLI.packageRoot.appendingPathComponent("scripts/examples/luasocket.lua").path
        let r = try CLI.run([example])
        XCTAssertEqual(r.stdout, "reply:\tpong for ping\nthe main queue ticked meanwhile: true\n", r.stderr)
        XCTAssertEqual(r.status, 0)
        let blocking = try CLI.run([example, "blocking"])
        XCTAssertEqual(blocking.stdout, "receive:\ttimeout\n", blocking.stderr)
        XCTAssertEqual(blocking.status, 0)
    }

    // MARK: a C module's pair

    private static var blockerPath: String { "package.cpath = '\(blockerDirectory)/?.so;' .. package.cpath" }

    /// Tests/lua/blocker.c, built against Lua's headers and include/luadispatch.h only.
    private static let blockerDirectory: String = {
        let root = CLI.packageRoot
        let dir = NSTemporaryDirectory() + "blocker-cli-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let clang = URL(fileURLWithPath: StockLua.toolchainLib.path + "/../../../bin/clang").standardized
        let cc = try? CLI.run(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I/usr/include/lua5.4", "-I\(root.path)/include",
                               "-o", dir + "/blocker.so", root.appendingPathComponent("Tests/lua/blocker.c").path], executable: clang)
        XCTAssertEqual(cc?.status, 0, cc?.stderr ?? "clang did not run")
        return dir
    }()

    /// A ticker on another queue needs the interpreter for each tick. The releasing calls wait
    /// for a gate the 15th tick after their start opens; the holding one sleeps 1 s, and no tick
    /// may come in its middle (the call's edges are left out: a loaded machine may keep the main
    /// chunk from the interpreter just before or after the call, and ticks run then).
    private static let pair = """
        local blocker = require "blocker"
        local dispatch = require "dispatch"
        local gate = os.tmpname()
        local ticks, before, stamps, base = 0, nil, {}, dispatch.now()
        local timer = dispatch.source.timer{interval = 0.02, queue = dispatch.queue("ticker"), handler = function()
          ticks = ticks + 1
          stamps[#stamps + 1] = dispatch.now() - base
          if before and ticks - before >= 15 then before = nil; assert(io.open(gate, "w")):close() end
        end}
        timer:resume()
        dispatch.sleep(0.05)
        for _, name in ipairs{"sleep", "sleep_macro", "sleep_held"} do
          os.remove(gate)
          local start = ticks
          if name ~= "sleep_held" then before = start end
          -- The releasing calls wait for the gate, 10 s at most; the holding one 1 s.
          local t0 = dispatch.now() - base
          local released = blocker[name](name == "sleep_held" and 1.0 or 10, gate)
          local t1 = dispatch.now() - base
          local inside = 0
          for _, at in ipairs(stamps) do
            if at > t0 + (t1 - t0) / 4 and at < t1 - (t1 - t0) / 4 then inside = inside + 1 end
          end
          print(name, released, ticks - start >= 15, inside == 0)
        end
        timer:cancel()
        os.remove(gate)
        """

    private static let pairOutput = """
        sleep\ttrue\ttrue\tfalse
        sleep_macro\ttrue\ttrue\tfalse
        sleep_held\tfalse\tfalse\ttrue

        """

    func testCModulePairUnderTheCLI() throws {
        let r = try CLI.run(["-e", Self.blockerPath + "\n" + Self.pair])
        XCTAssertEqual(r.stdout, Self.pairOutput, r.stderr)
        XCTAssertEqual(r.status, 0)
    }

    /// Under stock lua5.4 the pair does nothing until the module is loaded, then releases.
    func testCModulePairUnderStockLua() throws {
        let before = "print('no runtime', require('blocker').sleep(0.01))\n"
        let r = try StockLua.script(Self.blockerPath + "\n" + before + Self.pair)
        XCTAssertEqual(r.stdout, "no runtime\tfalse\n" + Self.pairOutput, r.stderr)
        XCTAssertEqual(r.status, 0)
        let plain = try CLI.run(["-e", Self.blockerPath + "; print(require('blocker').sleep_macro(0.01))"], executable: StockLua.interpreter)
        XCTAssertEqual(plain.stdout, "false\n", plain.stderr)
    }
}
