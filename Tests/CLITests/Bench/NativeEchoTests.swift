import XCTest

/// The native baseline of `net_echo_native` (Sources/luadispatch-native/NativeEcho.swift) must
/// never lose a connection, or the row fails at random: it once did, about 1 run in 150.
final class NativeEchoTests: XCTestCase {
    /// Echo rounds in one process, so that each round's sockets take the numbers of the last
    /// round's. With each direction's descriptor closed in its own channel's cleanup, a new
    /// socket could take the first number while the old socket was still open through the
    /// other, and its channel read end of file at once: most such processes failed.
    func testEchoRoundsReusingDescriptorNumbersLoseNothing() throws {
        let r = try CLI.run(["echo", "4", "8192", "1500"], timeout: nil,
                            executable: CLI.productsDirectory.appendingPathComponent("luadispatch-native"))
        let text = r.stdout, errors = r.stderr
        XCTAssertFalse(r.signalled, "killed by signal \(r.status): \(errors.prefix(400))")
        XCTAssertEqual(r.status, 0, errors)
        XCTAssertEqual(text.split(separator: " ").count, 2, text)
    }
}
