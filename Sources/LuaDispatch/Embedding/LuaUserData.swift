import CLua

/// A Swift class whose objects Lua uses as userdata: with the methods, properties and
/// metamethods its `luaType` defines.
///
/// ```swift
/// final class Counter: LuaUserData, @unchecked Sendable {   // (a Mutex inside makes it safe)
///     static let luaType = LuaType<Counter>("Counter") { t in
///         t.method("add") { (c: Counter, n: Int) in c.add(n) }
///         t.property("value", get: { $0.value })
///         t.metamethod(.tostring) { (c: Counter) in "Counter(\(c.value))" }
///     }
/// }
/// ```
///
/// An object handed to Lua (as an argument, a result, a module value) becomes a userdata that
/// keeps it alive until Lua collects it; the same object is always the same userdata, so
/// `rawequal` and table keys work; handed back to Swift it is the same object (`===`). Lua code
/// may call its methods from any queue's thread, so the class must be `Sendable`.
public protocol LuaUserData: AnyObject, Sendable, LuaConvertible {
    /// How the type looks from Lua. Built once per process (declare it `static let`).
    static var luaType: LuaType<Self> { get }
}

extension LuaUserData {
    /// The object a userdata of this type holds; any other value is
    /// `TypeName expected, got table`.
    public static func read(from slot: LuaSlot) throws(LuaConversionError) -> Self {
        guard let object = HostObjects.check(slot.L, slot.index, Self.self) else { throw slot.mismatch(luaType.name) }
        return object
    }

    /// The object's userdata (the same one while Lua holds it).
    public func push(to stack: LuaStack) throws(LuaConversionError) { HostObjects.push(stack.L, self) }
}

/// The metamethods a `LuaType` may define. `__index`, `__newindex` (methods and properties),
/// `__gc` (the object's release) and `__name` (the type's name) are the runtime's.
public enum LuaMetamethod: String, Sendable, CaseIterable {
    case tostring = "__tostring", len = "__len", eq = "__eq", lt = "__lt", le = "__le"
    case close = "__close", call = "__call", concat = "__concat", unm = "__unm"
    case add = "__add", sub = "__sub", mul = "__mul", div = "__div", mod = "__mod", pow = "__pow", idiv = "__idiv"
    case band = "__band", bor = "__bor", bxor = "__bxor", shl = "__shl", shr = "__shr", bnot = "__bnot"
}

/// What Lua sees of a `LuaUserData` class: its name (`__name`: in messages and `tostring`),
/// methods (`obj:name(...)`), properties (`obj.name`, `obj.name = v`) and metamethods.
public final class LuaType<Object: LuaUserData>: Sendable {
    public let name: String
    let methods: [HostCallable]
    let getters: [HostCallable]
    let setters: [HostCallable]
    let metamethods: [(LuaMetamethod, HostCallable)]

    public init(_ name: String, _ define: (inout LuaTypeDefinition<Object>) -> Void) {
        var d = LuaTypeDefinition<Object>(typeName: name)
        define(&d)
        self.name = name
        methods = d.methods
        getters = d.getters
        setters = d.setters
        metamethods = d.metamethods
    }
}

/// The definition `LuaType`'s initialiser fills in. A method's or metamethod's first parameter
/// is the object (`self`, argument #1 in messages, as for `dispatch`'s own methods); the others
/// are typed as in typed host functions.
public struct LuaTypeDefinition<Object: LuaUserData> {
    let typeName: String
    var methods: [HostCallable] = []
    var getters: [HostCallable] = []
    var setters: [HostCallable] = []
    var metamethods: [(LuaMetamethod, HostCallable)] = []

    init(typeName: String) { self.typeName = typeName }

    /// `obj:name(...)`, returning one value.
    public mutating func method<each A: LuaConvertible, R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (Object, repeat each A) throws -> R
    ) {
        methods.append(HostCallable.method(name, body))
    }

    /// `obj:name(...)` returning several results (a tuple).
    public mutating func method<each A: LuaConvertible, each R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (Object, repeat each A) throws -> (repeat each R)
    ) {
        methods.append(HostCallable.method(name, body))
    }

    /// `obj:name(...)`, returning nothing.
    public mutating func method<each A: LuaConvertible>(_ name: String, _ body: @escaping @Sendable (Object, repeat each A) throws -> Void) {
        methods.append(HostCallable.method(name, body))
    }

    /// `obj:name(...)` as an async host function (see `HostModule.asyncFunction`).
    public mutating func asyncMethod<each A: LuaConvertible & Sendable, R: LuaConvertible & Sendable>(
        _ name: String, _ body: @escaping @Sendable (Object, repeat each A) async throws -> R
    ) {
        methods.append(HostCallable.asyncMethod(name, body))
    }

    /// A read-only property: `obj.name`; assigning it raises `property 'name' of T is read-only`.
    public mutating func property<V: LuaConvertible>(_ name: String, get: @escaping @Sendable (Object) -> V) {
        getters.append(.accessor(HostCallable.typed(name) { (o: Object) in get(o) }))
    }

    /// A read-write property: `obj.name`, `obj.name = v` (a value of the wrong type raises
    /// `bad value for property 'name' of T (string expected, got number)`).
    public mutating func property<V: LuaConvertible>(_ name: String, get: @escaping @Sendable (Object) -> V,
                                                     set: @escaping @Sendable (Object, V) throws -> Void) {
        property(name, get: get)
        let typeName = typeName
        setters.append(.accessor(HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let object = try a.argument(Object.self, &i)
            let value: V
            do { value = try V.read(from: LuaSlot(a.L, 2)) } catch {
                throw .message("bad value for property '\(name)' of \(typeName) (\(error))")
            }
            do { try set(object, value) } catch { throw a.failure(error) }
            return 0
        }))
    }

    /// A metamethod. Its parameters are typed like a method's, but need not start with the
    /// object: Lua passes a binary metamethod's operands in their order (`1 .. obj` calls
    /// `__concat(1, obj)`). `.eq` is called by Lua only for two userdata; when either is not an
    /// `Object`, they are unequal and `body` is not called.
    public mutating func metamethod<each A: LuaConvertible, R: LuaConvertible>(
        _ m: LuaMetamethod, _ body: @escaping @Sendable (repeat each A) throws -> R
    ) {
        let callable = HostCallable.typed(m.rawValue, body)
        metamethods.append((m, m == .eq ? Self.equality(callable) : callable))
    }

    /// A metamethod returning nothing (`__close`).
    public mutating func metamethod<each A: LuaConvertible>(_ m: LuaMetamethod, _ body: @escaping @Sendable (repeat each A) throws -> Void) {
        metamethods.append((m, HostCallable.typed(m.rawValue, body)))
    }

    private static func equality(_ callable: HostCallable) -> HostCallable {
        HostCallable(callable.name) { a throws(LuaError) in
            guard HostObjects.check(a.L, 1, Object.self) != nil, HostObjects.check(a.L, 2, Object.self) != nil else {
                lua_pushboolean(a.L, 0)
                return 1
            }
            return try callable.body(a)
        }
    }
}

extension HostCallable {
    /// A property's getter or setter: called by `__index` / `__newindex` (C functions), so its
    /// errors are placed at the Lua code that read or assigned the property.
    static func accessor(_ callable: HostCallable) -> HostCallable {
        HostCallable(callable.name) { a throws(LuaError) in
            do throws(LuaError) { return try callable.body(a) } catch {
                guard case .message(let m) = error else { throw error }
                luaL_where(a.L, 2)
                Lua.push(a.L, m)
                lua_concat(a.L, 2)
                throw .raise
            }
        }
    }

    static func method<Object: LuaUserData, each A: LuaConvertible, R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (Object, repeat each A) throws -> R
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let object = try a.argument(Object.self, &i)
            let arguments = (repeat try a.argument((each A).self, &i))
            let result: R
            do { result = try body(object, repeat each arguments) } catch { throw a.failure(error) }
            return try a.result(result)
        }
    }

    static func method<Object: LuaUserData, each A: LuaConvertible, each R: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (Object, repeat each A) throws -> (repeat each R)
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let object = try a.argument(Object.self, &i)
            let arguments = (repeat try a.argument((each A).self, &i))
            let results: (repeat each R)
            do { results = try body(object, repeat each arguments) } catch { throw a.failure(error) }
            return try a.results(repeat each results)
        }
    }

    static func method<Object: LuaUserData, each A: LuaConvertible>(
        _ name: String, _ body: @escaping @Sendable (Object, repeat each A) throws -> Void
    ) -> HostCallable {
        HostCallable(name) { a throws(LuaError) in
            var i: Int32 = 0
            let object = try a.argument(Object.self, &i)
            let arguments = (repeat try a.argument((each A).self, &i))
            do { try body(object, repeat each arguments) } catch { throw a.failure(error) }
            return 0
        }
    }
}
