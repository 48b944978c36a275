// The standard libraries as a sandboxed interpreter has them (`LuaLibraries.restricted`).
// What is left cannot reach files, processes or the environment, and cannot load binary
// chunks (Lua does not verify bytecode: a crafted chunk crashes the VM or worse). Everything
// removed is absent (nil), not a function that raises later.
#include "ld_sandbox.h"
#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>

#include <string.h>

#define LIB_IO ((lua_Integer)1 << 4)
#define LIB_DEBUG ((lua_Integer)1 << 9)

lua_Integer ld_sandbox_mask(lua_Integer mask) {
    return mask & LD_LIBS_RESTRICTED ? mask & ~(LIB_IO | LIB_DEBUG) : mask;
}

// MARK: base

/// `load`, text only: the original `load` (upvalue 1) with mode "t" whatever mode is given, so
/// that a binary chunk gets Lua's own "attempt to load a binary chunk (mode is 't')". The
/// arguments are checked here first, as `load` checks them, so that errors name 'load'.
static int load_text_only(lua_State *L) {
    if (!lua_isstring(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_optstring(L, 2, NULL);
    luaL_optstring(L, 3, NULL);
    if (lua_gettop(L) < 3) lua_settop(L, 3);  // an absent env stays absent (argument 4)
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static void restrict_base(lua_State *L, int globals) {
    lua_getfield(L, globals, "load");
    static const char *const removed[] = {"dofile", "loadfile", "load", NULL};
    for (int i = 0; removed[i]; i++) {
        lua_pushnil(L);
        lua_setfield(L, globals, removed[i]);
    }
    if (lua_isfunction(L, -1)) {
        lua_pushcclosure(L, load_text_only, 1);
        lua_setfield(L, globals, "load");
    } else {
        lua_pop(L, 1);
    }
}

// MARK: os

/// Clears every field but the kept ones (clearing existing fields while traversing is allowed).
static void restrict_os(lua_State *L, int os) {
    static const char *const kept[] = {"time", "clock", "date", "difftime", NULL};
    lua_pushnil(L);
    while (lua_next(L, os) != 0) {
        lua_pop(L, 1);
        int keep = 0;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (int i = 0; kept[i]; i++) keep |= strcmp(lua_tostring(L, -1), kept[i]) == 0;
        if (!keep) {
            lua_pushvalue(L, -1);
            lua_pushnil(L);
            lua_rawset(L, os);
        }
    }
}

// MARK: package

/// The Lua searcher, text only, on the path the interpreter was made with: upvalue 1 is the
/// original `package.searchpath`, upvalue 2 the path. A script cannot widen where modules come
/// from (a path it chose would let `require` read any file as Lua).
static int search_lua(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushstring(L, name);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_call(L, 2, 2);
    if (lua_isnil(L, -2)) return 1;  // "no file '...'" lines
    lua_pop(L, 1);
    const char *filename = lua_tostring(L, -1);
    if (luaL_loadfilex(L, filename, "t") != LUA_OK)
        return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, filename, lua_tostring(L, -1));
    lua_insert(L, -2);  // the loader, then the file name (its second argument)
    return 2;
}

/// The last searcher: a C module is refused with a message that says so. Upvalue 1 is the
/// original `package.searchpath`, upvalue 2 the `package.cpath` the interpreter was made with.
static int refuse_c(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushstring(L, name);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_call(L, 2, 1);
    if (lua_isstring(L, -1))
        return luaL_error(L, "module '%s' is a C module ('%s'): the sandbox loads Lua modules only",
                          name, lua_tostring(L, -1));
    lua_pushliteral(L, "no C modules in the sandbox");
    return 1;
}

/// `package.path = ...` raises: where `require` looks is fixed when the interpreter is made.
static int package_newindex(lua_State *L) {
    const char *key = lua_tostring(L, 2);
    if (key && (strcmp(key, "path") == 0 || strcmp(key, "cpath") == 0))
        return luaL_error(L, "package.%s cannot be changed in the sandbox", key);
    lua_rawset(L, 1);
    return 0;
}

static void restrict_package(lua_State *L, int package) {
    int top = lua_gettop(L);
    lua_getfield(L, package, "searchpath");
    lua_getfield(L, package, "path");
    lua_getfield(L, package, "cpath");
    lua_getfield(L, package, "searchers");
    int searchpath = top + 1, path = top + 2, cpath = top + 3, searchers = top + 4;
    static const char *const removed[] = {"loadlib", "searchpath", "cpath", "path", "searchers", NULL};
    for (int i = 0; removed[i]; i++) {
        lua_pushnil(L);
        lua_setfield(L, package, removed[i]);
    }
    if (!lua_isfunction(L, searchpath) || !lua_isstring(L, path) || !lua_isstring(L, cpath) || !lua_istable(L, searchers))
        luaL_error(L, "the package library is not as luaopen_package made it");

    lua_createtable(L, 3, 0);
    lua_rawgeti(L, searchers, 1);  // package.preload
    lua_rawseti(L, -2, 1);
    lua_pushvalue(L, searchpath);
    lua_pushvalue(L, path);
    lua_pushcclosure(L, search_lua, 2);
    lua_rawseti(L, -2, 2);
    lua_pushvalue(L, searchpath);
    lua_pushvalue(L, cpath);
    lua_pushcclosure(L, refuse_c, 2);
    lua_rawseti(L, -2, 3);
    lua_setfield(L, package, "searchers");
    // package.path still reads as the path in use; assigning it raises.
    lua_createtable(L, 0, 3);
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, path);
    lua_setfield(L, -2, "path");
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, package_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, package);
    lua_settop(L, top);
}

// MARK: the libraries

void ld_sandbox_restrict(lua_State *L, const char *name) {
    int lib = lua_gettop(L);
    if (!lua_istable(L, lib)) return;
    if (strcmp(name, LUA_GNAME) == 0) restrict_base(L, lib);
    else if (strcmp(name, LUA_OSLIBNAME) == 0) restrict_os(L, lib);
    else if (strcmp(name, LUA_LOADLIBNAME) == 0) restrict_package(L, lib);
}
