// The interpreter's control: which Lua states run on each thread (the stack every call into Lua
// pushes), the interpreter lock (control/lock.c), switching between blocks (control/switching.c),
// Ctrl-C (control/interrupt.c). What running code does when asked to switch, end or stop for
// Ctrl-C is decided in one place, control/requests.c, whose header lists the requests.
#ifndef LD_CONTROL_H
#define LD_CONTROL_H

#include <lua5.4/lua.h>
#include <stdint.h>
#include "ld_alloc.h"
#include "ld_lua.h"

// The Lua states running on the calling thread, innermost last (switching.c). Inline: every
// block pushes and pops one.
#define LD_MAX_RUNNING 256
typedef struct {
    lua_State *L;
    lua_Hook saved;  // the script's hook while the switch hook stands in for it
    int mask, count;
    int hooked;
    int enforced;    // ld_alloc_enforced before this state started running here
} ld_running_entry;
/// One record per thread, so that a push or a pop computes the thread's address once.
typedef struct {
    int ready;                 // the switch signal is unblocked on this thread
    int depth;
    /// Set while the stack changes: a switch signal arriving then only sets `pending`.
    volatile int busy, pending;
    ld_running_entry stack[LD_MAX_RUNNING];
} ld_running_thread;
extern __thread ld_running_thread ld_running;
/// How many stop requests (an end, ld_lock_terminate; Ctrl-C) are set in the process's
/// interpreters (requests.c): while any is, a state that starts running is hooked at once.
extern volatile int ld_stop_requests;
static inline int ld_stop_request_count(void) { return ld_stop_requests; }
void ld_running_first(void);
void ld_running_service(void);
void ld_running_unhook(ld_running_entry *e);
/// The entries past LD_MAX_RUNNING, kept by switching.c (code may nest deeper than that).
void ld_running_deep_push(lua_State *L, int depth);
void ld_running_deep_pop(int depth);

/// `L` starts running on the calling thread (every block, chunk and handler pushes its pooled
/// thread, every resume its coroutine) / the innermost state stops running here.
/// How many Lua states run on this thread now (0: the host calls in from outside Lua).
static inline int ld_running_count(void) { return ld_running.depth; }

static inline __attribute__((always_inline)) void ld_running_push(lua_State *L) {
    ld_running_thread *r = &ld_running;
    if (!r->ready) ld_running_first();
    r->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int d = r->depth;
    int *enforced = &ld_alloc_enforced;
    if (d < LD_MAX_RUNNING) {
        r->stack[d].L = L;
        r->stack[d].hooked = 0;
        r->stack[d].enforced = *enforced;
    } else {
        ld_running_deep_push(L, d);
    }
    *enforced = 1;  // Lua code runs: the memory limit applies
    r->depth = d + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    r->busy = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (r->pending || ld_stop_requests) ld_running_service();
}

static inline __attribute__((always_inline)) void ld_running_pop(void) {
    ld_running_thread *r = &ld_running;
    r->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int d = r->depth - 1;
    if (d >= 0) {
        r->depth = d;
        if (d < LD_MAX_RUNNING) {
            ld_alloc_enforced = r->stack[d].enforced;
            if (r->stack[d].hooked) ld_running_unhook(&r->stack[d]);
        } else {
            ld_running_deep_pop(d);
        }
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    r->busy = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (r->pending) ld_running_service();
}

/// lua_pcall, with `L` on the calling thread's stack of running states while it runs (see
/// switching.c): every call into Lua that the runtime makes goes through here or a resume.
/// Always inline, in Swift callers too: a sync round trip makes two.
static inline __attribute__((always_inline)) int ld_pcall(lua_State *L, int nargs, int nresults, int msgh) {
    ld_running_push(L);
    int status = lua_pcall(L, nargs, nresults, msgh);
    ld_running_pop();
    return status;
}
/// lua_resume, likewise.
static inline __attribute__((always_inline)) int ld_resume(lua_State *L, lua_State *from, int nargs, int *nresults) {
    ld_running_push(L);
    int status = lua_resume(L, from, nargs, nresults);
    ld_running_pop();
    return status;
}

/// The interpreter lock (lock.c): a futex word plus a per-thread "held" pointer.
typedef struct ld_lock ld_lock;
ld_lock *ld_lock_new(void);
void ld_lock_free(ld_lock *lock);
void ld_lock_acquire(ld_lock *lock);
void ld_lock_release(ld_lock *lock);
/// Takes the lock if it is free and no waiter is owed it (lock.c); 1 if taken, 0 otherwise.
int ld_lock_try(ld_lock *lock);
/// Takes the lock unless `ms` milliseconds pass first; 1 when taken.
int ld_lock_try_acquire(ld_lock *lock, int ms);
/// How many waiters are owed the lock now (lock.c): none other takes it while one is. Always 0
/// for the pthread lock of ThreadSanitizer builds, which owes nobody.
unsigned ld_lock_owed(ld_lock *lock);/// Whether the calling thread holds some interpreter's lock (and which one).
ld_lock *ld_lock_held(void);

// MARK: switching between blocks (switching.c)

/// What the switch hook calls once it has given the interpreter up and taken it back
/// (requests.c): the runtime's bookkeeping. `started`: when it began to give it up
/// (CLOCK_MONOTONIC nanoseconds, | 1). Runs on the holder's thread, in a hook of `L`, lock held.
typedef void (*ld_switched_fn)(lua_State *L, uint64_t started);
/// Installs the switch signal's handler (once per process) and the runtime's function.
void ld_switching_init(ld_switched_fn fn);
/// The signal a waiter sends the lock's holder (a real-time signal the runtime reserves).
int ld_switch_signal(void);
/// The switch interval of `lock`'s interpreter, in nanoseconds (0: cooperative).
void ld_lock_set_interval(ld_lock *lock, int64_t ns);
int64_t ld_lock_interval(ld_lock *lock);
/// Releases the lock until another thread has taken it (or none waits), then takes it again.
/// Clears the switch request.
void ld_lock_yield(ld_lock *lock);
/// Ends every Lua code of `lock`'s interpreter: the code running now (hooked through the switch
/// signal) and any code that starts running raises "time limit exceeded" (`time_limit`) or
/// "interrupted", again at each instruction until it has unwound.
void ld_lock_terminate(ld_lock *lock, int time_limit);
void ld_lock_end_termination(ld_lock *lock);
/// The word of `lock`'s requests: whether the interpreter is ending its code is
/// ld_terminate_requested of it. The runtime keeps the word, so that the check every wait makes
/// is a load rather than two calls.
const uint32_t *ld_lock_requests(ld_lock *lock);
/// Switch requests waiters have sent `lock`'s holders so far.
uint32_t ld_lock_switch_requests(ld_lock *lock);
static inline int ld_terminate_requested(const uint32_t *requests) {
    return (__atomic_load_n(requests, __ATOMIC_ACQUIRE) & 2 /* LD_REQUEST_TERMINATE */) != 0;
}
/// Hooks the calling thread's innermost state now if its lock asks for a switch or an end
/// (the thread holds the lock).
void ld_running_hook_now(void);
/// The innermost state running on the calling thread, or NULL.
lua_State *ld_running_innermost(void);
/// The hook the script (or lua.c's Ctrl-C, under lua5.4) has on `L`, looking through a switch
/// hook standing in for it.
lua_Hook ld_script_hook(lua_State *L);
/// The mask of that hook. (Both from the thread `L` runs on: a switch hook is that thread's.)
int ld_script_hookmask(lua_State *L);
/// Replaces coroutine.resume, wrap and close (lcorolib's, keeping the stack of running states)
/// and debug.sethook and gethook (which see the script's hook, never the switch hook) in the
/// libraries `L` has loaded; then the standard library's blocking calls (ld_blocking_libs).
void ld_switching_libs(lua_State *L);

// MARK: Ctrl-C (interrupt.c)

/// Installs lua.c's SIGINT handler for code running on `L` (the main Lua thread, whose
/// interpreter's lock is `lock`): the handler sets LD_REQUEST_INTERRUPT in the lock's word and
/// hooks `L`, whose next instruction raises "interrupted!" (a second SIGINT ends the process).
/// It also writes to the eventfd set with `ld_interrupt_set_fd`, if any, so that a wait parked
/// without running Lua can end.
void ld_interrupt_arm(lua_State *L, ld_lock *lock);
/// Restores SIGINT's default action.
void ld_interrupt_disarm(void);
void ld_interrupt_set_fd(int fd);
/// A new eventfd (close-on-exec, non-blocking) for `ld_interrupt_set_fd`.
int ld_interrupt_eventfd(void);
/// Whether Ctrl-C is pending for `lock`'s interpreter (nobody has raised it yet).
int ld_interrupt_pending(ld_lock *lock);
/// Clears a pending Ctrl-C; 1 when there was one (the caller raises "interrupted!").
int ld_interrupt_clear(ld_lock *lock);
/// 1 when a SIGINT arrived that neither the hook nor a wait has handled yet, and marks it
/// handled: the eventfd's reader acts only on such a signal, so it never reports a Ctrl-C twice.
int ld_interrupt_take(ld_lock *lock);
/// The runtime of `lock` closes: its requests are dropped, and Ctrl-C no longer targets it.
void ld_interrupt_forget(ld_lock *lock);

/// A full collection, in a protected call (finalizers run Lua). Lock held.
int ld_gc_collect(lua_State *L);
/// The same, while the interpreter is ending its code: for LD_GC_COLLECT_ALL_NS the finalizers
/// pending run (each ended, as the end's own ones are) rather than leave the collection by
/// raising the end (control/finalizers.c). For an end's clean-up.
#define LD_GC_COLLECT_ALL_NS 1000000000u
int ld_gc_collect_all(lua_State *L);

/// Raises the end's own error ("time limit exceeded", "interrupted", Ctrl-C's "interrupted!")
/// in `L` if the interpreter running it is ending its code; returns otherwise (control/steps.c).
/// The carried libraries' loops call it while ld_stop_requests is nonzero (CLuaStdlib/steps.h).
void ld_stdlib_check_end(lua_State *L);

#endif
