// Waiting for a stream before a read that would block (stream.h).
#define _GNU_SOURCE
#include "stream.h"

#include <errno.h>
#include <poll.h>
#include <sys/stat.h>

int ld_stream_kind(FILE *f) {
    int saved = errno;
    struct stat st;
    int fd = fileno(f);
    int kind = LD_KIND_NEVER;
    if (fd >= 0 && fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode)))
        kind = LD_KIND_MAY_BLOCK;
    errno = saved;
    return kind;
}

void ld_stream_check_open(ld_stream *s) {
    if (isclosed(s->p)) luaL_error(s->L, "attempt to use a closed file");
}

FILE *ld_ready_to_read(ld_stream *s) {
    for (;;) {
        FILE *f = s->p->f;
        // Nothing to wait for: buffered bytes; a stream that cannot be read or is at its end
        // (glibc answers EOF without reading again).
        if (s->kind == LD_KIND_NEVER || ld_buffered_input(f) > 0 || (f->_flags & (LD_IO_NO_READS | LD_IO_EOF_SEEN)))
            return f;
        if (s->kind == LD_KIND_UNKNOWN) {
            s->kind = ld_stream_kind(f);
            continue;
        }
        int waited = ld_fd_wait(s->L, fileno(f), POLLIN);
        if (waited == 0) return f;
        // Look again: another block may have closed the file, or read what arrived.
        ld_stream_check_open(s);
        if (waited < 0) { /* Ctrl-C: the read fails, as read(2) would have (errno EINTR) */
            s->p->f->_flags |= _IO_ERR_SEEN;
            return NULL;
        }
    }
}
