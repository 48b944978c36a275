// An end leaves a collection. Lua 5.4 runs each finalizer (`__gc`) in a protected call of its
// own and turns its error into a warning ("error in __gc (...)", lgc.c's GCTM through
// luaE_warnerror), then goes on with the next finalizer, all inside the one collection step or
// `collectgarbage` call that ran them. An end (a time limit, `interrupt()`) ends each finalizer
// (requests.c), but could not leave that call: finalizers that made more finalizers kept one
// `collectgarbage` going for ever, and a hundred looping ones took a signal each.
//
// While the interpreter is ending its code, the warning of a finalizer ended by the end raises
// the end's error again, on the state that ran the collection, as Lua 5.3 propagated errors in
// `__gc`. The states' warning function (alloc.c) calls `end_warning` with the first piece of
// each warning, before it writes anything. Lua 5.4.4's GCTM calls luaE_warnerror only once it
// has undone all it did for the finalizer (`gcstp`, `allowhook`, CIST_FIN; the error object
// on top of the stack, nothing else pushed); `gcstopem` is already 0 while finalizers run
// (singlestep's GCScallfin), and the collector keeps its state (GCScallfin, the objects still
// to finalize in `tobefnz`) for its next step, as after any step. Every point where a step
// runs finalizers (luaC_checkGC, lua_gc) is one where Lua may raise a memory error too.
//
// Raised only when all of these hold, and otherwise the warning is Lua's as before:
// - an end is asked of the interpreter this thread holds;
// - Lua code runs on this thread (`ld_alloc_enforced`: set by every call into Lua,
//   ld_running_push, and cleared around every Swift frame, bindings and the runtime's
//   callbacks), so no Swift frame lies between here and the innermost protected call: the
//   argument that lets a refused allocation raise Lua's memory error there;
// - the state that ran the collection is the innermost running state of this thread, of the
//   same interpreter as the warning's (the state itself is not given to a warning function):
//   its top value is the warned error, a string that is the end's message (as raised, or
//   re-raised with positions before it);
// - that state is in a protected call (internals.c), so the error has somewhere to go.
// A collection run by Swift code (a binding's allocation, closing the state) keeps Lua's
// warnings: those finalizers are still ended one by one. So does the one an end's clean-up
// makes (ld_gc_collect_all), for a second: the finalizers a raise left pending run there, each
// ended (a looping one at the next signal, every millisecond), rather than in the next script
// or in lua_close, with no end to stop one that never returns. Past that second the end leaves
// it too: finalizers that make more (each collection twice as many) would keep it going.
#include "ld_control.h"
#include "ld_internals.h"
#include "switching.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

/// Whether `e` is the end's message `m`, raised with its position ("chunk:1: m") or without.
static int is_end_message(const char *e, size_t len, const char *m) {
    size_t n = strlen(m);
    if (len < n || memcmp(e + len - n, m, n) != 0) return 0;
    return len == n || (len >= n + 2 && memcmp(e + len - n - 2, ": ", 2) == 0);
}

static int same_interpreter(lua_State *a, lua_State *b) {
    void *ua = NULL, *ub = NULL;
    return lua_getallocf(a, &ua) == lua_getallocf(b, &ub) && ua == ub;
}

// Inside ld_gc_collect_all: until when the warnings stay (CLOCK_MONOTONIC nanoseconds; 0: none).
static __thread uint64_t keep_until;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void end_warning(lua_State *main, const char *message, int tocont) {
    if (!tocont || !ld_alloc_enforced || strcmp(message, "error in ") != 0) return;
    if (keep_until != 0 && now_ns() < keep_until) return;
    ld_lock *lock = ld_lock_held();
    if (lock == NULL) return;
    ld_lock_shared *s = ld_lock_state(lock);
    if (!(atomic_load_explicit(&s->requests, memory_order_acquire) & LD_REQUEST_TERMINATE)) return;
    lua_State *L = ld_running_innermost();
    if (L == NULL || !same_interpreter(L, main) || lua_type(L, -1) != LUA_TSTRING) return;
    size_t len = 0;
    const char *error = lua_tolstring(L, -1, &len);  // a string: nothing converted, no allocation
    const char *end = atomic_load_explicit(&s->termination, memory_order_relaxed);
    if (!is_end_message(error, len, end != NULL ? end : "interrupted") || ld_protected_call(L) == NULL) return;
    // Straight to the protected call, as Lua 5.3 threw a finalizer's error: its message handler
    // (a traceback) would allocate, and the collection steps that runs would go on with the
    // finalizers still pending (all of them: the debt they ran up is large), each ended only by
    // a signal of its own.
    ld_drop_message_handler(L);
    lua_error(L);
}

void ld_finalizer_ends_init(void) { ld_warning_first = end_warning; }

int ld_gc_collect_all(lua_State *L) {
    uint64_t outer = keep_until;
    keep_until = now_ns() + LD_GC_COLLECT_ALL_NS;
    int status = ld_gc_collect(L);
    keep_until = outer;
    return status;
}
