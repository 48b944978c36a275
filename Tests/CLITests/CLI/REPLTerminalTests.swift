import Foundation
import XCTest

/// Every way out of the REPL leaves the terminal as it found it: its settings (all of what
/// `stty -a` shows) equal to those before the program started, and bracketed paste, which the
/// prompt turns on, turned off. Where lua5.4 has the same way out, both run side by side and
/// the screens, the ends (status or signal) and the settings must match.
final class REPLTerminalTests: XCTestCase {
    static let lua = URL(fileURLWithPath: "/usr/bin/lua5.4")
    static let pasteOn = "\u{1b}[?2004h", pasteOff = "\u{1b}[?2004l"

    struct Ending: Equatable {
        var screen: String
        var restored: Bool
        var reason: Process.TerminationReason
        var status: Int32
    }

    /// Starts `exe` in a new terminal, types `lines` (each at a prompt), then `keys` or sends
    /// `signal`, and reads until the program has ended. (Ctrl-C is sent as SIGINT to the
    /// process: the terminal is not the child's controlling one, so typing it sends nothing.)
    static func end(_ exe: URL, _ args: [String] = [], typing lines: [String] = [], then keys: String = "",
                    signal: Int32? = nil, seconds: Double = 20) throws -> Ending {
        let t = try REPLTests.Terminal(exe, args)
        var screen = t.read(10, prompt: true)
        for line in lines {
            t.type(line + "\n")
            screen += t.read(10, prompt: true)
        }
        if !keys.isEmpty { t.type(keys) }
        if let signal { kill(t.process.processIdentifier, signal) }
        screen += t.read(seconds)
        t.waitForExit()
        var now = termios()
        tcgetattr(t.master, &now)
        var before = t.initial
        let same = withUnsafeBytes(of: &before) { a in withUnsafeBytes(of: &now) { b in a.elementsEqual(b) } }
        return Ending(screen: screen.replacingOccurrences(of: exe.path, with: "PROG"), restored: same,
                      reason: t.process.terminationReason, status: t.process.terminationStatus)
    }

    func requireLua() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: Self.lua.path), "lua5.4 is not installed")
    }

    /// Checks one of luadispatch's endings: settings restored, paste off after it was on.
    func checkRestored(_ e: Ending, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(e.restored, "\(what): the terminal's settings as before\n\(e.screen.debugDescription)", file: file, line: line)
        guard let on = e.screen.range(of: Self.pasteOn, options: .backwards) else {
            return XCTFail("\(what): the prompt turned bracketed paste on: \(e.screen.debugDescription)", file: file, line: line)
        }
        XCTAssertTrue(e.screen[on.upperBound...].contains(Self.pasteOff), "\(what): and off after: \(e.screen.debugDescription)",
                      file: file, line: line)
    }

    /// Ctrl-C at an idle prompt ends both by SIGINT, after `^C` and bracketed paste off.
    func testCtrlCAtAnIdlePrompt() throws {
        try requireLua()
        let ours = try Self.end(CLI.binary, signal: SIGINT)
        let theirs = try Self.end(Self.lua, signal: SIGINT)
        // lua5.4 itself, on a loaded machine, once let a SIGINT sent as its prompt appeared go
        // unseen and was killed after 20 s: then our ending is held to what lua5.4's is
        // otherwise (below), not to that one.
        if !(theirs.reason == .uncaughtSignal && theirs.status == SIGKILL) { XCTAssertEqual(ours, theirs) }
        XCTAssertEqual(ours.reason, .uncaughtSignal)
        XCTAssertEqual(ours.status, SIGINT)
        checkRestored(ours, "Ctrl-C")
        XCTAssertTrue(ours.screen.hasSuffix("> ^C" + Self.pasteOff + "\r"), ours.screen.debugDescription)
    }

    /// Ctrl-C at a prompt after blocks have run there (their waits arm and disarm Ctrl-C).
    func testCtrlCAfterBlocksRanAtThePrompt() throws {
        let e = try Self.end(CLI.binary, typing: ["dispatch.main:async(function() dispatch.sleep(0.01) end)", "x = 1"],
                             signal: SIGINT)
        XCTAssertEqual(e.reason, .uncaughtSignal, e.screen.debugDescription)
        checkRestored(e, "Ctrl-C after blocks")
    }

    /// Ctrl-D, os.exit typed at the prompt, and an error then Ctrl-D.
    func testEndOfInputAndExitAtThePrompt() throws {
        try requireLua()
        for (lines, keys) in [([String](), "\u{4}"), (["os.exit(3)"], ""), (["error('x')", "os.exit(false)"], ""),
                              (["os.exit(true, true)"], "")] {
            let ours = try Self.end(CLI.binary, typing: lines, then: keys)
            let theirs = try Self.end(Self.lua, typing: lines, then: keys)
            XCTAssertEqual(ours, theirs, "\(lines)")
            checkRestored(ours, "\(lines)")
        }
    }

    /// Ways out lua has no equivalent for, while the prompt waits: os.exit in a block on the
    /// main queue (exit: atexit), dispatch.exit in a block on another queue (_exit), and the
    /// time limit's last resort (_exit, on a thread of its own).
    func testExitsFromBlocksAndLimitsWhileThePromptWaits() throws {
        let main = try Self.end(CLI.binary, typing: ["dispatch.main:after(0.3, function() os.exit(5) end)"])
        XCTAssertEqual(main.status, 5, main.screen.debugDescription)
        checkRestored(main, "os.exit in a block")
        let other = try Self.end(CLI.binary, typing: ["dispatch.queue('q'):after(0.3, function() dispatch.exit(4) end)"])
        XCTAssertEqual(other.status, 4, other.screen.debugDescription)
        checkRestored(other, "dispatch.exit in a block")
        let limit = try Self.end(CLI.binary, ["--time-limit", "0.5", "-i"])
        XCTAssertEqual(limit.status, 1, limit.screen.debugDescription)
        XCTAssertTrue(limit.screen.contains("time limit exceeded (0.5 s)"), limit.screen.debugDescription)
        checkRestored(limit, "the time limit")
    }
}
