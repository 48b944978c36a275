import LuaDispatch

// A live table: Swift reads what Lua wrote, Lua sees what Swift wrote.
func liveTables() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    try runtime.run(string: """
        settings = {theme = "dark"}
        function toggle() settings.theme = settings.theme == "dark" and "light" or "dark" end
        """)
    let settings = try runtime.globals.get("settings", as: LuaTable.self)
    try runtime.call("toggle")
    print(try settings.get("theme", as: String.self))    // light: read now, not copied before
    try settings.set("font", "mono")
    print(try runtime.run(string: "return settings.font"))   // ["mono"]
}
