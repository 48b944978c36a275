// What the interpreter lock (lock.c) and switching (switching.c) share: the lock's record of its
// holder and waiters, and a waiter's watch of how long one holder has kept it.
#ifndef LD_SWITCHING_H
#define LD_SWITCHING_H

#include <stdatomic.h>
#include <stdint.h>

/// What a waiter, the host or a signal asks of the code holding the lock (the bits of
/// `requests`): who sets each and where it is acted on is requests.c's header.
enum {
    LD_REQUEST_SWITCH = 1,
    LD_REQUEST_TERMINATE = 2,
    LD_REQUEST_INTERRUPT = 4,
    LD_REQUEST_INTERRUPT_UNSEEN = 8,
};

/// Where ld_requests_act (requests.c) runs: the switch hook's entry, before the script's hook
/// has its event (only an end is acted on there); the switch hook after it; a step of a C loop.
enum { LD_ACT_HOOK_ENTRY, LD_ACT_HOOK, LD_ACT_STEP };
/// Acts on the requests of the interpreter the calling thread holds (and Ctrl-C's) for code
/// running `L`: raises, gives the interpreter up for a while, or returns.
void ld_requests_act(struct lua_State *L, int at);
/// Hooks `L` (with the switch hook, which calls ld_requests_act) at its next instruction, as
/// lua.c's Ctrl-C handler does; from a signal handler too (switching.c).
void ld_hook_next_instruction(struct lua_State *L);
/// The Ctrl-C target: `L` raises "interrupted!", and `lock`'s word keeps the bits (requests.c).
void ld_requests_interrupt_target(struct lua_State *L, struct ld_lock *lock);
/// Sets Ctrl-C's bits and hooks its target; 0 when there is none. Async-signal-safe.
int ld_request_interrupt(void);
/// The runtime's bookkeeping after a switch (ld_switching_init's).
void ld_requests_init(void (*fn)(struct lua_State *L, uint64_t started));

/// Lets an end leave the collection whose finalizer it ended (finalizers.c). Once per process.
void ld_finalizer_ends_init(void);

/// The part of a lock that switching reads (one per interpreter, in its lock's cache line).
typedef struct ld_lock_shared {
    /// Holders so far: each holder adds one, under the lock (a plain load and store).
    _Atomic uint32_t acquisitions;
    /// The holder's thread id (gettid).
    _Atomic int32_t holder;
    /// Threads waiting for the lock now.
    _Atomic uint32_t waiters;
    /// LD_REQUEST_ bits.
    _Atomic uint32_t requests;
    /// The switch interval in nanoseconds; 0: cooperative.
    _Atomic int64_t interval;
    /// When acquisition `since_acquisition` took the lock, if known: set by a thread that took
    /// it after waiting (the slow path reads the clock anyway), so that the next waiter counts
    /// that holder's interval from then rather than from when it began to wait.
    _Atomic int64_t since;
    _Atomic uint32_t since_acquisition;
    /// The last request: which acquisition was asked, and when. One request per holder per
    /// interval, whoever asks (see ld_switch_watch_check).
    _Atomic uint32_t asked_acquisition;
    _Atomic int64_t asked_at;
    /// How often that acquisition was asked again (see ld_switch_watch_check).
    _Atomic uint32_t asked_again;
    /// Switch requests sent, all told (ld_lock_switch_requests).
    _Atomic uint32_t switch_requests;
    /// The message code ended by LD_REQUEST_TERMINATE raises (a static string).
    const char *_Atomic termination;
} ld_lock_shared;

typedef struct ld_lock ld_lock;
/// The switching part of `lock`.
ld_lock_shared *ld_lock_state(ld_lock *lock);

extern __thread int32_t ld_tid_cached;
int32_t ld_tid_first(void);

/// A new holder: counted and named. Under the lock.
static inline void ld_lock_note_holder(ld_lock_shared *s) {
    int32_t tid = ld_tid_cached;
    if (tid == 0) tid = ld_tid_first();
    atomic_store_explicit(&s->holder, tid, memory_order_relaxed);
    atomic_store_explicit(&s->acquisitions, atomic_load_explicit(&s->acquisitions, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/// Asks the holder to give the lock up (switching.c).
void ld_request_switch(ld_lock_shared *s);

/// The shortest sleep of a waiter that watches a holder, in nanoseconds.
enum { LD_WATCH_MIN_SLEEP = 1000000 };

/// A waiter's view of one holder's tenure: which acquisition, seen since when.
typedef struct {
    uint32_t seen;
    int64_t since;
} ld_switch_watch;

/// A holder that took the lock at `now` after waiting records it (see `since`). Under the lock.
static inline void ld_lock_note_since(ld_lock_shared *s, int64_t now) {
    atomic_store_explicit(&s->since, now, memory_order_relaxed);
    atomic_store_explicit(&s->since_acquisition, atomic_load_explicit(&s->acquisitions, memory_order_relaxed),
                          memory_order_release);
}

/// Since when acquisition `a` has held the lock: its recorded start if it has one, else `now`.
static inline int64_t ld_lock_held_since(ld_lock_shared *s, uint32_t a, int64_t now) {
    if (atomic_load_explicit(&s->since_acquisition, memory_order_acquire) != a) return now;
    int64_t t = atomic_load_explicit(&s->since, memory_order_relaxed);
    // Read again: the record may have changed meanwhile (a stale time only delays a request).
    if (atomic_load_explicit(&s->since_acquisition, memory_order_acquire) != a || t > now) return now;
    return t;
}

static inline void ld_switch_watch_start(ld_lock_shared *s, ld_switch_watch *w, int64_t now) {
    w->seen = atomic_load_explicit(&s->acquisitions, memory_order_relaxed);
    w->since = ld_lock_held_since(s, w->seen, now);
}

/// At `now`: a new holder starts a new interval; one that has held the lock for the interval is
/// asked to give it up (and asked again at doubling gaps after). 1 when it asked now.
static inline int ld_switch_watch_check(ld_lock_shared *s, ld_switch_watch *w, int64_t now) {
    int64_t interval = atomic_load_explicit(&s->interval, memory_order_relaxed);
    if (interval <= 0) return 0;
    uint32_t a = atomic_load_explicit(&s->acquisitions, memory_order_relaxed);
    if (a != w->seen) {
        w->seen = a;
        w->since = ld_lock_held_since(s, a, now);
    }
    if (now - w->since >= interval) {
        w->since = now;
        // Every waiter watches the holder; one of them asks. Each asking sends the holder a
        // signal: fifty waiters asking at a 20 us interval kept it in its signal handler, and
        // kept themselves looking (below), the cores busy with sched_yield (dispatch_cascade
        // at 20 us: over 90 s under load, most of it system time).
        //
        // A holder asked already and still holding runs C code (a library call, a system call,
        // a collection), where the request waits for its next Lua instruction anyway: each new
        // signal only interrupts it. So it is asked again at doubling gaps, up to 1 ms (or the
        // interval, if longer): at a 2 us interval a signal every 2 us kept a holder in
        // string.rep or a file read 5-17 times as long.
        int64_t last = atomic_load_explicit(&s->asked_at, memory_order_relaxed);
        int again = atomic_load_explicit(&s->asked_acquisition, memory_order_relaxed) == a;
        uint32_t times = again ? atomic_load_explicit(&s->asked_again, memory_order_relaxed) : 0;
        if (again) {
            int64_t cap = interval > LD_WATCH_MIN_SLEEP ? interval : LD_WATCH_MIN_SLEEP;
            int64_t gap = times >= 20 || (interval << times) > cap ? cap : interval << times;
            if (now - last < gap) return 0;
        }
        if (!atomic_compare_exchange_strong_explicit(&s->asked_at, &last, now, memory_order_relaxed, memory_order_relaxed))
            return 0;
        atomic_store_explicit(&s->asked_again, again ? times + 1 : 0, memory_order_relaxed);
        atomic_store_explicit(&s->asked_acquisition, a, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->switch_requests, 1, memory_order_relaxed);
        ld_request_switch(s);
        return 1;
    }
    return 0;
}

/// When a sleeping waiter must look again: `deadline` (0: none), or sooner, at the end of the
/// holder's interval.
static inline int64_t ld_switch_watch_until(ld_lock_shared *s, ld_switch_watch *w, int64_t deadline) {
    int64_t interval = atomic_load_explicit(&s->interval, memory_order_relaxed);
    if (interval <= 0) return deadline;
    // Not sooner than 1 ms: the waiter that asked keeps looking (lock.c), and with a 20 us
    // interval every sleeper waking each interval kept both cores busy.
    int64_t next = w->since + (interval > LD_WATCH_MIN_SLEEP ? interval : LD_WATCH_MIN_SLEEP);
    return deadline != 0 && deadline < next ? deadline : next;
}

#endif
