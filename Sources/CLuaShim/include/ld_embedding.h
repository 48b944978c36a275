// What the embedding API (Sources/LuaDispatch/Embedding) needs from C: table access that may run
// metamethods, made in protected mode so that their errors never unwind through Swift, and the
// __index / __newindex of Swift objects handed to Lua.
#ifndef LD_EMBEDDING_H
#define LD_EMBEDDING_H

#include <lua5.4/lua.h>

/// `t[k]` with metamethods, the table at `t` and the key on top (popped): LUA_OK and the value on
/// top, or an error status and the error value (through the message handler at index `msgh`,
/// 0 for none).
int ld_pgettable(lua_State *L, int t, int msgh);
/// `t[k] = v` with metamethods, the key and the value on top (popped); LUA_OK or an error status
/// with the error on top.
int ld_psettable(lua_State *L, int t, int msgh);
/// `#v` with metamethods (luaL_len): LUA_OK and the length in `*length`, or an error status with
/// the error on top.
int ld_plen(lua_State *L, int i, int msgh, lua_Integer *length);

/// The __index of a Swift object's userdata. Upvalue 1: its type's methods table; upvalue 2: its
/// getters table (name -> function(self)). A method is returned as it is; a getter is called.
/// Any other key gives nil, as a table would.
int ld_host_index(lua_State *L);
/// The __newindex of a Swift object's userdata. Upvalue 1: setters (name -> function(self, v));
/// upvalue 2: getters; upvalue 3: the type's name. A key with no setter raises
/// "property 'k' of T is read-only" (it has a getter) or "T has no property 'k'".
int ld_host_newindex(lua_State *L);

#endif
