// Switching between blocks, as CPython's switch interval does (docs/execution-model.md).
//
// A thread waiting for the interpreter lock that sees one holder keep it for the switch interval
// sets LD_REQUEST_SWITCH and sends the holder's thread the switch signal (lock.c, switching.h).
// The handler, running on the holder's thread between two of its instructions, hooks the Lua
// state running there with lua_sethook, exactly as lua.c's Ctrl-C handler does (ldebug.c: "this
// function can be called during a signal"); hooking from another thread would race with the
// holder's own changes to that state. At its next instruction the hook calls ld_requests_act
// (requests.c), which decides: here, give the lock up until a waiter has had it (ld_lock_yield),
// then go on. An end (LD_REQUEST_TERMINATE) and Ctrl-C (LD_REQUEST_INTERRUPT) use the same hook.
//
// To know which state runs, each thread keeps the stack of Lua states it is running: a pooled
// thread per block, chunk or handler (pushed by the runtime), and above it the coroutines it
// resumes (pushed by the runtime's coroutine.resume, wrap and close, and by tasks). The hook goes
// on the innermost one. A script's own hook on that state (a debugger's, a profiler's, Ctrl-C's)
// is kept in its stack entry while the switch hook stands in for it, given back when the hook
// fires or the state stops running here, and debug.gethook and debug.sethook see and change the
// script's hook, never the switch hook.
//
// The handler may interrupt this thread while it changes its stack (or hooks): those sections set
// `busy`, and a signal arriving then only sets `pending`, acted on at the end of the section.
#define _GNU_SOURCE
#include "ld_control.h"
#include "ld_platform.h"
#include "switching.h"
#include "ld_blocking.h"
#include "ld_internals.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

__thread int32_t ld_tid_cached;

int32_t ld_tid_first(void) { return ld_tid_cached = (int32_t)ld_gettid(); }

int ld_switch_signal(void) { return SIGRTMAX - 3; }

// MARK: the states running on this thread

#define MAX_RUNNING LD_MAX_RUNNING
typedef ld_running_entry running;

__thread ld_running_thread ld_running;
#define stack ld_running.stack
#define depth ld_running.depth
#define busy ld_running.busy
#define pending ld_running.pending

static void switch_hook(lua_State *L, lua_Debug *ar);

// Past MAX_RUNNING (nested blocking calls and coroutines), the entries go on in an array of the
// thread's own, grown as needed (in a busy section: the handler never sees it moved). An entry
// it could not grow for is unknown, as every one past MAX_RUNNING was before: the handler then
// hooks nothing.
static __thread running *deep;
static __thread int deep_capacity;
static pthread_key_t deep_key;  // frees a thread's array when the thread exits
static pthread_once_t deep_key_once = PTHREAD_ONCE_INIT;
static void make_deep_key(void) { pthread_key_create(&deep_key, free); }

/// The entry at `i` (0: outermost), or NULL if unknown.
static running *at(int i) {
    if (i < MAX_RUNNING) return &stack[i];
    return i - MAX_RUNNING < deep_capacity ? &deep[i - MAX_RUNNING] : NULL;
}

void ld_running_deep_push(lua_State *L, int d) {
    int i = d - MAX_RUNNING;
    if (i >= deep_capacity) {
        int capacity = deep_capacity > 0 ? deep_capacity * 2 : MAX_RUNNING;
        running *grown = realloc(deep, (size_t)capacity * sizeof *grown);
        if (grown == NULL) return;
        pthread_once(&deep_key_once, make_deep_key);
        pthread_setspecific(deep_key, grown);
        deep = grown;
        deep_capacity = capacity;
    }
    deep[i].L = L;
    deep[i].hooked = 0;
    deep[i].enforced = ld_alloc_enforced;
}

void ld_running_deep_pop(int d) {
    running *e = at(d);
    if (e == NULL) return;
    ld_alloc_enforced = e->enforced;
    if (e->hooked) ld_running_unhook(e);
}

static inline void enter_busy(void) {
    busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
}

static void hook_innermost(void);

static inline void leave_busy(void) {
    atomic_signal_fence(memory_order_seq_cst);
    busy = 0;
    atomic_signal_fence(memory_order_seq_cst);
    if (pending) hook_innermost();
}

/// The entry of `L`, innermost first; NULL if `L` does not run on this thread.
static running *entry_of(lua_State *L) {
    for (int i = depth - 1; i >= 0; i--) {
        running *e = at(i);
        if (e != NULL && e->L == L) return e;
    }
    return NULL;
}

/// Gives `e`'s state its script hook back, if the switch hook still stands in for it.
static void unhook(running *e) {
    if (e->hooked && lua_gethook(e->L) == switch_hook) lua_sethook(e->L, e->saved, e->mask, e->count);
    e->hooked = 0;
}

/// Puts the switch hook on the innermost state, if this thread holds a lock asked to switch.
/// In the signal handler, or at the end of a busy section.
static void hook_state(void) {
    ld_lock *lock = ld_lock_held();
    if (lock == NULL || depth == 0 || at(depth - 1) == NULL) return;
    uint32_t requests = atomic_load_explicit(&ld_lock_state(lock)->requests, memory_order_relaxed);
    if (!(requests & (LD_REQUEST_SWITCH | LD_REQUEST_TERMINATE))) return;
    running *e = at(depth - 1);
    // An end reaches code Lua runs with hooks off too: a finalizer, a message handler (internals.c).
    if (requests & LD_REQUEST_TERMINATE) ld_allow_hooks(e->L);
    lua_Hook current = lua_gethook(e->L);
    if (current == switch_hook) {
        // Set again, which marks the running calls to trace again: the handler may have set
        // it while Lua, in luaG_traceexec, had read a hook mask of 0 (the hook had just taken
        // itself off) and was about to clear the running call's trap. The hook then stayed
        // on, never called: a loop with no calls ran on through every later signal, which
        // found the hook on and returned (a time limit's end seen to hang for minutes).
        // Only that call's trap: lua_sethook walks every call of the stack, and an end's
        // signal every millisecond on a stack 240,000 calls deep took all the time of the
        // collection it interrupted, which never finished.
        if (!ld_retrap_innermost_lua_call(e->L))
            lua_sethook(e->L, switch_hook, lua_gethookmask(e->L), lua_gethookcount(e->L));
        return;
    }
    // Whatever hook is there now is the script's (it may have changed since an earlier switch).
    e->saved = current;
    e->mask = current ? lua_gethookmask(e->L) : 0;
    e->count = lua_gethookcount(e->L);
    e->hooked = 1;
    lua_sethook(e->L, switch_hook, e->mask | LUA_MASKCOUNT, 1);
}

/// hook_state as a busy section of its own. Called outside the handler, it could be interrupted
/// between reading the script's hook and setting the switch hook; the handler would then hook
/// first, and this call would take the switch hook's mask and count of 1 for the script's, which
/// the script got back at the next unhook (debug.gethook said "l", 1 for a hook set as "l", 0).
static void hook_innermost(void) {
    int outer = busy;
    do {
        busy = 1;
        atomic_signal_fence(memory_order_seq_cst);
        pending = 0;
        atomic_signal_fence(memory_order_seq_cst);
        hook_state();
        atomic_signal_fence(memory_order_seq_cst);
        busy = outer;
        atomic_signal_fence(memory_order_seq_cst);
        // A signal meanwhile set `pending` only: served again, outside any section.
    } while (!outer && pending);
}

static void on_signal(int sig) {
    (void)sig;
    int saved_errno = errno;
    if (busy) pending = 1;
    else hook_innermost();
    errno = saved_errno;
}

void ld_running_first(void) {
    // libdispatch's worker threads block every asynchronous signal; this one must reach them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, ld_switch_signal());
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    ld_running.ready = 1;
}

void ld_running_service(void) { hook_innermost(); }

void ld_running_unhook(ld_running_entry *e) { unhook(e); }

lua_State *ld_running_innermost(void) {
    running *e = depth > 0 ? at(depth - 1) : NULL;
    return e != NULL ? e->L : NULL;
}

// MARK: the hook

static void switch_hook(lua_State *L, lua_Debug *ar) {
    ld_requests_act(L, LD_ACT_HOOK_ENTRY);
    enter_busy();
    running *e = entry_of(L);
    lua_Hook saved = NULL;
    int mask = 0;
    if (e != NULL && e->hooked) {
        saved = e->saved;
        mask = e->mask;
        unhook(e);
    } else {
        lua_sethook(L, NULL, 0, 0);  // not ours to stand in for any more
    }
    leave_busy();
    // The event goes on to the script's hook if it asked for it (its count is its own).
    int event = ar->event == LUA_HOOKTAILCALL ? LUA_HOOKCALL : ar->event;
    if (saved != NULL && event != LUA_HOOKCOUNT && (mask & (1 << event))) saved(L, ar);
    ld_requests_act(L, LD_ACT_HOOK);
}

void ld_hook_next_instruction(lua_State *L) {
    lua_sethook(L, switch_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

lua_Hook ld_script_hook(lua_State *L) {
    lua_Hook h = lua_gethook(L);
    if (h != switch_hook) return h;
    running *e = entry_of(L);
    return e != NULL && e->hooked ? e->saved : NULL;
}

int ld_script_hookmask(lua_State *L) {
    if (lua_gethook(L) != switch_hook) return lua_gethookmask(L);
    running *e = entry_of(L);
    return e != NULL && e->hooked ? e->mask : 0;
}

// MARK: the lock's side

void ld_running_hook_now(void) { hook_innermost(); }

void ld_lock_set_interval(ld_lock *lock, int64_t ns) {
    atomic_store_explicit(&ld_lock_state(lock)->interval, ns > 0 ? ns : 0, memory_order_relaxed);
}

int64_t ld_lock_interval(ld_lock *lock) {
    return atomic_load_explicit(&ld_lock_state(lock)->interval, memory_order_relaxed);
}

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void install(void) {
    ld_internals_init();  // before the handler may use it
    ld_finalizer_ends_init();
    struct sigaction sa;
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigfillset(&sa.sa_mask);
    sigaction(ld_switch_signal(), &sa, NULL);
}

void ld_switching_init(ld_switched_fn fn) {
    ld_requests_init(fn);
    pthread_once(&install_once, install);
}

// MARK: the script's view of its hooks

// debug.sethook and debug.gethook, run with the switch hook out of the way: the script sets and
// reads its own hook, and a switch still asked for is hooked again afterwards (`pending`).
static lua_CFunction original_sethook, original_gethook;

static int with_script_hook(lua_State *L, lua_CFunction original, int may_raise) {
    lua_State *target = lua_type(L, 1) == LUA_TTHREAD ? lua_tothread(L, 1) : L;
    enter_busy();
    running *e = entry_of(target);
    if (e != NULL && e->hooked) {
        unhook(e);
        pending = 1;
    }
    // A call that may raise (a bad argument) must not leave `busy` set: it runs outside the
    // section, where a switch signal could (rarely) hook the state again meanwhile.
    if (may_raise) {
        atomic_signal_fence(memory_order_seq_cst);
        busy = 0;
    }
    int n = original(L);
    leave_busy();
    return n;
}

/// Whether debug.sethook's arguments would make it raise (ldblib.c 5.4.4's checks).
static int sethook_may_raise(lua_State *L) {
    int arg = lua_type(L, 1) == LUA_TTHREAD ? 1 : 0;
    if (lua_type(L, arg + 1) <= 0) return 0;
    int t = lua_type(L, arg + 2);
    if (lua_type(L, arg + 1) != LUA_TFUNCTION || (t != LUA_TSTRING && t != LUA_TNUMBER)) return 1;
    if (lua_type(L, arg + 3) <= 0) return 0;
    int isint = 0;
    lua_tointegerx(L, arg + 3, &isint);
    return !isint;
}

static int sethook(lua_State *L) { return with_script_hook(L, original_sethook, sethook_may_raise(L)); }
static int gethook(lua_State *L) { return with_script_hook(L, original_gethook, 0); }

/// Replaces a C function field of the table on top: `name` gets `replacement`, and `*original`
/// the function it replaces (once per process: every state's library has the same functions).
static void replace(lua_State *L, const char *name, lua_CFunction replacement, lua_CFunction *original) {
    lua_getfield(L, -1, name);
    lua_CFunction f = lua_tocfunction(L, -1);
    lua_pop(L, 1);
    if (f == NULL || f == replacement) return;
    if (*original == NULL) *original = f;
    else if (*original != f) return;  // a function the runtime does not know: left alone
    lua_pushcfunction(L, replacement);
    lua_setfield(L, -2, name);
}

int ld_coroutine_resume(lua_State *L);
int ld_coroutine_wrap(lua_State *L);
int ld_coroutine_close(lua_State *L);

void ld_switching_libs(lua_State *L) {
    static lua_CFunction resume, wrap, close;
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, LUA_COLIBNAME) == LUA_TTABLE) {
        replace(L, "resume", ld_coroutine_resume, &resume);
        replace(L, "wrap", ld_coroutine_wrap, &wrap);
        replace(L, "close", ld_coroutine_close, &close);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, -1, LUA_DBLIBNAME) == LUA_TTABLE) {
        replace(L, "sethook", sethook, &original_sethook);
        replace(L, "gethook", gethook, &original_gethook);
    }
    lua_pop(L, 2);
    ld_blocking_libs(L);  // blocking.c: the standard library's blocking calls
}
