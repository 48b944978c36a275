import Foundation
import XCTest

/// The string, table and utf8 libraries are Lua 5.4.4's, carried with a step counter
/// (Sources/CLuaShim/stdlib): the official test suite's files for them pass unchanged, each on
/// its own, and the libraries are the carried ones (the string metatable's too).
final class CarriedLibrariesTests: XCTestCase {
    func testTheOfficialFilesPass() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("carried-\(getpid())")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.copyItem(at: CLI.packageRoot.appendingPathComponent("Tests/LuaTestSuite/testes"), to: work)
        defer { try? FileManager.default.removeItem(at: work) }
        for file in ["strings.lua", "pm.lua", "sort.lua", "tpack.lua", "utf8.lua"] {
            let r = try CLI.run([file], timeout: 300, directory: work)
            XCTAssertEqual(r.status, 0, "\(file): \(r.stdout.suffix(500)) \(r.stderr)")
            XCTAssertTrue(r.stdout.lowercased().hasSuffix("ok\n"), "\(file): \(r.stdout.suffix(500))")
        }
    }

    /// Stock Lua repeats "" 2^62 times (for ever); the carried string.rep returns at once, so
    /// it tells the libraries apart, through the library, `("")`'s metatable and `require`.
    func testTheCarriedLibrariesAreInstalled() throws {
        let r = try CLI.run(["-e", """
            print(string.rep("", 2^62) == "", (""):rep(2^62) == "", require("string") == string,
                  getmetatable("").__index == string, require("table") == table, require("utf8") == utf8)
            """], timeout: 60)
        XCTAssertEqual(r.stdout, "true\ttrue\ttrue\ttrue\ttrue\ttrue\n", r.stderr)
    }
}
