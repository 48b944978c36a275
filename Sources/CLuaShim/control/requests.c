// The interpreter's control policy: what the code holding an interpreter does when asked to stop
// running, in one place, as CPython's eval-breaker (Python/ceval_gil.c) is.
//
// Each interpreter has one word of requests (ld_lock_shared.requests, switching.h, in its lock's
// cache line). Its bits:
//   LD_REQUEST_SWITCH     give the interpreter up until a waiter has had it, then go on.
//                         Set by a waiter that saw one holder keep it for the switch interval
//                         (lock.c through switching.h's watch: ld_request_switch).
//   LD_REQUEST_TERMINATE  every Lua code of the interpreter raises the end's message ("time limit
//                         exceeded", "interrupted"), again at each instruction until it has
//                         unwound. Set by the time limit and `interrupt()` (Control/Termination
//                         .swift), and a worker interpreter's end (Parallel/): ld_lock_terminate.
//   LD_REQUEST_INTERRUPT  Ctrl-C: the main Lua thread raises "interrupted!" at its next
//                         instruction, as lua.c does. Set by the SIGINT handler (interrupt.c).
//   LD_REQUEST_INTERRUPT_UNSEEN  set with INTERRUPT, cleared with it or once the eventfd's reader
//                         (Control/Interruption.swift) has looked: it reports each Ctrl-C once.
// Who sets a bit only sets it and pokes, which is async-signal-safe: the switch signal to the
// holder's thread, whose handler hooks the Lua state running there (switching.c); for Ctrl-C,
// lua.c's own poke, the same hook set on the main Lua thread's state, and a write to an eventfd
// that ends a wait parked on the main thread.
//
// Where the bits are acted on: ld_requests_act, below, the one function that decides. It runs in
// the switch hook at a Lua instruction (switching.c), and in the carried libraries' C loops that
// may run long (control/steps.c, Sources/CLuaStdlib/steps.h). Code that runs no instruction looks
// at the word itself: waits and binding loops through `Runtime.terminating` (Control/), a wait
// parked on the main thread through the eventfd.
//
// ld_stop_requests counts the stop bits (TERMINATE, INTERRUPT) set in all the words of the
// process: the carried libraries' step checks load it alone, and while it is nonzero a Lua state
// that starts running is hooked at once (ld_running_push).
#define _GNU_SOURCE
#include "ld_control.h"
#include "ld_platform.h"
#include "ld_threads.h"
#include "switching.h"
#include "ld_internals.h"

#include <lua5.4/lauxlib.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

volatile int ld_stop_requests;

static void count_stop(int delta) { __atomic_add_fetch(&ld_stop_requests, delta, __ATOMIC_SEQ_CST); }

/// Clears `bits` of `word`; the stop bits among them that were set are no longer counted.
/// The bits that were set.
static uint32_t clear_bits(_Atomic uint32_t *word, uint32_t bits) {
    uint32_t was = atomic_fetch_and_explicit(word, ~bits, memory_order_relaxed) & bits;
    if (was & LD_REQUEST_TERMINATE) count_stop(-1);
    if (was & LD_REQUEST_INTERRUPT) count_stop(-1);
    return was;
}

// MARK: setting bits

void ld_request_switch(ld_lock_shared *s) {
    atomic_fetch_or_explicit(&s->requests, LD_REQUEST_SWITCH, memory_order_relaxed);
    int32_t holder = atomic_load_explicit(&s->holder, memory_order_relaxed);
    // A holder that released the lock meanwhile finds no request for a lock it holds.
    if (holder > 0) ld_thread_signal(holder, ld_switch_signal());
}

void ld_lock_terminate(ld_lock *lock, int time_limit) {
    const char *message = time_limit ? "time limit exceeded" : "interrupted";
    ld_lock_shared *s = ld_lock_state(lock);
    atomic_store_explicit(&s->termination, message, memory_order_relaxed);
    if (atomic_fetch_or_explicit(&s->requests, LD_REQUEST_TERMINATE, memory_order_release) & LD_REQUEST_TERMINATE) return;
    count_stop(1);
    int32_t holder = atomic_load_explicit(&s->holder, memory_order_relaxed);
    if (holder > 0) ld_thread_signal(holder, ld_switch_signal());
}

void ld_lock_poke(ld_lock *lock) {
    ld_lock_shared *s = ld_lock_state(lock);
    if (!(atomic_load_explicit(&s->requests, memory_order_relaxed) & LD_REQUEST_TERMINATE)) return;
    int32_t holder = atomic_load_explicit(&s->holder, memory_order_relaxed);
    if (holder > 0) ld_thread_signal(holder, ld_switch_signal());
}

void ld_lock_end_termination(ld_lock *lock) { clear_bits(&ld_lock_state(lock)->requests, LD_REQUEST_TERMINATE); }

const uint32_t *ld_lock_requests(ld_lock *lock) {
    _Static_assert(LD_REQUEST_TERMINATE == 2, "ld_terminate_requested's bit");
    return (const uint32_t *)&ld_lock_state(lock)->requests;
}

uint32_t ld_lock_switch_requests(ld_lock *lock) {
    return atomic_load_explicit(&ld_lock_state(lock)->switch_requests, memory_order_relaxed);
}

// Ctrl-C's target: the main Lua thread's state and its interpreter's word (ld_interrupt_arm).
static lua_State *volatile interrupt_L;
static _Atomic(ld_lock *) interrupt_lock;

void ld_requests_interrupt_target(lua_State *L, ld_lock *lock) {
    interrupt_L = L;
    atomic_store(&interrupt_lock, lock);
}

int ld_request_interrupt(void) {
    ld_lock *lock = atomic_load(&interrupt_lock);
    lua_State *L = interrupt_L;
    if (lock == NULL || L == NULL) return 0;
    uint32_t was = atomic_fetch_or_explicit(&ld_lock_state(lock)->requests,
                                            LD_REQUEST_INTERRUPT | LD_REQUEST_INTERRUPT_UNSEEN, memory_order_release);
    if (!(was & LD_REQUEST_INTERRUPT)) count_stop(1);
    ld_hook_next_instruction(L);  // lua.c's poke: the state's next instruction calls the hook
    return 1;
}

int ld_interrupt_pending(ld_lock *lock) {
    return (atomic_load_explicit(&ld_lock_state(lock)->requests, memory_order_acquire) & LD_REQUEST_INTERRUPT) != 0;
}

int ld_interrupt_clear(ld_lock *lock) {
    return (clear_bits(&ld_lock_state(lock)->requests, LD_REQUEST_INTERRUPT | LD_REQUEST_INTERRUPT_UNSEEN) &
            LD_REQUEST_INTERRUPT) != 0;
}

int ld_interrupt_take(ld_lock *lock) {
    return (atomic_fetch_and_explicit(&ld_lock_state(lock)->requests, ~(uint32_t)LD_REQUEST_INTERRUPT_UNSEEN,
                                      memory_order_acq_rel) &
            LD_REQUEST_INTERRUPT_UNSEEN) != 0;
}

void ld_interrupt_forget(ld_lock *lock) {
    ld_lock *target = lock;
    if (atomic_compare_exchange_strong(&interrupt_lock, &target, NULL)) interrupt_L = NULL;
    clear_bits(&ld_lock_state(lock)->requests, LD_REQUEST_INTERRUPT | LD_REQUEST_INTERRUPT_UNSEEN | LD_REQUEST_TERMINATE);
}

// MARK: acting on them

static ld_switched_fn switched_fn;

void ld_requests_init(ld_switched_fn fn) { switched_fn = fn; }

/// Raises the termination message at the running instruction. In the hook, the hook stays, so
/// the code raises again at each instruction until it has unwound (a `pcall` cannot swallow it).
static void raise_termination(lua_State *L, ld_lock_shared *s) {
    const char *message = atomic_load_explicit(&s->termination, memory_order_relaxed);
    luaL_where(L, 1);
    lua_pushstring(L, message != NULL ? message : "interrupted");
    lua_concat(L, 2);
    // Raised in a hook, where Lua stops hooks: the message handler it calls would run unended.
    ld_allow_hooks(L);
    lua_error(L);
}

/// Ctrl-C, where lua.c's hook would raise it: in the main Lua thread's state at an instruction
/// (`at` LD_ACT_HOOK), on the main thread in a C loop (LD_ACT_STEP). Raises "interrupted!" once
/// per Ctrl-C, whoever acts on it first (the hook, a step, a wait: ld_interrupt_clear).
static void act_on_interrupt(lua_State *L, int at) {
    ld_lock *lock = atomic_load_explicit(&interrupt_lock, memory_order_relaxed);
    if (lock == NULL) return;
    _Atomic uint32_t *word = &ld_lock_state(lock)->requests;
    if (!(atomic_load_explicit(word, memory_order_relaxed) & LD_REQUEST_INTERRUPT)) return;
    if (at == LD_ACT_STEP ? !ld_is_main_thread() : L != interrupt_L) return;
    if (clear_bits(word, LD_REQUEST_INTERRUPT | LD_REQUEST_INTERRUPT_UNSEEN) & LD_REQUEST_INTERRUPT)
        luaL_error(L, "interrupted!");
}

static inline uint32_t requests_of(ld_lock *lock) {
    return lock != NULL ? atomic_load_explicit(&ld_lock_state(lock)->requests, memory_order_relaxed) : 0;
}

void ld_requests_act(lua_State *L, int at) {
    ld_lock *lock = ld_lock_held();
    uint32_t requests = requests_of(lock);
    // An end first: at the hook's entry before the script's hook has its event, with the switch
    // hook left on; at its exit (the switch hook is off this state now) put back on.
    if (requests & LD_REQUEST_TERMINATE) {
        if (at == LD_ACT_HOOK) ld_running_hook_now();
        raise_termination(L, ld_lock_state(lock));
    }
    if (at == LD_ACT_HOOK_ENTRY) return;
    act_on_interrupt(L, at);
    if (at != LD_ACT_HOOK || !(requests & LD_REQUEST_SWITCH) || switched_fn == NULL) return;
    // A switch: the interpreter is given up here, and the runtime does its bookkeeping (counts,
    // references released meanwhile, the trace) once it has it back.
    int enforced = ld_alloc_enforced;
    ld_alloc_enforced = 0;  // the runtime's code: its allocations must not raise
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    ld_lock_yield(lock);
    switched_fn(L, ((uint64_t)t.tv_sec * 1000000000 + (uint64_t)t.tv_nsec) | 1);
    ld_alloc_enforced = enforced;
    // Ended or interrupted while it waited for the interpreter back: from here on, as any code
    // running (the switch hook is off this state now: it goes back on for the end).
    lock = ld_lock_held();
    if (requests_of(lock) & LD_REQUEST_TERMINATE) {
        ld_running_hook_now();
        raise_termination(L, ld_lock_state(lock));
    }
    act_on_interrupt(L, at);
}
