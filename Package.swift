// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LuaDispatch",
    products: [
        .library(name: "LuaDispatch", targets: ["LuaDispatch"]),
        .executable(name: "luadispatch", targets: ["luadispatch"]),
    ],
    dependencies: [],
    targets: [
        // Debian's liblua5.4-dev, found through pkg-config when it has a .pc file.
        .systemLibrary(
            name: "CLua",
            path: "Sources/CLua",
            pkgConfig: "lua5.4",
            providers: [.apt(["liblua5.4-dev"])]
        ),
        // Lua's macros as functions, and the C frames that may call lua_error.
        .target(name: "CLuaShim", dependencies: ["CLua"], linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "LuaDispatch", dependencies: ["CLua", "CLuaShim"]),
        // lua.c's command line and REPL, run on the runtime's interpreter.
        .target(name: "CLuaCLI", dependencies: ["CLua", "CLuaShim"], linkerSettings: [.linkedLibrary("dl")]),
        // Draws a recorded trace as an HTML page or SVG picture (`luadispatch trace view`).
        .target(name: "TraceView"),
        // The release build links the Swift runtime statically: start-up is half as long.
        .executableTarget(name: "luadispatch", dependencies: ["LuaDispatch", "CLuaCLI", "TraceView"],
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-Xclang-linker", "-no-pie"], .when(configuration: .release))]),
        // A Swift tool embedding the runtime (see docs/embedding.md).
        .executableTarget(name: "embed-example", dependencies: ["LuaDispatch"]),
        // The benchmark suite: each row measures Lua and native Swift Dispatch in the same run.
        .executableTarget(name: "luadispatch-bench", dependencies: ["LuaDispatch", "CLuaShim"]),
        .testTarget(name: "LuaDispatchTests", dependencies: ["LuaDispatch", "CLua", "CLuaShim"]),
        .testTarget(name: "CLITests", dependencies: ["luadispatch", "embed-example", "luadispatch-bench", "TraceView"]),
    ]
)
