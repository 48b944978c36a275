import Foundation
import XCTest

/// `dispatch.so` loaded by Debian's stock `lua5.4` (the module product of this package).
enum StockLua {
    static let interpreter = URL(fileURLWithPath: "/usr/bin/lua5.4")

    /// A directory holding `dispatch.so`, linked to the module built next to the tests.
    static let moduleDirectory: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dispatch-module-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let link = dir.appendingPathComponent("dispatch.so")
        try? FileManager.default.removeItem(at: link)
        try? FileManager.default.createSymbolicLink(
            at: link, withDestinationURL: CLI.productsDirectory.appendingPathComponent("libLuaDispatchModule.so"))
        return dir
    }()

    /// What makes `require "dispatch"` find the module.
    static var cpath: String { "package.cpath = '\(moduleDirectory.path)/?.so;' .. package.cpath" }

    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 60,
                    started: ((Process) -> Void)? = nil) throws -> CLIResult {
        XCTAssertTrue(FileManager.default.fileExists(atPath: CLI.productsDirectory.appendingPathComponent("libLuaDispatchModule.so").path),
                      "the module is built by `swift build` (product LuaDispatchModule)")
        let preload = sanitizerRuntime.map { ["LD_PRELOAD": $0] } ?? [:]
        return try CLI.run(arguments, environment: environment.merging(preload) { $1 }, timeout: timeout, executable: interpreter, started: started)
    }

    /// The toolchain's `usr/lib/swift/linux` (where libswiftCore.so was loaded from).
    static let toolchainLib: URL = {
        // procfs files report size 0: read to the end instead of by size.
        let data = FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() ?? Data()
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasSuffix("/libswiftCore.so") }
        return URL(fileURLWithPath: String(line?.split(separator: " ").last ?? "/opt/swift/usr/lib/swift/linux/libswiftCore.so"))
            .deletingLastPathComponent()
    }()

    /// In an AddressSanitizer build (scripts/sanitize/asan) the module needs the sanitizer's
    /// runtime, which lua5.4 does not have: it is preloaded, so that the module runs checked too.
    static let sanitizerRuntime: String? = {
        guard dlsym(dlopen(nil, RTLD_NOW), "__asan_init") != nil else { return nil }
        // <toolchain>/usr/lib/swift/linux -> <toolchain>/usr/lib/clang/*/lib/linux
        let lib = toolchainLib.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("clang")
        for version in (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? [] {
            let so = lib.appendingPathComponent("\(version)/lib/linux/libclang_rt.asan-x86_64.so").path
            if FileManager.default.fileExists(atPath: so) { return so }
        }
        XCTFail("no libclang_rt.asan-x86_64.so under \(lib.path)")
        return nil
    }()

    /// Runs `code` as a file under `lua5.4`, with the module on `package.cpath`.
    static func script(_ code: String, timeout: TimeInterval = 60, started: ((Process) -> Void)? = nil) throws -> CLIResult {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("module-\(UUID().uuidString).lua")
        try (cpath + "\n" + code).write(to: file, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try run([file.path], timeout: timeout, started: started)
    }
}
