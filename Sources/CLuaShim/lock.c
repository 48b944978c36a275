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
// (min_vruntime). A waiter whose class is more than SHARE_BOUND ahead of the least of the
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
// hook calls ld_lock_yield. Nothing of this runs while nobody waits: a holder only counts its
// acquisitions and names its thread, two stores to the line its compare-and-swap just wrote.
#define _GNU_SOURCE
#include "luashim.h"
#include "switching.h"

#include <linux/futex.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

// The weighted share (see the header). In nanoseconds: how far (weighted) a class may be ahead
// of the class that has had the least before its waiters give way (SHARE_BOUND); for how long
// at most a waiter gives way after it began to wait (GIVE_WAY_MAX; INSIDE_GIVE_WAY_MIN: see
// wait_for); the most one tenure is charged (CHARGE_CAP).
enum { NCLASSES = 40, NOBODY = 63 };
#define SHARE_BOUND 2000000
#define GIVE_WAY_MAX 50000000
#define INSIDE_GIVE_WAY_MIN 2000000
#define CHARGE_CAP 100000000
#define TID_SLOTS 64

struct ld_lock {
    // Alone in their cache line, which waiters read. `urgent` counts the waiters owed the lock.
    _Alignas(64) _Atomic uint32_t word;
    _Atomic uint32_t urgent;
    ld_lock_shared s;
    // The weighted share, read and written on the contended path only, in lines of their own.
    // A class is a nice value (index nice + 20).
    _Alignas(64) _Atomic uint64_t classes_seen;  // a bit per class that has ever waited
    _Atomic uint32_t giving_way;                // waiters giving way now
    // The holder's tenure that waiters have seen begin and not yet charged, in one word so that
    // exactly one thread charges it: since (us after `born`) << 20 | class << 14 | key, where
    // the key is the acquisition (mod 8192) << 1 | free, and the class NOBODY on a free lock.
    _Atomic uint64_t segment;
    int64_t born;
    _Atomic int64_t min_vruntime;               // monotonic, as CFS's: where a class joining starts
    _Atomic uint32_t waiting[NCLASSES];         // waiters per class
    _Atomic int64_t vruntime[NCLASSES];         // hold time per class, weighted: ns * 1024 / weight
    _Atomic uint64_t tid_class[TID_SLOTS];      // a thread's class: tid << 8 | class, by tid % slots
};

ld_lock *ld_lock_new(void) {
    size_t size = (sizeof(ld_lock) + 63) & ~(size_t)63;
    ld_lock *lock = aligned_alloc(64, size);
    if (lock == NULL) abort();
    memset(lock, 0, size);
    atomic_init(&lock->word, FREE);
    atomic_init(&lock->urgent, 0);
    lock->born = now_ns();
    atomic_init(&lock->segment, (uint64_t)NOBODY << 14);
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
    struct timespec t, *timeout = NULL;
    if (deadline != 0) {
        int64_t left = deadline - now_ns();
        if (left <= 0) return;
        t.tv_sec = left / 1000000000;
        t.tv_nsec = left % 1000000000;
        timeout = &t;
    }
    syscall(SYS_futex, &lock->word, FUTEX_WAIT_PRIVATE, SLEEPERS, timeout, NULL, 0);
}

static void wake_one(ld_lock *lock) { syscall(SYS_futex, &lock->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

// The kernel's sched_prio_to_weight (kernel/sched/core.c): the weight of nice -20 ... 19.
static const int32_t nice_weight[NCLASSES] = {
    /* -20 */ 88761, 71755, 56483, 46273, 36291,
    /* -15 */ 29154, 23254, 18705, 14949, 11916,
    /* -10 */ 9548,  7620,  6100,  4904,  3906,
    /*  -5 */ 3121,  2501,  1991,  1586,  1277,
    /*   0 */ 1024,  820,   655,   526,   423,
    /*   5 */ 335,   272,   215,   172,   137,
    /*  10 */ 110,   87,    70,    56,    45,
    /*  15 */ 36,    29,    23,    18,    15,
};

static inline int class_of_nice(int nice) { return nice < -20 ? 0 : nice > 19 ? NCLASSES - 1 : nice + 20; }

// The calling thread's class: its nice value (on Linux, getpriority(PRIO_PROCESS, 0) is the
// calling thread's), read again after a millisecond in case the thread's QoS changed.
static __thread int my_class = -1;
static __thread int64_t my_class_read;

static int current_class(ld_lock *lock, int64_t now) {
    if (my_class < 0 || now - my_class_read > 1000000) {
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, 0);
        my_class = class_of_nice(nice == -1 && errno != 0 ? 0 : nice);
        my_class_read = now;
    }
    int32_t tid = ld_tid_cached;
    if (tid == 0) tid = ld_tid_first();
    // Published for the waiter that will charge this thread's hold.
    uint64_t entry = (uint64_t)(uint32_t)tid << 8 | (uint64_t)my_class;
    _Atomic uint64_t *slot = &lock->tid_class[(uint32_t)tid % TID_SLOTS];
    if (atomic_load_explicit(slot, memory_order_relaxed) != entry) atomic_store_explicit(slot, entry, memory_order_relaxed);
    return my_class;
}

// The class of thread `tid` (a holder that may never have waited: asked of the kernel).
static int class_of_thread(ld_lock *lock, int32_t tid) {
    if (tid <= 0) return class_of_nice(0);
    _Atomic uint64_t *slot = &lock->tid_class[(uint32_t)tid % TID_SLOTS];
    uint64_t entry = atomic_load_explicit(slot, memory_order_relaxed);
    if ((uint32_t)(entry >> 8) == (uint32_t)tid) return (int)(entry & 0xff);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)tid);
    int c = class_of_nice(nice == -1 && errno != 0 ? 0 : nice);
    atomic_store_explicit(slot, (uint64_t)(uint32_t)tid << 8 | (uint64_t)c, memory_order_relaxed);
    return c;
}

static inline void raise_to(_Atomic int64_t *v, int64_t to) {
    int64_t cur = atomic_load_explicit(v, memory_order_relaxed);
    while (cur < to && !atomic_compare_exchange_weak_explicit(v, &cur, to, memory_order_relaxed, memory_order_relaxed)) {
    }
}

// The least weighted time among the classes that wait, other than `except` (INT64_MAX: none).
static int64_t least_waiting(ld_lock *lock, int except) {
    uint64_t seen = atomic_load_explicit(&lock->classes_seen, memory_order_relaxed);
    int64_t least = INT64_MAX;
    while (seen) {
        int c = __builtin_ctzll(seen);
        seen &= seen - 1;
        if (c == except || atomic_load_explicit(&lock->waiting[c], memory_order_relaxed) == 0) continue;
        int64_t v = atomic_load_explicit(&lock->vruntime[c], memory_order_relaxed);
        if (v < least) least = v;
    }
    return least;
}

// A class joins the waiters: it starts no further behind than SHARE_BOUND before the least
// (CFS's placement, with its credit for a sleeper), so that a class that did not wait for a
// while does not then take the lock for as long.
static void join(ld_lock *lock, int c) {
    if (!(atomic_load_explicit(&lock->classes_seen, memory_order_relaxed) & (1ull << c)))
        atomic_fetch_or_explicit(&lock->classes_seen, 1ull << c, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&lock->waiting[c], 1, memory_order_relaxed) == 0)
        raise_to(&lock->vruntime[c], atomic_load_explicit(&lock->min_vruntime, memory_order_relaxed) - SHARE_BOUND);
}

static inline uint64_t segment_of(ld_lock *lock, int64_t t, int cls, uint32_t key) {
    return (uint64_t)((t - lock->born) / 1000) << 20 | (uint64_t)cls << 14 | (key & 0x3fff);
}
static inline int segment_class(uint64_t seg) { return (int)(seg >> 14 & 63); }
static inline int64_t segment_held(ld_lock *lock, uint64_t seg, int64_t t) {
    int64_t held = t - lock->born - (int64_t)(seg >> 20) * 1000;
    return held < 0 ? 0 : held > CHARGE_CAP ? CHARGE_CAP : held;
}

// Charges the tenure `seg`, ended at `t` (the thread that ended it in the segment word), to its
// class; then min_vruntime moves up to the least of the classes waiting and of the holders'
// before and after (`next`: NOBODY for none; the one before usually comes back for its next
// block at once, and CFS counts the task it switches from).
static void charge(ld_lock *lock, uint64_t seg, int next, int64_t t) {
    int c = segment_class(seg);
    int64_t least = least_waiting(lock, -1);
    if (c != NOBODY) {
        int64_t charged = segment_held(lock, seg, t) * 1024 / nice_weight[c];
        int64_t v = atomic_fetch_add_explicit(&lock->vruntime[c], charged, memory_order_relaxed) + charged;
        if (v < least) least = v;
    }
    if (next != NOBODY) {
        int64_t v = atomic_load_explicit(&lock->vruntime[next], memory_order_relaxed);
        if (v < least) least = v;
    }
    if (least != INT64_MAX) raise_to(&lock->min_vruntime, least);
}

// A waiter's look at `t`: a new holder, or a lock let go, ends the tenure seen so far (the
// waiter that sees it first charges it) and begins the next. The time nobody waited is nobody's
// debt, nor is a hand-over.
static void observe(ld_lock *lock, int64_t t, int is_free) {
    uint32_t key = (atomic_load_explicit(&lock->s.acquisitions, memory_order_relaxed) << 1 | (is_free ? 1 : 0)) & 0x3fff;
    uint64_t seg = atomic_load_explicit(&lock->segment, memory_order_relaxed);
    if ((seg & 0x3fff) == key) return;
    int cls = is_free ? NOBODY : class_of_thread(lock, atomic_load_explicit(&lock->s.holder, memory_order_relaxed));
    if (atomic_compare_exchange_strong_explicit(&lock->segment, &seg, segment_of(lock, t, cls, key), memory_order_relaxed,
                                                memory_order_relaxed))
        charge(lock, seg, cls, t);
}

// A thread of class `c` that has taken the lock after waiting (acquisition `a`) begins its
// tenure at `t`.
static void begin_tenure(ld_lock *lock, int c, uint32_t a, int64_t t) {
    uint64_t seg = atomic_exchange_explicit(&lock->segment, segment_of(lock, t, c, a << 1), memory_order_relaxed);
    charge(lock, seg, c, t);
}

// A holder that lets the lock go on a switch (acquisition `a`) ends its tenure at `t`.
static void end_tenure(ld_lock *lock, uint32_t a, int64_t t) {
    uint64_t seg = atomic_exchange_explicit(&lock->segment, segment_of(lock, t, NOBODY, a << 1 | 1), memory_order_relaxed);
    charge(lock, seg, NOBODY, t);
}

// Whether a waiter of class `c` gives way: its class has had more than SHARE_BOUND beyond the
// class that has had the least of those waiting and the holder's (with the tenure so far, as
// CFS counts the running task's time before it is preempted).
static int ahead(ld_lock *lock, int c, int64_t now) {
    int64_t least = least_waiting(lock, c);
    uint64_t seg = atomic_load_explicit(&lock->segment, memory_order_relaxed);
    int h = segment_class(seg);
    if (h != NOBODY && h != c) {
        int64_t v = atomic_load_explicit(&lock->vruntime[h], memory_order_relaxed) + segment_held(lock, seg, now) * 1024 / nice_weight[h];
        if (v < least) least = v;
    }
    return least != INT64_MAX && atomic_load_explicit(&lock->vruntime[c], memory_order_relaxed) - least > SHARE_BOUND;
}

// The contended path: 1 when taken (at *at), 0 if `deadline` (0: none) passed first.
static int wait_for(ld_lock *lock, int64_t deadline, int64_t *at) {
    // A thread that has slept takes the lock as SLEEPERS, so that its release wakes the next
    // sleeper (the release that woke it may have left others asleep).
    uint32_t take_as = HELD;
    int urgent = 0, taken = 0, giving = 0;
    // While giving way: 1 + the acquisition last seen free, and that for which it woke sleepers.
    uint32_t free_seen = 0, woke = 0;
    int64_t since = now_ns();
    int c = current_class(lock, since);
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
    join(lock, c);
    observe(lock, since, atomic_load_explicit(&lock->word, memory_order_relaxed) == FREE);
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
            observe(lock, t, is_free);
            // Giving way (never past its bound), a waiter is not owed the lock.
            int give = t < give_way_until && ahead(lock, c, t);
            if (give != giving) {
                giving = give;
                if (giving) atomic_fetch_add_explicit(&lock->giving_way, 1, memory_order_relaxed);
                else atomic_fetch_sub_explicit(&lock->giving_way, 1, memory_order_relaxed);
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
                        syscall(SYS_futex, &lock->word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
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
    atomic_fetch_sub_explicit(&lock->waiting[c], 1, memory_order_relaxed);
    if (urgent) atomic_fetch_sub_explicit(&lock->urgent, 1, memory_order_relaxed);
    if (giving) atomic_fetch_sub_explicit(&lock->giving_way, 1, memory_order_relaxed);
    if (taken) *at = now_ns();
    // Woken and leaving without the lock: pass the wake on, in case a sleeper counts on this
    // thread's release.
    if (!taken && take_as == SLEEPERS) wake_one(lock);
    return taken;
}

// Waiters that would take the lock now (not giving way).
static inline uint32_t takers(ld_lock *lock) {
    uint32_t w = atomic_load_explicit(&lock->s.waiters, memory_order_relaxed);
    uint32_t g = atomic_load_explicit(&lock->giving_way, memory_order_relaxed);
    return w > g ? w - g : 0;
}

static inline void mark_held(ld_lock *lock) {
    held = lock;
    ld_lock_note_holder(&lock->s);
}

// Taken at `at` after waiting.
static void mark_held_after_wait(ld_lock *lock, int64_t at) {
    mark_held(lock);
    begin_tenure(lock, my_class, atomic_load_explicit(&lock->s.acquisitions, memory_order_relaxed), at);
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
