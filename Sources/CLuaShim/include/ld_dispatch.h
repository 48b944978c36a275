// libdispatch's C functions, which Swift's Dispatch does not expose on Linux (dispatch/blocks.c,
// dispatch/main_queue.c).
#ifndef LD_DISPATCH_H
#define LD_DISPATCH_H



/// A work function for ld_async_f: called once with the context pointer.
typedef void (*ld_work_fn)(void *context);

/// dispatch_async_f onto `queue` (a dispatch_queue_t), or dispatch_barrier_async_f when
/// `barrier`, or dispatch_group_async_f when `group` (a dispatch_group_t) is not NULL (not
/// both: libdispatch has no function for a barrier in a group).
void ld_async_f(void *queue, void *group, int barrier, void *context, ld_work_fn work);

/// dispatch_sync_f onto `queue`, or dispatch_barrier_sync_f when `barrier`: runs `work` on the
/// calling thread as a block of the queue, with no block object made.
void ld_sync_f(void *queue, int barrier, void *context, ld_work_fn work);

/// dispatch_queue_get_label: used to check that a queue pointer is the one expected.
const char *ld_queue_label(void *queue);

/// The main queue's C object (dispatch_get_main_queue()).
void *ld_main_queue_object(void);

/// The main queue's eventfd (readable when the main queue has work), and running what is
/// ready on it: how the main thread services the main queue without Foundation's run loop.
int ld_main_queue_handle(void);
void ld_main_queue_drain(void);

#endif
