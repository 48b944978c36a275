import CLua
import CLuaShim

/// The Lua table where the functions of pending record blocks wait, each at its record's slot
/// (`BlockRecord.slot`): storing one is a raw set, taking it a raw get, where registry
/// references cost a free-list walk each way. Records are reused most recently freed first, so
/// the slots in use stay dense and the table's array part holds them. (Sizing that array ahead
/// of the slots, by replacing the table as it fills, was measured: the copies cost more
/// instructions than Lua's own rehashing saves.) Under the interpreter lock.
final class PendingFunctions {
    /// The table (a registry ref), made with the interpreter.
    @exclusivity(unchecked) private(set) var ref: Int32 = LUA_NOREF

    /// Makes the table; `L` is the main state, before anything is submitted.
    func create(_ L: OpaquePointer) {
        ld_newtable(L)
        ref = luaL_ref(L, ld_registryindex())
    }

    /// Stores the function on top of `L` (popped) at `slot`.
    func store(_ L: OpaquePointer, slot: lua_Integer) {
        lua_rawgeti(L, ld_registryindex(), lua_Integer(ref))
        lua_rotate(L, -2, 1)
        lua_rawseti(L, -2, slot)
        ld_pop(L, 1)
    }

    /// Pushes the function at `slot` onto `T`, and clears the slot.
    @inline(__always) func take(_ T: OpaquePointer, slot: lua_Integer) { ld_take_slot(T, ref, slot) }
}
