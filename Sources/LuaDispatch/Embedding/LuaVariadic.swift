import CLua
import CLuaShim

/// Any number of Lua values of one type, where Lua has a list of values rather than one: as a
/// typed host function's last parameter it takes the rest of the arguments (none or many: Lua's
/// `...`); as a result, each of its values is one Lua result; as an argument of
/// `LuaFunction.call`, each is one argument. Elsewhere (a table field, an element of an array)
/// it is one table, a sequence of its values.
///
/// ```swift
/// m.function("sum") { (label: String, xs: LuaVariadic<Double>) in "\(label) \(xs.reduce(0, +))" }
/// m.function("split") { (s: String) in LuaVariadic(s.split(separator: ",").map(String.init)) }
/// ```
///
/// A wrong value among the rest is `bad argument #n` at its own position.
public struct LuaVariadic<Element: LuaConvertible>: LuaConvertible, RandomAccessCollection, ExpressibleByArrayLiteral {
    public var values: [Element]

    public init(_ values: [Element]) { self.values = values }
    public init<S: Sequence>(_ values: S) where S.Element == Element { self.values = Array(values) }
    public init(arrayLiteral values: Element...) { self.values = values }

    public var startIndex: Int { values.startIndex }
    public var endIndex: Int { values.endIndex }
    public subscript(position: Int) -> Element { values[position] }

    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> LuaVariadic {
        guard slot.rest else { return LuaVariadic(try [Element].read(from: slot)) }
        let L = slot.L, top = lua_gettop(L)
        guard slot.index <= top else { return [] }
        var values: [Element] = []
        values.reserveCapacity(Int(top - slot.index + 1))
        for k in slot.index...top {
            do { values.append(try Element.read(from: LuaSlot(L, k))) } catch {
                var error = error
                error.argumentOffset = k - slot.index
                throw error
            }
        }
        return LuaVariadic(values)
    }

    public func push(to stack: LuaStack) throws(LuaConversionError) {
        guard stack.spreads else { return try values.push(to: stack) }
        guard lua_checkstack(stack.L, Int32(values.count) + 1) != 0 else { throw LuaConversionError("too many values (\(values.count))") }
        let one = LuaStack(stack.L)
        for (k, v) in values.enumerated() {
            do { try v.push(to: one) } catch { throw error.at(index: k + 1) }
        }
    }
}

extension LuaVariadic: Sendable where Element: Sendable {}
extension LuaVariadic: Equatable where Element: Equatable {}
extension LuaVariadic: Hashable where Element: Hashable {}
