import Foundation
import XCTest

/// The kernel's watch limit, reached for real: in a user namespace of its own (`unshare -U -r`)
/// whose `user.max_inotify_watches` is lowered to 100, the 101st file source fails with
/// `nil, message, "ENOSPC"`, the message naming `max_user_watches` and the namespace's own limit;
/// the 100 made before it still see their writes.
final class FileWatchLimitTests: XCTestCase {
    func testTheWatchLimitIsNamedWhenReached() throws {
        let unshare = URL(fileURLWithPath: "/usr/bin/unshare")
        let probe = try? CLI.run(["-U", "-r", "sh", "-c", "echo 5 > /proc/sys/user/max_inotify_watches"], executable: unshare)
        guard probe?.status == 0 else {
            throw XCTSkip("no user namespace with its own inotify limits here: \(probe?.stderr ?? "no /usr/bin/unshare")")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("watch-limit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for i in 1...101 { _ = FileManager.default.createFile(atPath: dir.path + "/f\(i)", contents: Data()) }
        let script = dir.appendingPathComponent("limit.lua")
        try """
            local dispatch = require("dispatch")
            local dir = ...
            local q, sources, seen = dispatch.queue("watch"), {}, 0
            local made, done = dispatch.group(), dispatch.group()
            for i = 1, 101 do
              local s, message, name = dispatch.source.file{path = dir .. "/f" .. i, events = {"write"}, queue = q}
              if not s then print(i, message, name) break end
              sources[i] = s
              made:enter(); done:enter()
              s:set_registration_handler(function() made:leave() end)
              s:set_event_handler(function() seen = seen + 1; s:cancel() end)
              s:set_cancel_handler(function() done:leave() end)
              s:resume()
            end
            made:wait()
            for i = 1, #sources do
              local f = assert(io.open(dir .. "/f" .. i, "a")); f:write("x"); f:close()
            end
            print(done:wait(30), q:sync(function() return seen end))
            """.write(to: script, atomically: false, encoding: .utf8)
        let r = try CLI.run(["-U", "-r", "sh", "-c",
                             "echo 100 > /proc/sys/user/max_inotify_watches && exec \"$0\" run \"$1\" \"$2\"",
                             CLI.binary.path, script.path, dir.path],
                            timeout: 60, executable: unshare)
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, r.stdout + r.stderr)
        let failure = lines.first?.split(separator: "\t").map(String.init) ?? []
        XCTAssertEqual(failure.first, "101", r.stdout)
        XCTAssertEqual(failure.last, "ENOSPC", r.stdout)
        XCTAssertTrue(failure.count == 3 && failure[1].hasPrefix(dir.path + "/f101: the limit of inotify watches per user is reached"), r.stdout)
        XCTAssertNotNil(r.stdout.range(of: #"fs\.inotify\.max_user_watches = [0-9]+, user\.max_inotify_watches = 100 in this user namespace"#,
                                       options: String.CompareOptions.regularExpression), r.stdout)
        XCTAssertEqual(lines.last, "true\t100")
    }
}
