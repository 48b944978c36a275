#ifndef LD_FINALIZER_H
#define LD_FINALIZER_H

#include <lua5.4/lua.h>

/// Whether the C function running on `L` was called by the collector as a finalizer (`__gc`),
/// rather than by a script (`debug.getmetatable(q).__gc(q)`). An object's `__gc` releases its
/// Swift object only then: released early by a script, the object could still be in use by a
/// binding that waits with the interpreter released.
int ld_in_finalizer(lua_State *L);

#endif
