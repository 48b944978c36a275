// Blocking calls without the interpreter (docs/execution-model.md, "Blocking calls"), as
// CPython's I/O releases its lock: the pair C modules call around their own blocking calls
// (include/luadispatch.h), the readiness wait the standard library's replacements make before a
// call that would block (stdlib/), and their installation.
#define _GNU_SOURCE
#include "ld_control.h"
#include "ld_threads.h"
#include "ld_blocking.h"
#include "../../../include/luadispatch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

// MARK: the pair

// Set by every runtime as it starts (the same functions), read by any thread.
static _Atomic(ld_release_fn) release_fn;
static _Atomic(ld_retake_fn) retake_fn;

void ld_blocking_init(ld_release_fn release, ld_retake_fn retake) {
    atomic_store_explicit(&retake_fn, retake, memory_order_relaxed);
    atomic_store_explicit(&release_fn, release, memory_order_release);
}

void *ld_blocking_release(lua_State *L) {
    ld_release_fn release = atomic_load_explicit(&release_fn, memory_order_acquire);
    // lua_gc answers -1 inside a finalizer (Lua 5.4's GCSTPGC): the collector step that runs it
    // may have been entered from any allocation, the runtime's own bookkeeping included, which
    // must not see other blocks run meanwhile.
    if (release == NULL || ld_lock_held() == NULL || lua_gc(L, LUA_GCISRUNNING) < 0) return NULL;
    int saved = errno;
    void *released = release(L);
    errno = saved;
    return released;
}

void ld_blocking_retake(void *released) {
    if (released == NULL) return;
    int saved = errno;
    atomic_load_explicit(&retake_fn, memory_order_relaxed)(released);
    errno = saved;
}

static const luadispatch_blocking api = {LUADISPATCH_BLOCKING_VERSION, ld_blocking_release, ld_blocking_retake};

// MARK: waiting for a descriptor

static int poll_once(struct pollfd *p, int timeout) {
    int r;
    do {
        p->revents = 0;
        r = poll(p, 1, timeout);
    } while (r < 0 && errno == EINTR);  // the switch signal, SIGINT: wait on
    return r;
}

/// The hook of the interpreter's main Lua thread, where Ctrl-C's handler (lua.c's, the CLI's)
/// puts its own; NULL when not on the main thread.
static lua_State *interruptible(lua_State *L) {
    if (!ld_is_main_thread()) return NULL;
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    lua_State *main = lua_tothread(L, -1);
    lua_pop(L, 1);
    return main;
}

int ld_fd_wait(lua_State *L, int fd, short events) {
    if (fd < 0) return 0;
    int saved = errno;
    struct pollfd p = {.fd = fd, .events = events};
    int result = 0;
    // Ready (or an error the call reports, POLLHUP, POLLNVAL): the call goes ahead at once.
    if (poll_once(&p, 0) == 0) {
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0 && !(flags & O_NONBLOCK)) {
            lua_State *main = interruptible(L);
            lua_Hook before = main != NULL ? lua_gethook(main) : NULL;
            void *released = ld_blocking_release(L);
            if (released != NULL) {
                int r;
                // A signal ends the wait only where it would have ended the read(2) or write(2):
                // Ctrl-C (lua.c's handler has no SA_RESTART) hooks the main Lua thread, and the
                // hook raises "interrupted!" once the call has failed with EINTR. The switch
                // signal, a signal source's forwarding (SA_RESTART): wait on.
                do {
                    p.revents = 0;
                    r = poll(&p, 1, -1);
                } while (r < 0 && errno == EINTR && (main == NULL || lua_gethook(main) == before));
                result = r > 0 ? 1 : (r < 0 && errno == EINTR) ? -1 : 0;
                ld_blocking_retake(released);
            }
        }
    }
    errno = result < 0 ? EINTR : saved;
    return result;
}

// MARK: installation

int ld_stdlib_io_read(lua_State *L);
int ld_stdlib_io_lines(lua_State *L);
int ld_stdlib_io_write(lua_State *L);
int ld_stdlib_io_popen(lua_State *L);
int ld_stdlib_f_read(lua_State *L);
int ld_stdlib_f_lines(lua_State *L);
int ld_stdlib_f_write(lua_State *L);
int ld_stdlib_os_execute(lua_State *L);

/// A function of a library table and its replacement; `original` is the function it replaces,
/// the same in every state of the process (the first state's is recorded).
typedef struct {
    const char *name;
    lua_CFunction replacement;
    lua_CFunction original;
} replacement;

static replacement io_functions[] = {
    {"read", ld_stdlib_io_read, NULL},
    {"lines", ld_stdlib_io_lines, NULL},
    {"write", ld_stdlib_io_write, NULL},
    {"popen", ld_stdlib_io_popen, NULL},
    {NULL, NULL, NULL},
};
static replacement file_methods[] = {
    {"read", ld_stdlib_f_read, NULL},
    {"lines", ld_stdlib_f_lines, NULL},
    {"write", ld_stdlib_f_write, NULL},
    {NULL, NULL, NULL},
};
static replacement os_functions[] = {
    {"execute", ld_stdlib_os_execute, NULL},
    {NULL, NULL, NULL},
};

static pthread_mutex_t originals_lock = PTHREAD_MUTEX_INITIALIZER;

/// Replaces the functions of the table on top that are the standard library's; a function the
/// runtime does not know (a script's, another module's) is left alone.
static void replace_all(lua_State *L, replacement *r) {
    for (; r->name != NULL; r++) {
        lua_getfield(L, -1, r->name);
        lua_CFunction f = lua_tocfunction(L, -1);
        lua_pop(L, 1);
        if (f == NULL || f == r->replacement) continue;
        pthread_mutex_lock(&originals_lock);
        if (r->original == NULL) r->original = f;
        int known = r->original == f;
        pthread_mutex_unlock(&originals_lock);
        if (!known) continue;
        lua_pushcfunction(L, r->replacement);
        lua_setfield(L, -2, r->name);
    }
}

void ld_blocking_libs(lua_State *L) {
    lua_pushlightuserdata(L, (void *)&api);
    lua_setfield(L, LUA_REGISTRYINDEX, LUADISPATCH_BLOCKING_KEY);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, LUA_IOLIBNAME) == LUA_TTABLE) {
        replace_all(L, io_functions);
        // The methods of every file handle (files opened before this call too).
        if (luaL_getmetatable(L, LUA_FILEHANDLE) == LUA_TTABLE) {
            if (lua_getfield(L, -1, "__index") == LUA_TTABLE) replace_all(L, file_methods);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, -1, LUA_OSLIBNAME) == LUA_TTABLE) replace_all(L, os_functions);
    lua_pop(L, 2);
}
