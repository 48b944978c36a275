// A plain mutex (ld_platform.h).
#include "ld_platform.h"

#include <pthread.h>
#include <stdlib.h>

// MARK: a plain mutex (pthread, seen by ThreadSanitizer), without ld_lock's bookkeeping

ld_mutex *ld_mutex_new(void) {
    pthread_mutex_t *m = malloc(sizeof *m);
    pthread_mutex_init(m, NULL);
    return (ld_mutex *)m;
}

void ld_mutex_free(ld_mutex *m) {
    pthread_mutex_destroy((pthread_mutex_t *)m);
    free(m);
}

void ld_mutex_lock(ld_mutex *m) { pthread_mutex_lock((pthread_mutex_t *)m); }
void ld_mutex_unlock(ld_mutex *m) { pthread_mutex_unlock((pthread_mutex_t *)m); }

