import Foundation
import XCTest

/// The REPL through a pseudo-terminal: types lines and reads the screen. Against `lua5.4`, the
/// screens match line for line; the dispatch addition is checked on its own: a block typed at
/// the prompt runs while the REPL waits for the next line, with no key pressed.
final class REPLTests: XCTestCase {
    /// A process whose standard input, output and error are a new terminal.
    final class Terminal {
        let master: Int32
        // Its own Process, not CLI.run: the child needs a pseudo-terminal, not pipes.
        let process = Process()
        /// The terminal's settings before the program started (as `stty -a` shows them).
        private(set) var initial = termios()

        init(_ exe: URL, _ args: [String] = []) throws {
            // posix_openpt by hand (Glibc's module does not export it): unlock, then find the number.
            master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
            var unlock: Int32 = 0, number: UInt32 = 0
            guard master >= 0, ioctl(master, 0x4004_5431 /* TIOCSPTLCK */, &unlock) == 0,
                  ioctl(master, 0x8004_5430 /* TIOCGPTN */, &number) == 0 else {
                throw NSError(domain: "pty", code: 1)
            }
            let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
            tcgetattr(slave, &initial)
            let h = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
            process.executableURL = exe
            process.arguments = args
            process.standardInput = h
            process.standardOutput = h
            process.standardError = h
            try process.run()
            close(slave)  // the child has its copies: the master reads end of file once it exits
        }

        deinit {
            if process.isRunning { process.terminate() }
            close(master)
        }

        /// What the program writes within `seconds` (returns early once `until` shows up, or
        /// with `prompt` once the screen ends with a prompt: the default ones or `lua$ `).
        func read(_ seconds: Double, until: String? = nil, prompt: Bool = false) -> String {
            var text = ""
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                var p = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 50) > 0 else { continue }
                var buf = [UInt8](repeating: 0, count: 4096)
                let n = Glibc.read(master, &buf, buf.count)
                if n <= 0 { break }
                text += String(decoding: buf[..<n], as: UTF8.self)
                if let until, text.contains(until) { break }
                if prompt && (text.hasSuffix("> ") || text.hasSuffix("$ ")) { break }
            }
            return text
        }

        /// Waits up to 20 s, then kills it (the test then fails on its status).
        func waitForExit() {
            let end = Date().addingTimeInterval(20)
            while process.isRunning && Date() < end { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        func type(_ line: String) { _ = line.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count - 1) } }
    }

    /// Types each line, waiting for the next prompt, and returns the screen.
    static func session(_ exe: URL, _ lines: [String]) throws -> String {
        let t = try Terminal(exe)
        var screen = t.read(10, prompt: true)
        for line in lines {
            t.type(line + "\n")
            screen += t.read(10, prompt: true)
        }
        t.type("\u{4}")  // end of input
        screen += t.read(10)
        t.waitForExit()
        screen += "[status \(t.process.terminationStatus)]"
        return screen.replacingOccurrences(of: exe.path, with: "PROG")
    }

    func testTheScreenIsLua54s() throws {
        let lua = URL(fileURLWithPath: "/usr/bin/lua5.4")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: lua.path), "lua5.4 is not installed")
        let lines = ["1 + 2", "x = 10", "=x", "x, 'two', nil", "for i = 1, 2 do", "print(i)", "end",
                     "error('oops')", "error({})", "return", "local t = setmetatable({}, {__tostring = function() return 'T' end}); error(t)",
                     "_PROMPT = 'lua$ '", "'custom prompt'", "print(#arg, arg[0])", "x = = 1", "if true then", "print('in if') end"]
        let ours = try Self.session(CLI.binary, lines)
        let theirs = try Self.session(lua, lines)
        XCTAssertEqual(ours, theirs)
        XCTAssertTrue(ours.contains("3\r\n"), ours)
        XCTAssertTrue(ours.hasSuffix("[status 0]"), ours)
    }

    /// docs/cli.md's first line at a fresh prompt: `dispatch` is a global there, and the tick
    /// printed while the prompt waits is followed by the prompt, drawn again.
    func testDispatchIsAGlobalAtAFreshPrompt() throws {
        let t = try Terminal(CLI.binary)
        _ = t.read(10, prompt: true)
        t.type("dispatch.main:after(0.3, function() print(\"tick\") end)\n")
        let screen = t.read(10, until: "tick\r\n")
        XCTAssertFalse(screen.contains("nil value"), screen.debugDescription)
        let after = t.read(3, prompt: true)
        XCTAssertTrue((screen + after).hasSuffix("tick\r\n> "), (screen + after).debugDescription)
        t.type("\u{4}")
        _ = t.read(5)
        t.waitForExit()
        XCTAssertEqual(t.process.terminationStatus, 0)
    }

    /// What blocks print (print, io.write, an error) while a line is being typed shows above the
    /// prompt, never glued to the typed text, and the line is drawn again after it, still there
    /// to be finished.
    func testOutputWhileTypingRedrawsTheLine() throws {
        let t = try Terminal(CLI.binary)
        _ = t.read(10, prompt: true)
        t.type("dispatch.main:after(0.4, function() print('tick') end)\n")
        _ = t.read(10, prompt: true)
        t.type("x = 4")
        let tick = t.read(10, until: "tick") + t.read(1, until: "x = 4")
        XCTAssertFalse(tick.contains("x = 4tick"), tick.debugDescription)
        XCTAssertTrue(tick.range(of: "tick\r\n").map { tick[$0.upperBound...].contains("> x = 4") } ?? false,
                      "the line drawn again below the output: \(tick.debugDescription)")
        t.type("2\n")
        _ = t.read(10, prompt: true)
        t.type("dispatch.main:after(0.4, function() io.write('part') end); dispatch.queue('q'):after(0.8, function() error('boom') end)\n")
        _ = t.read(10, prompt: true)
        t.type("=x")
        let more = t.read(10, until: "boom") + t.read(1, until: "> =x")
        XCTAssertFalse(more.contains("=xpart") || more.contains("=xluadispatch"), more.debugDescription)
        XCTAssertTrue(more.contains("part\r\n"), more.debugDescription)
        XCTAssertTrue(more.range(of: "boom").map { more[$0.upperBound...].contains("> =x") } ?? false, more.debugDescription)
        t.type("\n")
        let value = t.read(10, prompt: true)
        XCTAssertTrue(value.contains("42\r\n"), "the finished line ran: \(value.debugDescription)")
        t.type("\u{4}")
        _ = t.read(5)
        t.waitForExit()
        XCTAssertEqual(t.process.terminationStatus, 1, "after the uncaught error")
    }

    func testBlocksRunWhileThePromptWaits() throws {
        let t = try Terminal(CLI.binary)
        _ = t.read(10, prompt: true)
        t.type("dispatch = require('dispatch'); dispatch.main:after(0.5, function() print('tick', dispatch.thread().is_main) end)\n")
        _ = t.read(10, prompt: true)
        let waited = t.read(10, until: "tick")
        XCTAssertTrue(waited.contains("tick\ttrue"), "no key pressed, the block ran: \(waited.debugDescription)")
        t.type("dispatch.queue('q'):async(function() dispatch.main:async(function() print('hop') end) end)\n")
        // "hop" followed by the end of its line: the echo of the typed line holds "hop" too.
        let hop = t.read(10, until: "hop\r\n")
        XCTAssertTrue(hop.contains("hop\r\n"))
        t.type("\u{4}")
        let end = t.read(5)
        t.waitForExit()
        XCTAssertEqual(t.process.terminationStatus, 0, "after hop: \(hop.debugDescription), then: \(end.debugDescription)")
    }
}
