import Foundation
import XCTest
@testable import LuaDispatch

final class FDTests: XCTestCase {
    func testPipeOpenReadWriteClose() throws {
        let dir = IOHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/f.txt"
        let out = IOHarness().run("""
            local r, w = dispatch.fd.pipe()
            t.emit(math.type(r), math.type(w))
            t.emit(dispatch.fd.write(w, "abc"))
            t.emit(dispatch.fd.read(r, 2), dispatch.fd.read(r, 10))
            t.emit(tostring(dispatch.fd.set_nonblocking(r)))
            t.emit(select(3, dispatch.fd.read(r, 10)))
            dispatch.fd.close(w)
            t.emit(dispatch.fd.read(r, 10) == "" and "eof")
            t.emit(tostring(dispatch.fd.close(r)), select(3, dispatch.fd.close(1000000)))
            local fd = dispatch.fd.open(\(IOHarness.lua(path)), "w", "0600")
            dispatch.fd.write(fd, "file"); dispatch.fd.close(fd)
            fd = dispatch.fd.open(\(IOHarness.lua(path)), "r")
            t.emit(dispatch.fd.read(fd, 100)); dispatch.fd.close(fd)
            t.emit(select(3, dispatch.fd.open(\(IOHarness.lua(dir + "/no/such")), "r")))
            t.emit(dispatch.errno_name(2), dispatch.errno_name(0))
            """)
        XCTAssertEqual(out, [
            "integer integer", "3", "ab c", "true", "EAGAIN", "eof", "true EBADF", "file", "ENOENT", "ENOENT OK",
        ])
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }

    func testBadArgumentsRaise() {
        let out = IOHarness().run("""
            local function try(f, ...) local ok, err = pcall(f, ...); t.emit(ok and "ok" or err) end
            try(dispatch.fd.read, -1, 10)
            try(dispatch.fd.read, 0, -1)
            try(dispatch.fd.write, 1, nil)
            try(dispatch.fd.open, "/tmp/x", "rw")
            try(dispatch.fd.open, "/tmp/x", "r", "9")
            try(dispatch.fd.close, "x")
            try(dispatch.fd.set_nonblocking, 0, "yes")
            """)
        let expected = [
            "bad argument #1 to 'read' (invalid file descriptor -1)",
            "bad argument #2 to 'read' (length must be >= 0, got -1)",
            "bad argument #2 to 'write' (string expected, got nil)",
            "bad argument #2 to 'open' (invalid mode 'rw')",
            "bad argument #3 to 'open' (invalid permissions '9' (octal string expected))",
            "bad argument #1 to 'close' (number expected, got string)",
            "bad argument #2 to 'set_nonblocking' (boolean expected, got string)",
        ]
        XCTAssertEqual(out.count, expected.count, "\(out)")
        for (got, want) in zip(out, expected) { XCTAssertTrue(got.hasSuffix(want), "\(got) does not end with \(want)") }
    }
}
