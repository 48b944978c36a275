// Blocking calls without the interpreter (blocking.c): the runtime's side of the pair C modules
// call around their own blocking calls (include/luadispatch.h at the package root), and the
// waits of the standard library's replacements (stdlib/).
#ifndef LD_BLOCKING_H
#define LD_BLOCKING_H

#include <lua5.4/lua.h>

/// Gives the interpreter up for a blocking call, if the calling thread holds it for `L`; returns
/// what `ld_retake_fn` takes back, or NULL when nothing was released. Never touches Lua.
typedef void *(*ld_release_fn)(lua_State *L);
/// Takes the interpreter back after a blocking call (and drains what was deferred meanwhile).
typedef void (*ld_retake_fn)(void *released);
/// The runtime's release and retake (once per process; the Swift side of `Runtime.unlocked`).
void ld_blocking_init(ld_release_fn release, ld_retake_fn retake);

/// The pair itself, as include/luadispatch.h reaches it: a no-op without a runtime holding the
/// interpreter on this thread, and in a finalizer (where the collector is in the middle of a step
/// that the code which allocated waits on). `errno` is kept.
void *ld_blocking_release(lua_State *L);
void ld_blocking_retake(void *released);

/// Before a call on `fd` that would block: if `fd` is not ready for `events` (POLLIN, POLLOUT),
/// waits until it is without the interpreter, then takes it back and returns 1. Returns 0 at
/// once when there is nothing to wait for: ready, an error the call itself reports, a
/// non-blocking descriptor (the call fails at once, as under `lua`), nothing to release.
/// `errno` is kept. Returns -1, errno EINTR, when Ctrl-C ended the wait on the main thread
/// (where it would have ended the call): the caller fails as the call would have.
int ld_fd_wait(lua_State *L, int fd, short events);

/// Stores the pair in `L`'s registry (LUADISPATCH_BLOCKING_KEY) and replaces the standard
/// library's blocking functions in the libraries `L` has loaded (stdlib/): io.read, io.lines,
/// io.write, io.popen, the read, lines and write methods of files, os.execute.
void ld_blocking_libs(lua_State *L);

#endif
