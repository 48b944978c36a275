// Resident memory that follows the memory limit (`--memory-limit`).
#include <malloc.h>
#include "luacli.h"

void ldcli_return_freed_memory(void) {
    // glibc raises its mmap threshold to the size of each big block freed (up to 32 MiB); past
    // that, such blocks come from the heap and stay resident once freed, so a script's big
    // strings and copies kept the process 30 MiB or more above what the limit counts. A fixed
    // threshold gives every block of 128 KiB or more back to the system when it is freed.
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
}
