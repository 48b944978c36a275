// The interpreter lock's weighted share (lock_share.c; lock.c's header says why). Private to
// the lock: its state lives in the lock, in cache lines of its own.
#ifndef LD_LOCK_SHARE_H
#define LD_LOCK_SHARE_H

#include "switching.h"

#include <stdatomic.h>
#include <stdint.h>

enum { LD_SHARE_CLASSES = 40, LD_SHARE_TID_SLOTS = 64 };

// A class is a nice value (index nice + 20).
typedef struct ld_share {
    _Alignas(64) _Atomic uint64_t classes_seen;  // a bit per class that has ever waited
    _Atomic uint32_t giving_way;                // waiters giving way now
    // The holder's tenure that waiters have seen begin and not yet charged, in one word so that
    // exactly one thread charges it: since (us after `born`) << 20 | class << 14 | key, where
    // the key is the acquisition (mod 8192) << 1 | free, and the class NOBODY on a free lock.
    _Atomic uint64_t segment;
    int64_t born;
    _Atomic int64_t min_vruntime;                          // monotonic, as CFS's: where a class joining starts
    _Atomic uint32_t waiting[LD_SHARE_CLASSES];            // waiters per class
    _Atomic int64_t vruntime[LD_SHARE_CLASSES];            // hold time per class, weighted: ns * 1024 / weight
    _Atomic uint64_t tid_class[LD_SHARE_TID_SLOTS];        // a thread's class: tid << 8 | class, by tid % slots
} ld_share;

// `share` zeroed, then this; `now` is CLOCK_MONOTONIC ns.
void ld_share_init(ld_share *share, int64_t now);
// The calling thread's class, and the one it had when it last asked.
int ld_share_class(ld_share *share, int64_t now);
int ld_share_last_class(void);
// A waiter of class `c` begins and ends its wait.
void ld_share_join(ld_share *share, int c);
void ld_share_leave(ld_share *share, int c);
// A waiter's look at `t`: charges the tenure that ended since the last look.
void ld_share_observe(ld_share *share, ld_lock_shared *s, int64_t t, int is_free);
// A thread of class `c` took the lock after waiting (acquisition `a`) at `t`; a holder let it go
// on a switch.
void ld_share_begin_tenure(ld_share *share, int c, uint32_t a, int64_t t);
void ld_share_end_tenure(ld_share *share, uint32_t a, int64_t t);
// Whether a waiter of class `c` gives way now.
int ld_share_ahead(ld_share *share, int c, int64_t now);

#endif
