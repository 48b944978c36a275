// Per-thread bookkeeping (ld_threads.h): the queues whose blocks a thread runs, its task, its
// number, the trace flow it is about to run.
#include "ld_threads.h"

#include <stdatomic.h>
#include <unistd.h>

typedef struct {
    void *queue;
    int barrier;
} frame;

static __thread frame frames[LD_MAX_FRAMES];
static __thread int depth;

int ld_frame_push(void *queue, int barrier) {
    if (depth < LD_MAX_FRAMES) {
        frames[depth].queue = queue;
        frames[depth].barrier = barrier;
    }
    return ++depth;
}

void ld_frame_pop(void) {
    if (depth > 0) depth--;
}

int ld_frame_count(void) { return depth < LD_MAX_FRAMES ? depth : LD_MAX_FRAMES; }
void *ld_frame_queue(int i) { return frames[i].queue; }
int ld_frame_barrier(int i) { return frames[i].barrier; }

static __thread void *current_task;

void *ld_task_current(void) { return current_task; }
void ld_task_set_current(void *task) { current_task = task; }

static atomic_int next_thread_number = 2;
__thread int ld_thread_number_cached;

int ld_thread_number_first(void) {
    if (ld_thread_number_cached == 0)
        ld_thread_number_cached = ld_gettid() == (int64_t)getpid() ? 1 : atomic_fetch_add(&next_thread_number, 1);
    return ld_thread_number_cached;
}

static __thread unsigned long long pending_flow;
void ld_set_pending_flow(unsigned long long flow) { pending_flow = flow; }
unsigned long long ld_take_pending_flow(void) {
    unsigned long long f = pending_flow;
    pending_flow = 0;
    return f;
}
