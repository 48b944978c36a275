/// How a binding fails. Bindings never call `lua_error` themselves: the trampoline in
/// CLuaShim raises from a C frame, so no longjmp ever crosses a Swift frame.
public enum LuaError: Error, Sendable {
    /// `bad argument #n to 'name' (message)`.
    case argument(Int32, String)
    /// A message naming the function, object and rule; the caller's position is prefixed.
    case message(String)
    /// The error value is already on top of the stack: raise it unchanged.
    case raise
}
