// A full collection, with the state on the running stack (finalizers run Lua).
#include "ld_control.h"

static int collect(lua_State *L) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}

int ld_gc_collect(lua_State *L) {
    lua_pushcfunction(L, collect);
    int status = ld_pcall(L, 0, 0, 0);
    if (status != LUA_OK) lua_pop(L, 1);
    return status;
}
