#ifndef LD_SANDBOX_H
#define LD_SANDBOX_H

#include <lua5.4/lua.h>

/// The bit of `ld_openlibs`'s mask (`LuaLibraries.restricted`) that opens the libraries
/// restricted for untrusted scripts.
#define LD_LIBS_RESTRICTED ((lua_Integer)1 << 10)

/// The libraries `ld_openlibs` opens for `mask`: with LD_LIBS_RESTRICTED, never io or debug.
lua_Integer ld_sandbox_mask(lua_Integer mask);

/// Pares the standard library `name`, just opened and on top of the stack, down to what cannot
/// reach outside the interpreter (see sandbox.c). Called by `ld_openlibs` right after opening
/// each library when the mask has LD_LIBS_RESTRICTED: what is dangerous goes first, without
/// allocating, so that a memory error part-way leaves a library smaller, never whole.
void ld_sandbox_restrict(lua_State *L, const char *name);

#endif
