// See ld_embedding.h. Every function here that can raise does it from a C frame; calls go
// through ld_pcall, so that switching sees the Lua code they run (ld_control.h).
#include "ld_control.h"
#include <lua5.4/lauxlib.h>

static int gettable(lua_State *L) {
    lua_gettable(L, 1);
    return 1;
}

static int settable(lua_State *L) {
    lua_settable(L, 1);
    return 0;
}

static int len(lua_State *L) {
    lua_pushinteger(L, luaL_len(L, 1));
    return 1;
}

int ld_pgettable(lua_State *L, int t, int msgh) {
    t = lua_absindex(L, t);
    lua_pushcfunction(L, gettable);
    lua_pushvalue(L, t);
    lua_rotate(L, -3, 2);  // f, t, k
    return ld_pcall(L, 2, 1, msgh);
}

int ld_psettable(lua_State *L, int t, int msgh) {
    t = lua_absindex(L, t);
    lua_pushcfunction(L, settable);
    lua_pushvalue(L, t);
    lua_rotate(L, -4, 2);  // f, t, k, v
    return ld_pcall(L, 3, 0, msgh);
}

int ld_plen(lua_State *L, int i, int msgh, lua_Integer *length) {
    i = lua_absindex(L, i);
    lua_pushcfunction(L, len);
    lua_pushvalue(L, i);
    int status = ld_pcall(L, 1, 1, msgh);
    if (status == LUA_OK) {
        *length = lua_tointegerx(L, -1, NULL);
        lua_pop(L, 1);
    }
    return status;
}

int ld_host_index(lua_State *L) {
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TNIL) return 1;
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

int ld_host_newindex(lua_State *L) {
    lua_settop(L, 3);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) {
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 3);
        lua_call(L, 2, 0);
        return 0;
    }
    const char *type = lua_tostring(L, lua_upvalueindex(3));
    if (lua_type(L, 2) != LUA_TSTRING) return luaL_error(L, "cannot set a %s key on %s", luaL_typename(L, 2), type);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL)
        return luaL_error(L, "property '%s' of %s is read-only", lua_tostring(L, 2), type);
    return luaL_error(L, "%s has no property '%s'", type, lua_tostring(L, 2));
}
