// See ld_nesting.h.
#include "ld_nesting.h"
#include "ld_platform.h"

#include <stdint.h>

static __thread int depth;
// The lowest address nested Lua code may start at: the stack's end plus a reserve for one level
// of Lua's own nesting (up to LUAI_MAXCCALLS C calls) and the runtime's frames around it.
static __thread char *low;

static char *low_mark(void) {
    if (low != NULL) return low;
    char here;
    size_t size = 0;
    void *addr = NULL;
    ld_thread_stack(&addr, &size);
    char *top = (char *)addr + size;
    if (addr == NULL || size == 0 || &here < (char *)addr || &here > top) {
        low = (char *)1;  // unknown: the depth bound alone applies
        return low;
    }
    // An unlimited main-thread stack is reported as huge; count 8 MiB, the usual default.
    if (size > ((size_t)64 << 20)) {
        size = (size_t)8 << 20;
        addr = top - size;
    }
    size_t reserve = size / 4 < ((size_t)1 << 20) ? size / 4 : ((size_t)1 << 20);
    low = (char *)addr + reserve;
    return low;
}

long ld_stack_room(void) {
    char here;
    return (long)(&here - low_mark());
}

int ld_nest_allowed(void) { return depth < LD_MAX_NESTING && ld_stack_room() > 0; }

int ld_nest_enter(void) {
    if (!ld_nest_allowed()) return 0;
    depth++;
    return 1;
}

void ld_nest_leave(void) {
    if (depth > 0) depth--;
}
