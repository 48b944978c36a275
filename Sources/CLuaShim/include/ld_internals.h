// The fields of liblua's lua_State the runtime writes or reads (internals.c).
#ifndef LD_INTERNALS_H
#define LD_INTERNALS_H

#include <lua5.4/lua.h>

/// Checks liblua's layout against Lua 5.4.4's (once per process; before any signal may call
/// ld_allow_hooks): 1 when it matches, and ld_allow_hooks may write.
int ld_internals_init(void);

/// Lets hooks fire on `L` again where Lua stopped them (a hook running, a finalizer, a message
/// handler called from a hook): for an end only. Safe in a signal handler on `L`'s thread.
void ld_allow_hooks(lua_State *L);

/// The innermost protected call of `L` (lua_pcall, lua_resume, Lua's own), where an error raised
/// on `L` now would go: NULL outside any, and whenever liblua's layout is not the one checked.
const void *ld_protected_call(lua_State *L);
/// The next error raised on `L` skips the message handler of its protected call (Lua's
/// protected calls put their caller's handler back when they catch it). Only where
/// ld_protected_call answered non-NULL.
void ld_drop_message_handler(lua_State *L);

/// Marks the innermost Lua call of `L` to trace again, as lua_sethook marks every call of the
/// stack: 1 when done, 0 when it cannot be (layout unknown, no Lua call): then call lua_sethook.
/// For a hook that is already on `L`. Safe in a signal handler on `L`'s thread.
int ld_retrap_innermost_lua_call(lua_State *L);

/// While `lock`'s interpreter is ending its code, signals its holder again, as ld_lock_terminate
/// did (switching.c): Lua clears `allowhook` anew at each finalizer it runs, and the holder's
/// innermost state may have changed since. The runtime calls it every millisecond until
/// the end is over.
typedef struct ld_lock ld_lock;
void ld_lock_poke(ld_lock *lock);

#endif
