import Foundation
import XCTest
@testable import LuaDispatch

/// Descriptors epoll refuses would give read sources that never fire: they are refused up front.
final class ReadinessTests: XCTestCase {
    func testUnwatchableDescriptorIsRefusedWithErrno() throws {
        let devNull = open("/dev/null", O_RDONLY)
        XCTAssertGreaterThanOrEqual(devNull, 0)
        defer { close(devNull) }
        let run = runLua("""
            local src, msg, name = dispatch.source.read{fd = \(devNull)}
            t.record(src == nil, name, msg:find("fd \(devNull)", 1, true) ~= nil)
            local w = dispatch.source.write{fd = \(devNull)}
            t.record(w == nil)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[true, "EPERM", true], [true]])
    }

    /// Closing libdispatch's own descriptors would make it abort: `dispatch.fd.close` refuses.
    func testDispatchsOwnDescriptorsCannotBeClosed() throws {
        let run = runLua("""
            dispatch.queue("warm"):sync(function() end)
            local refused = 0
            for fd = 3, 256 do
              local link = io.popen("readlink /proc/" .. dispatch.pid() .. "/fd/" .. fd):read("a")
              if link:match("eventpoll") or link:match("eventfd") or link:match("timerfd") then
                local ok, msg, name = dispatch.fd.close(fd)
                assert(ok == nil and name == "EPERM" and msg:find("belongs to Dispatch"), tostring(msg))
                refused = refused + 1
              end
            end
            t.record(refused > 0)
            dispatch.queue("after"):after(0.01, function() t.record("still working") end)
            """)
        assertClean(run)
        XCTAssertEqual(run.records, [[true], ["still working"]])
    }

    func testRegularFilesArePlainlyReady() throws {
        let path = NSTemporaryDirectory() + "readiness-\(UUID().uuidString)"
        XCTAssertNoThrow(try Data("twelve bytes".utf8).write(to: URL(fileURLWithPath: path)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = runLua("""
            local fd = assert(dispatch.fd.open("\(path)", "r"))
            local src
            src = dispatch.source.read{fd = fd, queue = dispatch.main, handler = function()
              t.record(src.data)
              src:cancel()
            end, cancel_handler = function() dispatch.fd.close(fd) end}
            src:resume()
            """)
        assertClean(run)
        XCTAssertEqual(run.records.count, 1)
    }
}
