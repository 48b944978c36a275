import LuaDispatch

/// A type of the host's own as a typed parameter and result.
struct Celsius: LuaConvertible {
    var degrees: Double

    static func read(from slot: LuaSlot) throws(LuaConversionError) -> Celsius {
        switch try slot.value() {
        case .double(let d): return Celsius(degrees: d)
        case .integer(let i): return Celsius(degrees: Double(i))
        default: throw slot.mismatch("temperature")
        }
    }

    func push(to stack: LuaStack) throws(LuaConversionError) { try stack.push(degrees) }
}

func conversions() throws {
    let runtime = Runtime()
    defer { runtime.close() }
    runtime.register(function: "warmer") { (t: Celsius) -> Celsius in Celsius(degrees: t.degrees + 1.5) }
    print(try runtime.run(string: "return warmer(20), select(2, pcall(warmer, 'hot'))"))
    // [21.5, "bad argument #1 to 'warmer' (temperature expected, got string)"]
}
