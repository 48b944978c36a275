// The string, table and utf8 libraries every interpreter the runtime makes opens in place of
// liblua's: Lua 5.4.4's lstrlib.c, ltablib.c and lutf8lib.c (Sources/CLuaStdlib), whose loops that can run
// long in C end with the interpreter's code (a time limit, `interrupt()`, Ctrl-C) as Lua code
// does. A state the runtime is attached to (the module loaded into `lua5.4`) keeps its own.
#ifndef LD_STDLIB_H
#define LD_STDLIB_H

#include <lua5.4/lua.h>

/// luaopen_string, luaopen_table and luaopen_utf8 of the carried libraries.
int ld_luaopen_string(lua_State *L);
int ld_luaopen_table(lua_State *L);
int ld_luaopen_utf8(lua_State *L);

/// Opens the standard libraries whose bits are set in the integer argument 1 (bit i: the i-th
/// of base, package, coroutine, table, io, os, string, math, utf8, debug; bit 10 restricts them,
/// see ld_sandbox.h). Call with lua_pcall.
int ld_openlibs(lua_State *L);

#endif
