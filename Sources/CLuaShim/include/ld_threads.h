// Per-thread bookkeeping (threads/threads.c): the queues whose blocks a thread runs, its task,
// its number, the trace flow it is about to run.
#ifndef LD_THREADS_H
#define LD_THREADS_H

#include <stdint.h>
#include "ld_platform.h"

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
/// Whether the calling thread is the process's main thread, from its cached number: every sync
/// and chunk asks, and asking the kernel (gettid, getpid) was a third of a q:sync's time.
static inline int ld_is_main_thread(void) { return ld_thread_number() == 1; }

/// The trace flow of the work item this thread is about to run (0: none), for the trace.
void ld_set_pending_flow(unsigned long long flow);
unsigned long long ld_take_pending_flow(void);

#endif
