/// How a binding fails. Bindings never call `lua_error` themselves: the trampoline in
/// CLuaShim raises from a C frame, so no longjmp ever crosses a Swift frame.
///
/// A host function may throw `.message` and `.argument` to raise exactly that Lua error. `.raise`
/// is for the runtime's own bindings, which push the error value first: a host function has no
/// access to the Lua stack, and when it throws `.raise` the error raised is `name: error`.
public enum LuaError: Error, Sendable {
    /// `bad argument #n to 'name' (message)`.
    case argument(Int32, String)
    /// A message naming the function, object and rule; the caller's position is prefixed.
    case message(String)
    /// The error value is already on top of the stack: raise it unchanged (the runtime's
    /// bindings only; see above).
    case raise
}
