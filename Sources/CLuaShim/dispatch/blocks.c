// Submitting a block with libdispatch's C functions: a function pointer and a context pointer
// (dispatch_async_f) instead of a Swift closure turned into a Dispatch block, which costs two
// allocations and two frees per block.
#include "ld_dispatch.h"

#include <stddef.h>

// libdispatch's own declarations (dispatch/queue.h, dispatch/group.h). The toolchain ships the
// header, but in its resource directory, which C targets do not search; these functions take
// and return only pointers, so declaring them here is exact.
#if __has_include(<dispatch/dispatch.h>)
#include <dispatch/dispatch.h>
#else
typedef struct dispatch_queue_s *dispatch_queue_t;
typedef struct dispatch_group_s *dispatch_group_t;
typedef void (*dispatch_function_t)(void *);
void dispatch_async_f(dispatch_queue_t queue, void *context, dispatch_function_t work);
void dispatch_barrier_async_f(dispatch_queue_t queue, void *context, dispatch_function_t work);
void dispatch_sync_f(dispatch_queue_t queue, void *context, dispatch_function_t work);
void dispatch_barrier_sync_f(dispatch_queue_t queue, void *context, dispatch_function_t work);
void dispatch_group_async_f(dispatch_group_t group, dispatch_queue_t queue, void *context, dispatch_function_t work);
const char *dispatch_queue_get_label(dispatch_queue_t queue);
#endif

void ld_async_f(void *queue, void *group, int barrier, void *context, ld_work_fn work) {
    dispatch_queue_t q = (dispatch_queue_t)queue;
    // (libdispatch has no function for a barrier in a group: callers do not ask for one.)
    if (group != NULL) {
        dispatch_group_async_f((dispatch_group_t)group, q, context, work);
    } else if (barrier) {
        dispatch_barrier_async_f(q, context, work);
    } else {
        dispatch_async_f(q, context, work);
    }
}

void ld_sync_f(void *queue, int barrier, void *context, ld_work_fn work) {
    if (barrier) {
        dispatch_barrier_sync_f((dispatch_queue_t)queue, context, work);
    } else {
        dispatch_sync_f((dispatch_queue_t)queue, context, work);
    }
}

const char *ld_queue_label(void *queue) { return dispatch_queue_get_label((dispatch_queue_t)queue); }

#if __has_include(<dispatch/dispatch.h>)
void *ld_main_queue_object(void) { return (void *)dispatch_get_main_queue(); }
#else
extern char _dispatch_main_q;  // what dispatch_get_main_queue() returns (a macro in the header)
void *ld_main_queue_object(void) { return &_dispatch_main_q; }
#endif
