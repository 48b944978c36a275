// What the interpreter lock (lock.c) and switching (switching.c) share: the lock's record of its
// holder and waiters, and a waiter's watch of how long one holder has kept it.
#ifndef LD_SWITCHING_H
#define LD_SWITCHING_H

#include <stdatomic.h>
#include <stdint.h>

/// What a waiter (or the host) asks of the code holding the lock; the hook acts on it.
/// TERMINATE: every Lua code running raises `termination` (a time limit, an interrupt), again at
/// each instruction until it has unwound.
enum { LD_REQUEST_SWITCH = 1, LD_REQUEST_TERMINATE = 2 };

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
/// asked to give it up (and asked again each interval after). 1 when it asked now.
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
    int64_t next = w->since + interval;
    return deadline != 0 && deadline < next ? deadline : next;
}

#endif
