import CLua
import LuaDispatch

/// The entry point `require("dispatch")` looks for in `dispatch.so`.
@_cdecl("luaopen_dispatch")
public func luaopen_dispatch(_ L: OpaquePointer?) -> Int32 {
    Runtime.openModule(L!)
}
