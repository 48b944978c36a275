/*
** luadispatch.h: for C modules that block (wait for a socket, a child, a lock, a device).
**
** Under LuaDispatch, Lua code runs only while the interpreter lock is held, and a C function
** called from Lua holds it too. A C function that blocks while holding it stops every other
** block, the main queue included, until it returns; and if what it waits for is to come from
** Lua code (a reply a main-queue handler sends), it never comes. Put the blocking call between
** the two calls below, as CPython extensions do with Py_BEGIN_ALLOW_THREADS:
**
**     luadispatch_released r = luadispatch_release(L);
**     n = recv(fd, buf, sizeof buf, 0);    // no Lua API call, no Lua state touched, in here
**     luadispatch_retake(r);
**
** or LUADISPATCH_BEGIN_BLOCKING(L) ... LUADISPATCH_END_BLOCKING. Between the two, other blocks
** run Lua: do not call the Lua API (on L or on any other state), and use only memory the module
** owns (C buffers, strings of values left on L's stack, which stay put, for reading). After
** luadispatch_retake the Lua world may have changed meanwhile: check again what another block
** could have changed (a userdata closed, a global replaced). `errno` is kept across the retake.
**
** Whether it uses the pair or not, while a module holds the interpreter the runtime's switch
** signal may come (it asks the holder to give the interpreter up; its handler has SA_RESTART,
** but poll, select, nanosleep and the like fail with EINTR all the same): retry them, counting
** time against a deadline (clock_nanosleep with TIMER_ABSTIME, say) rather than sleeping again
** for what nanosleep reports left, which makes no progress if signals come faster than the call
** arms its timer.
**
** Needs only Lua's headers (compile with -I/usr/include/lua5.4, or wherever lua.h is): the
** runtime stores its two functions in the Lua registry, under LUADISPATCH_BLOCKING_KEY, when it
** sets up an interpreter: in the `luadispatch` CLI, in a Swift host, and in a stock lua5.4 once
** `require "dispatch"` has run. Anywhere else (a plain lua5.4, a collector's finalizer, a closing
** interpreter) both calls do nothing, and the module works as it did.
**
** LuaDispatch, MIT licence. docs/execution-model.md, "Blocking calls", says more.
*/
#ifndef LUADISPATCH_H
#define LUADISPATCH_H

#ifndef lua_h /* lua.h included already (as <lua5.4/lua.h>, say) */
#include "lua.h"
#endif

/* Registry key of the runtime's table of functions (a light userdata). */
#define LUADISPATCH_BLOCKING_KEY "luadispatch.blocking"
#define LUADISPATCH_BLOCKING_VERSION 1

/* What the runtime stores: `release` gives the interpreter up for the calling thread, if that
** thread holds it for `L`, and returns what `retake` needs (NULL: nothing was released);
** `retake` takes it back. */
typedef struct luadispatch_blocking {
  int version;
  void *(*release)(lua_State *L);
  void (*retake)(void *released);
} luadispatch_blocking;

/* What luadispatch_release returns, for luadispatch_retake. */
typedef struct luadispatch_released {
  const luadispatch_blocking *api;
  void *released;
} luadispatch_released;

/* Gives the interpreter up until luadispatch_retake. Call it with L, the state the C function
** was called with, right before the blocking call. */
static inline luadispatch_released luadispatch_release(lua_State *L) {
  luadispatch_released r = {NULL, NULL};
  if (lua_getfield(L, LUA_REGISTRYINDEX, LUADISPATCH_BLOCKING_KEY) == LUA_TLIGHTUSERDATA) {
    const luadispatch_blocking *api = (const luadispatch_blocking *)lua_touserdata(L, -1);
    if (api != NULL && api->version >= 1) r.api = api;
  }
  lua_pop(L, 1);
  if (r.api != NULL) r.released = r.api->release(L);
  return r;
}

/* Takes the interpreter back (waiting for it if another block holds it). */
static inline void luadispatch_retake(luadispatch_released r) {
  if (r.released != NULL) r.api->retake(r.released);
}

#define LUADISPATCH_BEGIN_BLOCKING(L) \
  { luadispatch_released luadispatch_released_ = luadispatch_release(L);
#define LUADISPATCH_END_BLOCKING \
    luadispatch_retake(luadispatch_released_); }

#endif
