import Foundation
import XCTest

/// The official Lua 5.4.4 test suite (vendored in Tests/LuaTestSuite) passes with `luadispatch`
/// as the interpreter: all.lua in portable mode, files.lua outside it (popen, pclose,
/// os.execute) and main.lua, through scripts/lua-testsuite.
final class LuaTestSuiteTests: XCTestCase {
    func testTheLua544TestSuitePasses() throws {
        let root = CLI.packageRoot
        let r = try CLI.run([root.appendingPathComponent("Tests/LuaTestSuite/testes").path, CLI.binary.path],
                            timeout: nil, mergeOutput: true, executable: root.appendingPathComponent("scripts/lua-testsuite"))
        let text = r.stdout
        XCTAssertEqual(r.status, 0, text)
        XCTAssertTrue(text.contains("all.lua OK") && text.contains("files.lua OK") && text.contains("main.lua OK"), text)
    }
}
