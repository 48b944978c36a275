// The interpreter lock: a futex word, taken with one compare-and-swap when free.
//
// Why not a pthread mutex: when the blocks of a concurrent queue run on two cores, each wants
// the interpreter in turn. A waiter that takes the lock as soon as it sees it free (as glibc's
// adaptive mutex does) hands the interpreter to the other core after every block, and every
// hand-over moves the lines a block writes (the Lua stack, the records, the counters) between
// the caches: on two cores a block then costs three times what it costs on one.
// So a waiter looks at the lock once per sched_yield: the holder, back for its next block within
// a fraction of a microsecond, usually finds the lock free first and keeps the interpreter on
// its core, and a holder that the scheduler put off is given the core. That is unfair, within
// a bound: a waiter that has waited URGENT_AFTER is owed the lock, and no other thread takes it
// while a waiter is owed it. A waiter that has looked for LOOK_BUDGET sleeps on the futex, and
// a release wakes it. docs/performance.md has the figures.
//
// A weighted share (the contended path only): libdispatch gives each QoS's worker threads a nice
// value on Linux (background 10, utility 2, default 0, user-initiated -2), and the kernel shares
// cores by it; the interpreter is shared the same way, as CFS shares a core. Each nice value is
// a class with a weighted time (vruntime). Waiters watch the holder: the first to see a new
// holder, or the lock let go, charges the tenure it saw to the holder's class as its length *
// 1024 / the kernel's weight for the class's nice value (a tenure nobody waited through, and a
// hand-over, are nobody's). A class that starts waiting starts no further behind than the least
// (min_vruntime). A waiter whose class is more than SHARE_BOUND (lock_share.c) ahead of the least of the
// waiting classes and the holder's gives way: it does not take a free lock, is not owed it
// (URGENT_AFTER counts for waiters that do not give way), does not ask the holder to switch,
// and wakes the sleepers a free lock is left to; never for longer than GIVE_WAY_MAX after it
// began to wait (less inside Lua code, which may hold what others wait for), so nothing
// starves. So background blocks contending with user-initiated ones get about 110 / (110 +
// 1586) of the interpreter, not none (docs/reliability.md, dispatch_priority). The uncontended
// take and the release do not change; a thread's nice value is read on the contended path
// (again after a millisecond, in case its QoS changed). Under ThreadSanitizer (a pthread mutex)
// the share is not weighted.
//
// Switching (docs/execution-model.md): a waiter that has seen one holder keep the lock for the
// switch interval asks it to give the lock up (switching.c): it sets LD_REQUEST_SWITCH and sends
// the holder's thread the switch signal, whose handler hooks the Lua code running there; the
// hook calls ld_lock_yield (requests.c decides). Nothing of this runs while nobody waits: a holder only counts its
// acquisitions and names its thread, two stores to the line its compare-and-swap just wrote.
#define _GNU_SOURCE
#include "ld_control.h"
#include "ld_platform.h"
#include "switching.h"
#include "lock_share.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __thread ld_lock *held;

ld_lock *ld_lock_held(void) { return held; }

static inline int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline int64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LD_LOCK_PTHREAD 1
#endif
#endif

#ifdef LD_LOCK_PTHREAD
// ThreadSanitizer sees pthread mutexes, not futexes: under it, the lock is a plain mutex.
#include <pthread.h>

struct ld_lock {
    pthread_mutex_t mutex;
    ld_lock_shared s;
};

ld_lock *ld_lock_new(void) {
    ld_lock *lock = calloc(1, sizeof *lock);
    pthread_mutex_init(&lock->mutex, NULL);
    return lock;
}

ld_lock_shared *ld_lock_state(ld_lock *lock) { return &lock->s; }

static void mark_held(ld_lock *lock) {
    held = lock;
    ld_lock_note_holder(&lock->s);
}

// A waiter under ThreadSanitizer: timed waits of one interval, asking for a switch after each.
static int timed_lock(ld_lock *lock, int64_t deadline) {
    atomic_fetch_add(&lock->s.waiters, 1);
    ld_switch_watch watch;
    int64_t start = now_ns();
    ld_switch_watch_start(&lock->s, &watch, start);
    ld_switch_watch_check(&lock->s, &watch, start);
    int taken = 0;
    for (;;) {
        int64_t until = ld_switch_watch_until(&lock->s, &watch, deadline);
        if (until == 0) {
            taken = pthread_mutex_lock(&lock->mutex) == 0;
            break;
        }
        struct timespec t;
        int64_t real = until - now_ns() + wall_ns();
        t.tv_sec = real / 1000000000;
        t.tv_nsec = real % 1000000000;
        if (pthread_mutex_timedlock(&lock->mutex, &t) == 0) { taken = 1; break; }
        int64_t n = now_ns();
        if (deadline != 0 && n >= deadline) break;
        ld_switch_watch_check(&lock->s, &watch, n);
    }
    atomic_fetch_sub(&lock->s.waiters, 1);
    return taken;
}

void ld_lock_free(ld_lock *lock) {
    pthread_mutex_destroy(&lock->mutex);
    free(lock);
}


void ld_lock_acquire(ld_lock *lock) {
    if (pthread_mutex_trylock(&lock->mutex) == 0) {
        mark_held(lock);
        return;
    }
    timed_lock(lock, 0);
    mark_held(lock);
    ld_lock_note_since(&lock->s, now_ns());
}

void ld_lock_release(ld_lock *lock) {
    held = NULL;
    pthread_mutex_unlock(&lock->mutex);
}

int ld_lock_try(ld_lock *lock) {
    if (pthread_mutex_trylock(&lock->mutex) != 0) return 0;
    mark_held(lock);
    return 1;
}

int ld_lock_try_acquire(ld_lock *lock, int ms) {
    if (pthread_mutex_trylock(&lock->mutex) != 0 && !timed_lock(lock, now_ns() + (int64_t)ms * 1000000)) return 0;
    mark_held(lock);
    return 1;
}

unsigned ld_lock_owed(ld_lock *lock) {
    (void)lock;
    return 0;
}

static inline uint32_t takers(ld_lock *lock) { return atomic_load_explicit(&lock->s.waiters, memory_order_relaxed); }

static inline void end_tenure(ld_lock *lock, uint32_t a, int64_t t) { (void)lock, (void)a, (void)t; }

#else

enum { FREE = 0, HELD = 1, SLEEPERS = 2 };  // SLEEPERS: held, and a waiter may sleep on the word

// In nanoseconds: how long a waiter waits before it is owed the lock (URGENT_AFTER), and how
// long it keeps looking before it sleeps on the futex (LOOK_BUDGET).
enum { URGENT_AFTER = 20000, LOOK_BUDGET = 40000 };

// For how long at most a waiter gives way after it began to wait (GIVE_WAY_MAX;
// INSIDE_GIVE_WAY_MIN: see wait_for), in nanoseconds.
#define GIVE_WAY_MAX 50000000
#define INSIDE_GIVE_WAY_MIN 2000000

struct ld_lock {
    // Alone in their cache line, which waiters read. `urgent` counts the waiters owed the lock.
    _Alignas(64) _Atomic uint32_t word;
    _Atomic uint32_t urgent;
    ld_lock_shared s;
    // The weighted share (lock_share.h), read and written on the contended path only, in lines
    // of its own.
    ld_share share;
};

ld_lock *ld_lock_new(void) {
    size_t size = (sizeof(ld_lock) + 63) & ~(size_t)63;
    ld_lock *lock = aligned_alloc(64, size);
    if (lock == NULL) abort();
    memset(lock, 0, size);
    atomic_init(&lock->word, FREE);
    atomic_init(&lock->urgent, 0);
    ld_share_init(&lock->share, now_ns());
    return lock;
}

void ld_lock_free(ld_lock *lock) { free(lock); }

ld_lock_shared *ld_lock_state(ld_lock *lock) { return &lock->s; }

// Takes the lock, marking the word `as`, if it is free and (unless the caller is owed it
// itself) no waiter is owed it.
static inline int take(ld_lock *lock, uint32_t as, int owed) {
    uint32_t expected = FREE;
    return (owed || atomic_load_explicit(&lock->urgent, memory_order_relaxed) == 0) &&
           atomic_compare_exchange_strong_explicit(&lock->word, &expected, as, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline int take_free(ld_lock *lock) { return take(lock, HELD, 0); }

// Sleeps while the word is SLEEPERS, until `deadline` (CLOCK_MONOTONIC ns; 0: none).
static void sleep_on(ld_lock *lock, int64_t deadline) {
    int64_t left = -1;
    if (deadline != 0) {
        left = deadline - now_ns();
        if (left <= 0) return;
    }
    ld_futex_wait((uint32_t *)&lock->word, SLEEPERS, left);
}

static void wake_one(ld_lock *lock) { ld_futex_wake((uint32_t *)&lock->word, 1); }

// The contended path: 1 when taken (at *at), 0 if `deadline` (0: none) passed first.
static int wait_for(ld_lock *lock, int64_t deadline, int64_t *at) {
    // A thread that has slept takes the lock as SLEEPERS, so that its release wakes the next
    // sleeper (the release that woke it may have left others asleep).
    uint32_t take_as = HELD;
    int urgent = 0, taken = 0, giving = 0;
    // While giving way: 1 + the acquisition last seen free, and that for which it woke sleepers.
    uint32_t free_seen = 0, woke = 0;
    int64_t since = now_ns();
    int c = ld_share_class(&lock->share, since);
    // A thread inside Lua code (a block switched out, or back from a blocking call) may hold
    // what others wait for (a semaphore used as a mutex, which waiting threads do not show):
    // it gives way for ten switch intervals at most, between INSIDE_GIVE_WAY_MIN and
    // GIVE_WAY_MAX, so that the weights still decide the share of long blocks that are
    // switched. A thread about to start a block holds nothing.
    int64_t give_way = GIVE_WAY_MAX;
    if (ld_running_count() > 0) {
        int64_t interval = atomic_load_explicit(&lock->s.interval, memory_order_relaxed);
        give_way = interval * 10 < INSIDE_GIVE_WAY_MIN ? INSIDE_GIVE_WAY_MIN : interval * 10 > GIVE_WAY_MAX ? GIVE_WAY_MAX : interval * 10;
    }
    int64_t give_way_until = since + give_way;
    atomic_fetch_add_explicit(&lock->s.waiters, 1, memory_order_relaxed);
    ld_share_join(&lock->share, c);
    ld_share_observe(&lock->share, &lock->s, since, atomic_load_explicit(&lock->word, memory_order_relaxed) == FREE);
    ld_switch_watch watch;
    ld_switch_watch_start(&lock->s, &watch, since);
    ld_switch_watch_check(&lock->s, &watch, since);  // a holder past its interval is asked at once
    for (;;) {
        int64_t start = now_ns();
        for (;;) {
            // One look per yield: seldom enough that the holder usually takes the lock back
            // for its next block first, and a holder the scheduler put off gets the core.
            sched_yield();
            int64_t t = now_ns();
            int is_free = atomic_load_explicit(&lock->word, memory_order_relaxed) == FREE;
            ld_share_observe(&lock->share, &lock->s, t, is_free);
            // Giving way (never past its bound), a waiter is not owed the lock.
            int give = t < give_way_until && ld_share_ahead(&lock->share, c, t);
            if (give != giving) {
                giving = give;
                if (giving) atomic_fetch_add_explicit(&lock->share.giving_way, 1, memory_order_relaxed);
                else atomic_fetch_sub_explicit(&lock->share.giving_way, 1, memory_order_relaxed);
                if (giving && urgent) {
                    urgent = 0;
                    atomic_fetch_sub_explicit(&lock->urgent, 1, memory_order_relaxed);
                }
            }
            if (is_free) {
                if (!giving && take(lock, take_as, urgent)) {
                    taken = 1;
                    goto done;
                }
                if (giving) {
                    // Still free a look later: the waiters it is left to may be asleep. (Once
                    // per free lock: woken, they do not sleep while it is free.)
                    uint32_t a = atomic_load_explicit(&lock->s.acquisitions, memory_order_relaxed) + 1;
                    if (free_seen == a && woke != a) {
                        ld_futex_wake((uint32_t *)&lock->word, INT32_MAX);
                        woke = a;
                    }
                    free_seen = a;
                }
            }
            if (deadline != 0 && t >= deadline) goto done;
            if (!urgent && !giving && t - since >= URGENT_AFTER) {
                urgent = 1;
                atomic_fetch_add_explicit(&lock->urgent, 1, memory_order_relaxed);
            }
            // Asked to switch, the holder lets go within microseconds: keep looking. (A waiter
            // giving way does not ask: it would not take the lock.)
            if (!giving && ld_switch_watch_check(&lock->s, &watch, t)) start = t;
            if (t - start >= LOOK_BUDGET) break;
        }
        int64_t until = ld_switch_watch_until(&lock->s, &watch, deadline);
        if (giving) {
            // It sleeps only on a held lock, and no longer than it may give way.
            uint32_t expected = HELD;
            if (!atomic_compare_exchange_strong_explicit(&lock->word, &expected, SLEEPERS, memory_order_relaxed,
                                                         memory_order_relaxed) && expected == FREE)
                continue;
            if (until == 0 || until > give_way_until) until = give_way_until;
        } else if (atomic_exchange_explicit(&lock->word, SLEEPERS, memory_order_acquire) == FREE) {
            // Marked SLEEPERS, the word makes the holder's release wake a sleeper. (A thread
            // gets here owed the lock, so it may take a free one.)
            taken = 1;
            goto done;
        }
        // With switching on, the sleep ends after an interval, to ask the holder again.
        sleep_on(lock, until);
        take_as = SLEEPERS;
        int64_t t = now_ns();
        if (deadline != 0 && t >= deadline) goto done;
        if (!giving) ld_switch_watch_check(&lock->s, &watch, t);  // then the look loop above starts again
    }
done:
    atomic_fetch_sub_explicit(&lock->s.waiters, 1, memory_order_relaxed);
    ld_share_leave(&lock->share, c);
    if (urgent) atomic_fetch_sub_explicit(&lock->urgent, 1, memory_order_relaxed);
    if (giving) atomic_fetch_sub_explicit(&lock->share.giving_way, 1, memory_order_relaxed);
    if (taken) *at = now_ns();
    // Woken and leaving without the lock: pass the wake on, in case a sleeper counts on this
    // thread's release.
    if (!taken && take_as == SLEEPERS) wake_one(lock);
    return taken;
}

// Waiters that would take the lock now (not giving way).
static inline uint32_t takers(ld_lock *lock) {
    uint32_t w = atomic_load_explicit(&lock->s.waiters, memory_order_relaxed);
    uint32_t g = atomic_load_explicit(&lock->share.giving_way, memory_order_relaxed);
    return w > g ? w - g : 0;
}

static inline void mark_held(ld_lock *lock) {
    held = lock;
    ld_lock_note_holder(&lock->s);
}

// Taken at `at` after waiting.
static void mark_held_after_wait(ld_lock *lock, int64_t at) {
    mark_held(lock);
    ld_share_begin_tenure(&lock->share, ld_share_last_class(), atomic_load_explicit(&lock->s.acquisitions, memory_order_relaxed), at);
    ld_lock_note_since(&lock->s, at);
}

void ld_lock_acquire(ld_lock *lock) {
    if (take_free(lock)) {
        mark_held(lock);
        return;
    }
    int64_t at;
    wait_for(lock, 0, &at);
    mark_held_after_wait(lock, at);
}

void ld_lock_release(ld_lock *lock) {
    held = NULL;
    if (atomic_exchange_explicit(&lock->word, FREE, memory_order_release) == SLEEPERS) wake_one(lock);
}

int ld_lock_try(ld_lock *lock) {
    if (!take_free(lock)) return 0;
    mark_held(lock);
    return 1;
}

int ld_lock_try_acquire(ld_lock *lock, int ms) {
    if (take_free(lock)) {
        mark_held(lock);
        return 1;
    }
    int64_t at;
    if (!wait_for(lock, now_ns() + (int64_t)ms * 1000000, &at)) return 0;
    mark_held_after_wait(lock, at);
    return 1;
}

unsigned ld_lock_owed(ld_lock *lock) { return atomic_load_explicit(&lock->urgent, memory_order_relaxed); }

static inline void end_tenure(ld_lock *lock, uint32_t a, int64_t t) { ld_share_end_tenure(&lock->share, a, t); }

#endif

void ld_lock_yield(ld_lock *lock) {
    ld_lock_shared *s = ld_lock_state(lock);
    atomic_fetch_and_explicit(&s->requests, ~(uint32_t)LD_REQUEST_SWITCH, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&s->acquisitions, memory_order_relaxed);
    end_tenure(lock, n, now_ns());
    ld_lock_release(lock);
    // Until a waiter has had the lock (or none waits any more): the holder would otherwise
    // usually take it straight back.
    while (atomic_load_explicit(&s->acquisitions, memory_order_relaxed) == n &&
           takers(lock) > 0)
        sched_yield();
    ld_lock_acquire(lock);
    // Its interval starts again now, however it took the lock back.
    ld_lock_note_since(s, now_ns());
}
