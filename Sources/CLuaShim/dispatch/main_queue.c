// Servicing the main queue from the main thread without Foundation's run loop (ld_dispatch.h).
#include "ld_dispatch.h"

#include <stdint.h>
#include <unistd.h>

// libdispatch's hooks for a host run loop (what CoreFoundation's run loop uses on Linux): the
// main queue's eventfd becomes readable when the queue has work, and the callback drains it.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *msg);

int ld_main_queue_handle(void) { return _dispatch_get_main_queue_handle_4CF(); }

void ld_main_queue_drain(void) {
    uint64_t value;
    ssize_t n = read(_dispatch_get_main_queue_handle_4CF(), &value, sizeof value);
    (void)n;
    _dispatch_main_queue_callback_4CF(NULL);
}
