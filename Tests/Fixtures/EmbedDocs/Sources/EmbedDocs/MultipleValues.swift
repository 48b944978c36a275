import LuaDispatch

// Several values at once: tuple results, the rest of the arguments, a call's results as a
// tuple; global functions in one step; String keys.
func multipleValues() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    runtime.register(function: "divmod") { (a: Int, b: Int) -> (Int, Int) in (a / b, a % b) }
    runtime.register(function: "sum") { (label: String, xs: LuaVariadic<Double>) -> String in
        "\(label): \(xs.reduce(0, +))"
    }
    runtime.register(function: "words") { (text: String) -> LuaVariadic<String> in
        LuaVariadic(text.split(separator: " ").map(String.init))
    }
    print(try runtime.run(string: """
        local q, r = divmod(17, 5)
        return q, r, sum("total", 1, 2, 3.5), select("#", words("a b c")), select(2, pcall(sum, "x", 1, "two"))
        """))   // [3, 2, "total: 6.5", 3, "bad argument #3 to 'sum' (number expected, got string)"]
    // Every result as [LuaValue], or the first ones as a tuple of types:
    let stats = try runtime.load("local t = {...}; table.sort(t); return t[1], t[#t], #t")
    print(try stats.call(5, 3, 9))                                      // [3, 9, 3]
    let (low, high) = try stats.call(5, 3, 9, returning: (Int, Int).self)
    print(low, high)                                                    // 3 9
    print(try stats.call(LuaVariadic([4, 1, 7, 2]), returning: Int.self))   // 1: one argument per value
    // A key held in a String needs no LuaValue around it:
    let settings = try runtime.makeTable()
    let key = "theme"
    try settings.set(key, "dark")
    print(try settings.get(key, as: String.self))                       // dark
}
