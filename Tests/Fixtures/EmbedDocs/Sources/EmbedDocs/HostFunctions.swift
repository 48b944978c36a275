import LuaDispatch

struct OutOfStock: Error, CustomStringConvertible {
    var description: String { "out of stock" }
}

// Untyped, typed and failing host functions.
func hostFunctions() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    runtime.register(module: "shop") { m in
        // Every argument and result as LuaValues.
        m.function("echo") { (arguments: [LuaValue]) in arguments }
        // Typed: a wrong argument is Lua's `bad argument` error, naming the function.
        m.function("total") { (prices: [Double], discount: Double?) -> Double in
            prices.reduce(0, +) * (1 - (discount ?? 0))
        }
        // A thrown error is a Lua error: the function's name, then the error's description.
        m.function("buy") { (item: String) throws -> Int in
            guard item == "tea" else { throw OutOfStock() }
            return 1
        }
        m.value("currency", "EUR")
    }
    let result = try runtime.run(string: """
        local shop = require("shop")
        return shop.total({10, 20}, 0.5), shop.currency, select(2, pcall(shop.buy, "coffee")),
               select(2, pcall(shop.total, {10, "twenty"})), #{shop.echo(1, 2, 3)}
        """)
    print(result)   // [15.0, "EUR", "buy: out of stock", "bad argument #1 to 'total' ([2]: number expected, got string)", 3]
}
