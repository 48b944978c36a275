// Opening the standard libraries on a state (ld_stdlib.h): string, table and utf8 are the copies
// carried in this target, which an end of the script reaches inside their long loops.
#include "ld_stdlib.h"
#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>
#include "ld_sandbox.h"

int ld_openlibs(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base}, {LUA_LOADLIBNAME, luaopen_package}, {LUA_COLIBNAME, luaopen_coroutine},
        {LUA_TABLIBNAME, ld_luaopen_table}, {LUA_IOLIBNAME, luaopen_io}, {LUA_OSLIBNAME, luaopen_os},
        {LUA_STRLIBNAME, ld_luaopen_string}, {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, ld_luaopen_utf8},
        {LUA_DBLIBNAME, luaopen_debug},
    };
    lua_Integer mask = ld_sandbox_mask(lua_tointegerx(L, 1, NULL));
    for (int i = 0; i < (int)(sizeof libs / sizeof libs[0]); i++) {
        if (mask & ((lua_Integer)1 << i)) {
            luaL_requiref(L, libs[i].name, libs[i].func, 1);
            if (mask & LD_LIBS_RESTRICTED) ld_sandbox_restrict(L, libs[i].name);
            lua_pop(L, 1);
        }
    }
    return 0;
}
