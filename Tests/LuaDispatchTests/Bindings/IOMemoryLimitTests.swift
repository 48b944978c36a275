import Foundation
import XCTest
@testable import LuaDispatch

/// A one-shot `dispatch.io.read` under a memory limit: once the script is past it, the read
/// drops what it gathered, stops reading and ends with ENOMEM (docs/reliability.md). Reading on
/// to the end only to drop the rest took as long as the rest: a 4 GiB file under 64M read all
/// 4,096 MiB (20 s on a loaded machine) before its handler ran.
final class IOMemoryLimitTests: XCTestCase {
    private var dir = ""
    override func setUp() { dir = IOHarness.temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    /// A 2 GiB sparse file read at once under a 16 MiB limit: ENOMEM with no data, after well
    /// under 256 MiB read (the process's `rchar`); the next one-shot read of the descriptor
    /// reads on from there; no duplicate or descriptor is left behind.
    func testAReadPastTheLimitStopsAndTheNextReadWorks() throws {
        let path = dir + "/sparse.bin"
        let made = open(path, O_CREAT | O_WRONLY, 0o644)
        XCTAssertGreaterThanOrEqual(made, 0)
        XCTAssertEqual(ftruncate(made, 2 << 30), 0)
        close(made)
        let before = IOHarness.openDescriptorCount()
        let out = IOHarness(limits: .init(memory: 16 << 20)).run("""
            local function rchar()
              local f = io.open('/proc/self/io') local s = f:read('a') f:close()
              return tonumber(s:match('rchar: (%d+)'))
            end
            local fd = dispatch.fd.open(\(IOHarness.lua(path)), 'r')
            local g, q, got = dispatch.group(), dispatch.queue('io'), {}
            local start = rchar()
            g:enter()
            dispatch.io.read(fd, 2 << 30, q, function(data, err)
              got = {#data, err, (rchar() - start) >> 20}
              g:leave()
            end)
            g:wait()
            t.emit(table.unpack(got))
            g:enter()
            dispatch.io.read(fd, 16, q, function(data, err) t.emit(#data, err) g:leave() end)
            g:wait()
            dispatch.fd.close(fd)
            """)
        XCTAssertEqual(out.count, 2, "\(out)")
        let first = out.first?.split(separator: " ").compactMap { Int($0) } ?? []
        XCTAssertEqual(first.count, 3, "\(out)")
        guard first.count == 3 else { return }
        XCTAssertEqual(first[0], 0, "no data from a read past the limit")
        XCTAssertEqual(Int32(first[1]), ENOMEM)
        XCTAssertLessThan(first[2], 256, "MiB read before the handler ran")
        XCTAssertEqual(out.last, "16 0", "the descriptor reads on after the stop")
        XCTAssertEqual(IODescriptors.count, 0, "every duplicate is closed after its last operation")
        XCTAssertEqual(IOHarness.openDescriptorCount(), before)
    }
}
