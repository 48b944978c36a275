// Lua's macros re-exported as functions Swift can see, the trampoline through which every
// binding is called (so that lua_error is only ever raised from a C frame), and per-thread
// bookkeeping that is cheaper in C than in Swift.
#ifndef LUASHIM_H
#define LUASHIM_H

#include <lua5.4/lua.h>
#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>
#include <stdint.h>
#include "ld_embedding.h"

#include "ld_net.h"  // sockets (net.c)

// MARK: states (alloc.c)

/// A new state like luaL_newstate's, whose small blocks come from pages of its own (alloc.c):
/// every allocation of the state must then happen under its interpreter lock.
lua_State *ld_newstate(void);
/// The memory limit of an interpreter: every state made with it counts against one number of
/// bytes (alloc.c). An allocation past the limit fails (Lua raises "not enough memory") while
/// Lua code runs on the allocating thread (`ld_alloc_enforced`); the runtime's own allocations,
/// made outside Lua code where an error could not be raised safely, are counted but never fail.
typedef struct ld_budget ld_budget;
/// A budget held once (by the runtime that made it); a worker interpreter charging it holds it
/// too, and the last release frees it.
ld_budget *ld_budget_new(int64_t limit);
ld_budget *ld_budget_retain(ld_budget *b);
void ld_budget_release(ld_budget *b);
int64_t ld_budget_used(ld_budget *b);
int64_t ld_budget_limit(ld_budget *b);
/// Charges `n` bytes the runtime holds for the script (e.g. `dispatch.data`): 1, or 0 when
/// past the limit (unless `force`). Give them back with `ld_budget_refund`.
int ld_budget_charge(ld_budget *b, int64_t n, int force);
void ld_budget_refund(ld_budget *b, int64_t n);
/// Whether an allocation on this thread may fail at the limit: while Lua code runs (set by
/// ld_running_push, cleared around the runtime's own code: bindings, hooks' callbacks).
extern __thread int ld_alloc_enforced;
/// `ld_newstate` charging `budget` (NULL: no limit).
lua_State *ld_newstate_budget(ld_budget *budget);
/// lua_close, then gives the state's pages back; the number of small blocks closing left
/// allocated (0 unless Lua leaked).
size_t ld_closestate(lua_State *L);
/// How many pages `L`'s small blocks occupy now; 0 for a state not made by ld_newstate or
/// under AddressSanitizer, where every block comes from the C library.
size_t ld_state_pages(lua_State *L);
/// Whether ld_newstate's states have pages of their own (not under AddressSanitizer).
int ld_pool_enabled(void);

// MARK: macros

static inline int ld_upvalueindex(int i) { return lua_upvalueindex(i); }
static inline int ld_registryindex(void) { return LUA_REGISTRYINDEX; }
static inline void ld_pop(lua_State *L, int n) { lua_pop(L, n); }
static inline const char *ld_typename(lua_State *L, int i) { return luaL_typename(L, i); }
static inline void ld_newtable(lua_State *L) { lua_newtable(L); }
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
/// How many interpreters of the process are ending their code (ld_lock_terminate): while any
/// is, a state that starts running is hooked at once.
extern volatile int ld_terminations;
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
    if (r->pending || ld_terminations) ld_running_service();
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
static inline void ld_insert(lua_State *L, int idx) { lua_insert(L, idx); }
static inline void ld_remove(lua_State *L, int idx) { lua_remove(L, idx); }
static inline void ld_replace(lua_State *L, int idx) { lua_replace(L, idx); }
static inline void **ld_extraspace(lua_State *L) { return (void **)lua_getextraspace(L); }
/// The runtime kept in `L`'s extra space. A thread made before the runtime attached to a host's
/// state has none of its own (Lua copies the main thread's extra space only when it makes a
/// thread): it gets the main thread's then.
static inline void *ld_runtime_of(lua_State *L) {
    void **p = (void **)lua_getextraspace(L);
    if (*p == NULL) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
        *p = *(void **)lua_getextraspace(lua_tothread(L, -1));
        lua_pop(L, 1);
    }
    return *p;
}
static inline int ld_isnoneornil(lua_State *L, int idx) { return lua_type(L, idx) <= 0; }
static inline void *ld_newuserdata(lua_State *L, size_t size) { return lua_newuserdatauv(L, size, 0); }
static inline int ld_getmetatable_named(lua_State *L, const char *name) {
    return luaL_getmetatable(L, name);
}
static inline int ld_loadbuffer(lua_State *L, const char *buf, size_t size, const char *name) {
    return luaL_loadbufferx(L, buf, size, name, NULL);
}
static inline int ld_loadfile(lua_State *L, const char *path) { return luaL_loadfilex(L, path, NULL); }
static inline int ld_ok(void) { return LUA_OK; }
static inline int ld_yield_status(void) { return LUA_YIELD; }
static inline int ld_multret(void) { return LUA_MULTRET; }
static inline int ld_noref(void) { return LUA_NOREF; }
static inline int ld_refnil(void) { return LUA_REFNIL; }
/// A full collection, in a protected call (finalizers run Lua). Lock held.
int ld_gc_collect(lua_State *L);
/// lua_gc is variadic: a step as if `kb` kilobytes had been allocated (for memory Lua cannot see).
static inline int ld_gc_step(lua_State *L, int kb) { return lua_gc(L, LUA_GCSTEP, kb); }

// MARK: bindings

/// Return values of a binding besides a result count (>= 0).
enum {
    LD_RAISE = -1,        // raise the value on top of the stack as it is
    LD_RAISE_WHERE = -2,  // prefix the message on top with the caller's position, then raise
    LD_SUSPEND = -3,      // yield the running coroutine; its continuation runs when it is resumed
    LD_CALL = -4,         // call the function below the top `nargs` values; then the continuation
    LD_PCALL = -5,        // the same in protected mode (see ld_call_status)
};

/// The Swift side: runs binding `id` on `L`; returns a result count or one of the LD_ codes.
typedef int (*ld_entry_fn)(lua_State *L, int id);
void ld_set_entry(ld_entry_fn fn);

/// Names, before a binding returns LD_SUSPEND or LD_CALL, the binding that finishes its work
/// (run through the trampoline on the same stack once the coroutine is resumed or the call has
/// returned), and for LD_CALL the argument count. Yields and calls happen in C, with
/// lua_yieldk and lua_callk, so that neither a yield nor an error ever crosses a Swift frame.
void ld_continue_with(int continuation, int nargs);
/// In a continuation after LD_PCALL: LUA_OK, or the error status (the error value on top).
int ld_call_status(void);

/// Pushes a C closure that calls binding `id` through the trampoline.
void ld_push_binding(lua_State *L, int id);
/// Same, with the `n` values on top of the stack as upvalues 2...n+1 (popped).
void ld_push_binding_n(lua_State *L, int id, int n);
/// The fast path of `q:async(fn)`: given the queue's object (the pointer its userdata holds),
/// submits the block and returns its record, where the function goes (ld_record_store), or
/// NULL to let the binding run instead. It must not raise.
typedef void *(*ld_submit_fn)(lua_State *L, void *object);
/// Like ld_push_binding, but a call with exactly an object of the type tagged `tag` (see
/// ld_object_tag) and a function first tries `submit`, then stores the function for the
/// record it returns. One type of one submit function per process (the queue's `async`).
void ld_push_binding_submit(lua_State *L, int id, ld_submit_fn submit, const void *tag);

// MARK: block records (BlockRecords.swift)

/// Block records come in slabs of LD_SLAB_BYTES, aligned to their size. A slab's first
/// LD_RECORD_BYTES are its head; each record after it has an index in the slab (1, 2, ...),
/// and a pending record's function waits in the slab's table, at that index: a table whose
/// array is made at full size, so that storing a function never rehashes.
#define LD_SLAB_BYTES 8192
#define LD_RECORD_BYTES 16
typedef struct ld_slab_head {
    void *owner;        // the runtime (unretained)
    int32_t functions;  // registry reference of the slab's table of pending functions
} ld_slab_head;
static inline ld_slab_head *ld_slab_head_of(void *record) {
    return (ld_slab_head *)((uintptr_t)record & ~(uintptr_t)(LD_SLAB_BYTES - 1));
}
static inline lua_Integer ld_record_index(void *record) {
    return (lua_Integer)(((uintptr_t)record & (LD_SLAB_BYTES - 1)) / LD_RECORD_BYTES);
}
/// A new slab's table, made at full size: its registry reference, or LUA_NOREF when Lua is out
/// of memory (made in a protected call, so that the error never unwinds through the Swift
/// frames that call this).
int ld_new_slab_table(lua_State *L);
/// Stores the function at index `i` of `L` (a positive index) as `record`'s, and leaves the
/// slab's table on top (inline: the trampoline's fast path returns without popping it).
static inline void ld_record_store(lua_State *L, void *record, int i) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ld_slab_head_of(record)->functions);
    lua_pushvalue(L, i);
    lua_rawseti(L, -2, ld_record_index(record));
}
/// Pushes the table of `record`'s slab and, above it, `record`'s function, and clears its
/// place in the table.
void ld_record_take(lua_State *L, void *record);

/// lua.c's message handler: a string with a traceback appended (see ErrorValue.swift).
int ld_msgh(lua_State *L);

// MARK: object userdata (Objects.swift)

/// Every object the module hands to Lua is a full userdata of two words: the object (a pointer
/// or a 64-bit value), then its type's tag, the address of one of the module's own bytes. A
/// type check reads the tag: it needs no metatable, so an object may have a metatable of its
/// own (queues do: see ObjectTable.push).
const void *ld_object_tag(int kind);
/// Called by an object's `__gc` with the object (the pointer its userdata held, now cleared).
/// Swift, which must not raise; the memory limit does not apply while it runs.
typedef void (*ld_object_release_fn)(void *object);
/// Pushes a `__gc` that calls `release` for an object userdata whose tag is `tag` (any of the
/// module's tags when NULL): a C function, without a binding's machinery, since every object
/// pays for it once. Anything else passed to it (through `debug.getmetatable`) is left alone.
void ld_push_release(lua_State *L, ld_object_release_fn release, const void *tag);
/// The memory of the object userdata at `i` whose tag is `tag`, or NULL.
static inline void **ld_object_at(lua_State *L, int i, const void *tag) {
    if (lua_type(L, i) != LUA_TUSERDATA || lua_rawlen(L, i) != 2 * sizeof(void *)) return NULL;
    void **p = (void **)lua_touserdata(L, i);
    return p[1] == tag ? p : NULL;
}
/// Replaces the table on top (an object's fields) with a new metatable for that object: a copy
/// of the table at `shared` whose __index is the fields table.
void ld_object_metatable(lua_State *L, int shared);

/// An __index function: upvalue 1 is a methods table, upvalue 2 a getter function or nil.
int ld_index(lua_State *L);
/// An __index function that gives the object (a userdata) a metatable of its own with binding
/// upvalue 2, then indexes it again. Upvalue 1 is the methods table (as for ld_index), which
/// the metatable it gives falls back to.
int ld_index_adopting(lua_State *L);

/// A __call function for callable tables: drops the table and calls upvalue 1 with the rest.
int ld_call_dropping_self(lua_State *L);

/// Opens the standard libraries whose bits are set in the integer argument 1 (bit i: the i-th
/// of base, package, coroutine, table, io, os, string, math, utf8, debug; bit 10 restricts them,
/// see ld_sandbox.h). Call with lua_pcall.
int ld_openlibs(lua_State *L);

/// Calls `lua_error` from C after pushing `message`: for use by C-side code only.
int ld_error_string(lua_State *L, const char *message);

// MARK: per-thread bookkeeping

/// The queues whose blocks this thread is running, innermost last (unretained pointers).
#define LD_MAX_FRAMES 64
int ld_frame_push(void *queue, int barrier);
void ld_frame_pop(void);
int ld_frame_count(void);
void *ld_frame_queue(int i);
int ld_frame_barrier(int i);

/// The task whose step this thread is running, or NULL (an unretained pointer).
void *ld_task_current(void);
void ld_task_set_current(void *task);

/// 1 for the process's main thread, then 2, 3, ... in order of first call. Inline: every block
/// asks, some more than once.
extern __thread int ld_thread_number_cached;
int ld_thread_number_first(void);
static inline int ld_thread_number(void) {
    int n = ld_thread_number_cached;
    return n != 0 ? n : ld_thread_number_first();
}
int64_t ld_gettid(void);
/// Whether the calling thread is the process's main thread, from its cached number: every sync
/// and chunk asks, and asking the kernel (gettid, getpid) was a third of a q:sync's time.
static inline int ld_is_main_thread(void) { return ld_thread_number() == 1; }

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
unsigned ld_lock_owed(ld_lock *lock);
/// The trace flow of the work item this thread is about to run (0: none), for the trace.
void ld_set_pending_flow(unsigned long long flow);
unsigned long long ld_take_pending_flow(void);
/// Whether the calling thread holds some interpreter's lock (and which one).
ld_lock *ld_lock_held(void);

// MARK: switching between blocks (switching.c)

/// What the switch hook calls to give the interpreter up and take it back: the runtime's
/// bookkeeping around `ld_lock_yield`. Runs on the holder's thread, in a hook of `L`.
typedef void (*ld_yield_fn)(lua_State *L);
/// Installs the switch signal's handler (once per process) and the runtime's yield function.
void ld_switching_init(ld_yield_fn fn);
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
static inline int ld_terminate_requested(const uint32_t *requests) {
    return (__atomic_load_n(requests, __ATOMIC_ACQUIRE) & 2 /* LD_REQUEST_TERMINATE */) != 0;
}
/// Hooks the calling thread's innermost state now if its lock asks for a switch or an end
/// (the thread holds the lock).
void ld_running_hook_now(void);
/// The innermost state running on the calling thread, or NULL.
lua_State *ld_running_innermost(void);
/// The hook the script (or Ctrl-C) has on `L`, looking through a switch hook standing in for it.
lua_Hook ld_script_hook(lua_State *L);
/// The mask of that hook. (Both from the thread `L` runs on: a switch hook is that thread's.)
int ld_script_hookmask(lua_State *L);
/// Removes the script's hook from `L` (a pending switch stays asked for).
void ld_clear_script_hook(lua_State *L);
/// Replaces coroutine.resume, wrap and close (lcorolib's, keeping the stack of running states)
/// and debug.sethook and gethook (which see the script's hook, never the switch hook) in the
/// libraries `L` has loaded; then the standard library's blocking calls (ld_blocking_libs).
void ld_switching_libs(lua_State *L);

/// Bytes malloc has handed out and not had back (glibc's main arena), for measurements.
size_t ld_heap_in_use(void);

// MARK: libdispatch's C functions, which Swift's Dispatch does not expose on Linux

/// A work function for ld_async_f: called once with the context pointer.
typedef void (*ld_work_fn)(void *context);

/// dispatch_async_f onto `queue` (a dispatch_queue_t), or dispatch_barrier_async_f when
/// `barrier`, or dispatch_group_async_f when `group` (a dispatch_group_t) is not NULL (not
/// both: libdispatch has no function for a barrier in a group).
void ld_async_f(void *queue, void *group, int barrier, void *context, ld_work_fn work);

/// dispatch_sync_f onto `queue`, or dispatch_barrier_sync_f when `barrier`: runs `work` on the
/// calling thread as a block of the queue, with no block object made.
void ld_sync_f(void *queue, int barrier, void *context, ld_work_fn work);

/// dispatch_queue_get_label: used to check that a queue pointer is the one expected.
const char *ld_queue_label(void *queue);

/// The main queue's C object (dispatch_get_main_queue()).
void *ld_main_queue_object(void);

// MARK: system calls Swift cannot make (syscall(2) is variadic)

/// 0 if epoll accepts `fd` (or it is a regular file, which libdispatch treats as always
/// ready); otherwise the errno epoll_ctl gives, e.g. EPERM for /dev/null.
int ld_epoll_refusal(int fd);

/// pipe2(2) with O_CLOEXEC (not visible to Swift): 0, or -1 and errno.
int ld_pipe_cloexec(int fds[2]);

/// pidfd_open(2) (syscall 434): a descriptor that becomes readable when `pid` exits; -1 + errno.
int ld_pidfd_open(int pid);

/// A descriptor that is readable at once and stays so (an eventfd holding 1, close-on-exec,
/// non-blocking): what a process source watches for a pid that no longer exists; -1 + errno.
int ld_ready_fd(void);

// MARK: Ctrl-C (interrupt.c)

/// Installs lua.c's SIGINT handler for code running on `L`: the next instruction there raises
/// "interrupted!" (a second SIGINT ends the process). The handler also writes to the eventfd set
/// with `ld_interrupt_set_fd`, if any, so that a wait parked without running Lua can end.
void ld_interrupt_arm(lua_State *L);
/// Restores SIGINT's default action.
void ld_interrupt_disarm(void);
void ld_interrupt_set_fd(int fd);
/// A new eventfd (close-on-exec, non-blocking) for `ld_interrupt_set_fd`.
int ld_interrupt_eventfd(void);
/// Whether an interruption is pending on `L` (its hook is set and has not fired).
int ld_interrupt_pending(lua_State *L);
/// Clears a pending interruption on `L`; 1 when there was one.
int ld_interrupt_clear(lua_State *L);
/// 1 when a SIGINT arrived that neither the hook nor a wait has handled yet, and marks it
/// handled: the eventfd's reader acts only on such a signal, so it never reports a Ctrl-C twice.
int ld_interrupt_take(void);

/// The main queue's eventfd (readable when the main queue has work), and running what is
/// ready on it: how the main thread services the main queue without Foundation's run loop.
int ld_main_queue_handle(void);
void ld_main_queue_drain(void);

// MARK: HTTP (http.c)

/// The outcome of one GET: the body (malloc'd, NUL-terminated; NULL on failure), the HTTP
/// status, or an error message (malloc'd).
typedef struct {
    char *body;
    size_t length;
    long status;
    char *error;
} ld_http_result;

/// Performs a GET through libcurl (loaded on first use), blocking the calling thread.
ld_http_result ld_http_get(const char *url);
void ld_http_result_free(ld_http_result *r);

/// A plain pthread mutex.
typedef struct ld_mutex ld_mutex;
ld_mutex *ld_mutex_new(void);
void ld_mutex_free(ld_mutex *m);
void ld_mutex_lock(ld_mutex *m);
void ld_mutex_unlock(ld_mutex *m);

#endif
