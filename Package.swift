// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LuaDispatch",
    products: [
        // The embedding API, linked with Debian's liblua5.4.
        .library(name: "LuaDispatch", targets: ["LuaDispatch", "CLuaLink"]),
        // The Lua C module (`dispatch.so`, see scripts/build-module): Lua's symbols come from the
        // host interpreter, so it links no liblua of its own.
        .library(name: "LuaDispatchModule", type: .dynamic, targets: ["DispatchModule"]),
        .executable(name: "luadispatch", targets: ["luadispatch"]),
    ],
    dependencies: [],
    targets: [
        // Debian's liblua5.4-dev: the headers only. What links liblua5.4 is CLuaLink, so that
        // the module can take Lua's symbols from the interpreter that loads it (stock lua5.4
        // has Lua linked in statically; a second copy of Lua in the process would corrupt it).
        .systemLibrary(
            name: "CLua",
            path: "Sources/CLua",
            providers: [.apt(["liblua5.4-dev"])]
        ),
        // liblua5.4 itself, for the executables, the tests and Swift hosts.
        .target(name: "CLuaLink", linkerSettings: [.linkedLibrary("lua5.4")]),
        // Lua's macros as functions, and the C frames that may call lua_error.
        .target(name: "CLuaShim", dependencies: ["CLua"], linkerSettings: [.linkedLibrary("dl")]),
        // Lua 5.4.4's string, table and utf8 libraries, carried with end checks in their long
        // loops (see ld_stdlib.h), and the opening of every standard library. Optimised in every
        // configuration, as liblua is: at -O0 the debug and sanitizer builds' string.unpack and
        // pattern matching ran twice as slow as liblua's. At -O3 clang inlines singlematch into
        // the matcher: the official pm.lua took 1.18x stock lua5.4's instructions at -O2, 0.85x
        // at -O3 (callgrind, release build).
        .target(name: "CLuaStdlib", dependencies: ["CLua", "CLuaShim"], cSettings: [.unsafeFlags(["-O3"])]),
        .target(name: "LuaDispatch", dependencies: ["CLua", "CLuaShim", "CLuaStdlib"], exclude: ["Embedding/README.md", "Control/README.md"]),
        // `luaopen_dispatch`: the runtime attached to the loading interpreter's state.
        // Never unmapped: lua_close dlcloses the C modules it loaded while Dispatch's threads
        // may still be releasing blocks whose code lives in this library.
        .target(name: "DispatchModule", dependencies: ["LuaDispatch"],
                linkerSettings: [.unsafeFlags(["-Xlinker", "-z", "-Xlinker", "nodelete"])]),
        // lua.c's command line and REPL, run on the runtime's interpreter.
        .target(name: "CLuaCLI", dependencies: ["CLua", "CLuaShim"], linkerSettings: [.linkedLibrary("dl")]),
        // The bundled scenarios' runner (`luadispatch scenarios`) and their `scenario` module, a
        // Lua file compiled into the binary (which then runs from anywhere, as one file).
        .target(name: "Scenarios", dependencies: ["LuaDispatch"], resources: [.embedInCode("scenario.lua")]),
        // Draws a recorded trace as an HTML page or SVG picture (`luadispatch trace view`).
        .target(name: "TraceView"),
        // The release build links the Swift runtime statically: start-up is half as long.
        .executableTarget(name: "luadispatch", dependencies: ["LuaDispatch", "CLuaCLI", "CLuaLink", "TraceView", "Scenarios"],
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-Xclang-linker", "-no-pie"], .when(configuration: .release))]),
        // A Swift tool embedding the runtime (see docs/embedding.md).
        .executableTarget(name: "embed-example", dependencies: ["LuaDispatch", "CLuaLink"]),
        // The benchmark suite: each row measures Lua and native Swift Dispatch in the same run.
        .executableTarget(name: "luadispatch-bench", dependencies: ["LuaDispatch", "CLuaShim", "CLuaLink"]),
        // The suite's native baselines: one standalone Swift program per row, no Lua in it.
        .executableTarget(name: "luadispatch-native"),
        .testTarget(name: "LuaDispatchTests", dependencies: ["LuaDispatch", "CLua", "CLuaShim", "CLuaLink"]),
        .testTarget(name: "CLITests", dependencies: ["luadispatch", "embed-example", "luadispatch-bench", "luadispatch-native", "TraceView"]),
    ]
)
