// The interpreter lock's weighted share: each nice value a class with a weighted hold time, as
// CFS shares a core (lock.c's header says why and how the lock uses it). Read and written on
// the contended path only.
#define _GNU_SOURCE
#include "lock_share.h"
#include "switching.h"

#include <errno.h>
#include <sys/resource.h>

// In nanoseconds: how far (weighted) a class may be ahead of the class that has had the least
// before its waiters give way (SHARE_BOUND); the most one tenure is charged (CHARGE_CAP).
enum { NCLASSES = LD_SHARE_CLASSES, NOBODY = 63 };
#define SHARE_BOUND 2000000
#define CHARGE_CAP 100000000
#define TID_SLOTS LD_SHARE_TID_SLOTS

void ld_share_init(ld_share *share, int64_t now) {
    share->born = now;
    atomic_init(&share->segment, (uint64_t)NOBODY << 14);
}

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

int ld_share_last_class(void) { return my_class; }

int ld_share_class(ld_share *lock, int64_t now) {
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
static int class_of_thread(ld_share *lock, int32_t tid) {
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
static int64_t least_waiting(ld_share *lock, int except) {
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
void ld_share_join(ld_share *lock, int c) {
    if (!(atomic_load_explicit(&lock->classes_seen, memory_order_relaxed) & (1ull << c)))
        atomic_fetch_or_explicit(&lock->classes_seen, 1ull << c, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&lock->waiting[c], 1, memory_order_relaxed) == 0)
        raise_to(&lock->vruntime[c], atomic_load_explicit(&lock->min_vruntime, memory_order_relaxed) - SHARE_BOUND);
}

static inline uint64_t segment_of(ld_share *lock, int64_t t, int cls, uint32_t key) {
    return (uint64_t)((t - lock->born) / 1000) << 20 | (uint64_t)cls << 14 | (key & 0x3fff);
}
static inline int segment_class(uint64_t seg) { return (int)(seg >> 14 & 63); }
static inline int64_t segment_held(ld_share *lock, uint64_t seg, int64_t t) {
    int64_t held = t - lock->born - (int64_t)(seg >> 20) * 1000;
    return held < 0 ? 0 : held > CHARGE_CAP ? CHARGE_CAP : held;
}

// Charges the tenure `seg`, ended at `t` (the thread that ended it in the segment word), to its
// class; then min_vruntime moves up to the least of the classes waiting and of the holders'
// before and after (`next`: NOBODY for none; the one before usually comes back for its next
// block at once, and CFS counts the task it switches from).
static void charge(ld_share *lock, uint64_t seg, int next, int64_t t) {
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
void ld_share_observe(ld_share *lock, ld_lock_shared *s, int64_t t, int is_free) {
    uint32_t key = (atomic_load_explicit(&s->acquisitions, memory_order_relaxed) << 1 | (is_free ? 1 : 0)) & 0x3fff;
    uint64_t seg = atomic_load_explicit(&lock->segment, memory_order_relaxed);
    if ((seg & 0x3fff) == key) return;
    int cls = is_free ? NOBODY : class_of_thread(lock, atomic_load_explicit(&s->holder, memory_order_relaxed));
    if (atomic_compare_exchange_strong_explicit(&lock->segment, &seg, segment_of(lock, t, cls, key), memory_order_relaxed,
                                                memory_order_relaxed))
        charge(lock, seg, cls, t);
}

// A thread of class `c` that has taken the lock after waiting (acquisition `a`) begins its
// tenure at `t`.
void ld_share_begin_tenure(ld_share *lock, int c, uint32_t a, int64_t t) {
    uint64_t seg = atomic_exchange_explicit(&lock->segment, segment_of(lock, t, c, a << 1), memory_order_relaxed);
    charge(lock, seg, c, t);
}

// A holder that lets the lock go on a switch (acquisition `a`) ends its tenure at `t`.
void ld_share_end_tenure(ld_share *lock, uint32_t a, int64_t t) {
    uint64_t seg = atomic_exchange_explicit(&lock->segment, segment_of(lock, t, NOBODY, a << 1 | 1), memory_order_relaxed);
    charge(lock, seg, NOBODY, t);
}

// Whether a waiter of class `c` gives way: its class has had more than SHARE_BOUND beyond the
// class that has had the least of those waiting and the holder's (with the tenure so far, as
// CFS counts the running task's time before it is preempted).
int ld_share_ahead(ld_share *lock, int c, int64_t now) {
    int64_t least = least_waiting(lock, c);
    uint64_t seg = atomic_load_explicit(&lock->segment, memory_order_relaxed);
    int h = segment_class(seg);
    if (h != NOBODY && h != c) {
        int64_t v = atomic_load_explicit(&lock->vruntime[h], memory_order_relaxed) + segment_held(lock, seg, now) * 1024 / nice_weight[h];
        if (v < least) least = v;
    }
    return least != INT64_MAX && atomic_load_explicit(&lock->vruntime[c], memory_order_relaxed) - least > SHARE_BOUND;
}

// A waiter of class `c` leaves (with or without the lock).
void ld_share_leave(ld_share *lock, int c) { atomic_fetch_sub_explicit(&lock->waiting[c], 1, memory_order_relaxed); }
