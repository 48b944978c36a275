import XCTest

/// The native baseline of `net_echo_native` (Sources/luadispatch-native/NativeEcho.swift) must
/// never lose a connection, or the row fails at random: it once did, about 1 run in 150.
final class NativeEchoTests: XCTestCase {
    /// Echo rounds in one process, so that each round's sockets take the numbers of the last
    /// round's. With each direction's descriptor closed in its own channel's cleanup, a new
    /// socket could take the first number while the old socket was still open through the
    /// other, and its channel read end of file at once: most such processes failed.
    func testEchoRoundsReusingDescriptorNumbersLoseNothing() throws {
        let p = Process()
        p.executableURL = CLI.productsDirectory.appendingPathComponent("luadispatch-native")
        p.arguments = ["echo", "4", "8192", "1500"]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationReason, .exit, "killed by signal \(p.terminationStatus): \(errors.prefix(400))")
        XCTAssertEqual(p.terminationStatus, 0, errors)
        XCTAssertEqual(text.split(separator: " ").count, 2, text)
    }
}
