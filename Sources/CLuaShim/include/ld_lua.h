// Lua's macros as functions Swift can see, and small helpers on a state: its runtime (kept in
// the extra space), loading a chunk.
#ifndef LD_LUA_H
#define LD_LUA_H

#include <lua5.4/lua.h>
#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>

static inline int ld_upvalueindex(int i) { return lua_upvalueindex(i); }
static inline int ld_registryindex(void) { return LUA_REGISTRYINDEX; }
static inline void ld_pop(lua_State *L, int n) { lua_pop(L, n); }
static inline const char *ld_typename(lua_State *L, int i) { return luaL_typename(L, i); }
static inline void ld_newtable(lua_State *L) { lua_newtable(L); }
static inline void ld_insert(lua_State *L, int idx) { lua_insert(L, idx); }
static inline void ld_remove(lua_State *L, int idx) { lua_remove(L, idx); }
static inline void ld_replace(lua_State *L, int idx) { lua_replace(L, idx); }
static inline void **ld_extraspace(lua_State *L) { return (void **)lua_getextraspace(L); }
/// The runtime kept in `L`'s extra space. A thread made before the runtime attached to a host's
/// state has none of its own (Lua copies the main thread's extra space only when it makes a
/// thread): it gets the main thread's then.
static inline void *ld_runtime_of(lua_State *L) {
    void **p = (void **)lua_getextraspace(L);
    if (*p == NULL) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
        *p = *(void **)lua_getextraspace(lua_tothread(L, -1));
        lua_pop(L, 1);
    }
    return *p;
}
static inline void *ld_newuserdata(lua_State *L, size_t size) { return lua_newuserdatauv(L, size, 0); }
static inline int ld_loadbuffer(lua_State *L, const char *buf, size_t size, const char *name) {
    return luaL_loadbufferx(L, buf, size, name, NULL);
}
static inline int ld_multret(void) { return LUA_MULTRET; }
/// lua_gc is variadic: a step as if `kb` kilobytes had been allocated (for memory Lua cannot see).
static inline int ld_gc_step(lua_State *L, int kb) { return lua_gc(L, LUA_GCSTEP, kb); }


#endif
