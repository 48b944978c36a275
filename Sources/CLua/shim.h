// The lua5.4/ prefix keeps this building when pkg-config finds no lua5.4.pc.
#include <lua5.4/lua.h>
#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>
