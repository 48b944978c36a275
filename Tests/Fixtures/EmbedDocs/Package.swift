// swift-tools-version:6.0
// The examples of docs/embedding.md, as an outside package that depends on LuaDispatch by path
// builds and runs them (Tests/CLITests/Embedding/EmbedDocsTests.swift).
import PackageDescription

let package = Package(
    name: "EmbedDocs",
    dependencies: [.package(name: "LuaDispatch", path: "../../..")],
    targets: [
        .executableTarget(name: "EmbedDocs", dependencies: [.product(name: "LuaDispatch", package: "LuaDispatch")]),
    ]
)
