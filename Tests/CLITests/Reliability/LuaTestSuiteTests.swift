import Foundation
import XCTest

/// The official Lua 5.4.4 test suite (vendored in Tests/LuaTestSuite) passes with `luadispatch`
/// as the interpreter: all.lua in portable mode, files.lua outside it (popen, pclose,
/// os.execute) and main.lua, through scripts/lua-testsuite.
final class LuaTestSuiteTests: XCTestCase {
    func testTheLua544TestSuitePasses() throws {
        let root = CLI.packageRoot
        let p = Process()
        p.executableURL = root.appendingPathComponent("scripts/lua-testsuite")
        p.arguments = [root.appendingPathComponent("Tests/LuaTestSuite/testes").path, CLI.binary.path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("all.lua OK") && text.contains("files.lua OK") && text.contains("main.lua OK"), text)
    }
}
