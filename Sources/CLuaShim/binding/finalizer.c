// See ld_finalizer.h.
#include "ld_finalizer.h"

#include <string.h>

int ld_in_finalizer(lua_State *L) {
    lua_Debug ar;
    if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "n", &ar) || ar.namewhat == NULL) return 0;
    // Lua names a finalizer call "__gc" (a metamethod event of a script is named without the
    // underscores, "index"); a finalizer the collector runs inside a C hook (the runtime's own,
    // when they allocate) is named as the hook's call.
    if (strcmp(ar.namewhat, "metamethod") == 0) return ar.name != NULL && strcmp(ar.name, "__gc") == 0;
    return strcmp(ar.namewhat, "hook") == 0;
}
