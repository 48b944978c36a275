// io.write and file:write: Lua 5.4.4's liolib.c (Copyright (C) 1994-2022 Lua.org, PUC-Rio, MIT
// licence: the notice is in stream.h), with one change. On a descriptor that can block (a full
// pipe), what is written goes to stdio in pieces such that each write(2) stdio makes is at most
// PIPE_BUF bytes, and before each the call waits without the interpreter until the descriptor
// takes them (POLLOUT: a pipe then has room for PIPE_BUF bytes). Regular files are written
// exactly as liolib writes them.
#define _GNU_SOURCE
#include "stream.h"

#include <limits.h>
#include <poll.h>
#include <string.h>

#include "ld_terminal.h"

static void (*terminal_begin)(void);
static void (*terminal_end)(int ended_line);

void ld_set_terminal_hooks(void (*begin)(void), void (*end)(int ended_line)) {
    terminal_begin = begin;
    terminal_end = end;
}

/// fwrite(str, 1, k, f) of `s`, between the terminal hooks if it writes to the REPL's terminal.
static size_t put(ld_stream *s, const char *str, size_t k) {
    FILE *f = s->p->f;
    if (!s->terminal || terminal_begin == NULL) return fwrite(str, sizeof(char), k, f);
    terminal_begin();
    size_t n = fwrite(str, sizeof(char), k, f);
    terminal_end(k > 0 && str[k - 1] == '\n');
    return n;
}

/// How much of `l` bytes to hand to stdio at once so that it makes at most one write(2) of at
/// most PIPE_BUF bytes (the buffer's content included); 0 when the buffer must be flushed first.
static size_t piece(FILE *f, size_t l) {
    size_t cap = PIPE_BUF, pending = 0;
    if (f->_flags & LD_IO_UNBUFFERED) return l < cap ? l : cap;
    if (f->_IO_buf_base != NULL) {
        size_t size = (size_t)(f->_IO_buf_end - f->_IO_buf_base);
        if (size < cap) cap = size;
        if (f->_flags & LD_IO_CURRENTLY_PUTTING) pending = (size_t)(f->_IO_write_ptr - f->_IO_write_base);
    }
    if (pending >= cap) return 0;
    return l < cap - pending ? l : cap - pending;
}

/// Whether stdio may write(2) when handed `k` bytes (a piece): unbuffered, a line with a
/// newline, a buffer not set up yet (glibc writes a whole buffer's worth directly). A stream
/// that cannot be written fails at once.
static int may_write(FILE *f, const char *str, size_t k) {
    if (f->_flags & LD_IO_NO_WRITES) return 0;
    if (f->_flags & LD_IO_UNBUFFERED) return 1;
    if (f->_IO_buf_base == NULL || !(f->_flags & LD_IO_CURRENTLY_PUTTING)) return 1;
    return (f->_flags & LD_IO_LINE_BUF) && memchr(str, '\n', k) != NULL;
}

/// fwrite(str, 1, l, f) == l, waiting without the interpreter before each write(2) that the
/// descriptor would not take at once.
static int write_bytes(ld_stream *s, const char *str, size_t l) {
    while (l > 0) {
        FILE *f = s->p->f;
        if (s->kind == LD_KIND_NEVER) return put(s, str, l) == l;
        size_t k = piece(f, l);
        if (k == 0 || may_write(f, str, k)) {
            if (s->kind == LD_KIND_UNKNOWN) {
                s->kind = ld_stream_kind(f);
                continue;
            }
            int waited = ld_fd_wait(s->L, fileno(f), POLLOUT);
            if (waited != 0) {
                // Look again: another block may have closed the file, or written to it.
                ld_stream_check_open(s);
                if (waited < 0) return 0; /* Ctrl-C: fails as write(2) would have (EINTR) */
                continue;
            }
            if (k == 0) {
                if (fflush(f) != 0) return 0;
                continue;
            }
        }
        if (put(s, str, k) != k) return 0;
        str += k;
        l -= k;
    }
    return 1;
}

/// A number as liolib's fprintf writes it; its result (the length, or negative on failure).
static int write_number(lua_State *L, ld_stream *s, int arg) {
    if (s->kind == LD_KIND_NEVER && !s->terminal) {
        FILE *f = s->p->f;
        return lua_isinteger(L, arg) ? fprintf(f, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, arg))
                                     : fprintf(f, LUA_NUMBER_FMT, (LUAI_UACNUMBER)lua_tonumber(L, arg));
    }
    char buff[64];
    int len = lua_isinteger(L, arg) ? snprintf(buff, sizeof buff, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, arg))
                                    : snprintf(buff, sizeof buff, LUA_NUMBER_FMT, (LUAI_UACNUMBER)lua_tonumber(L, arg));
    if (len < 0 || (size_t)len >= sizeof buff) return -1;
    return write_bytes(s, buff, (size_t)len) ? len : -1;
}

// MARK: WRITE (liolib.c)

static int g_write(lua_State *L, ld_stream *s, int arg) {
    int nargs = lua_gettop(L) - arg;
    int status = 1;
    for (; nargs--; arg++) {
        if (lua_type(L, arg) == LUA_TNUMBER) {
            /* optimization: could be done exactly as for strings */
            int len = write_number(L, s, arg);
            status = status && (len > 0);
        } else {
            size_t l;
            const char *str = luaL_checklstring(L, arg, &l);
            status = status && write_bytes(s, str, l);
        }
    }
    if (status) return 1; /* file handle already on stack top */
    else return luaL_fileresult(L, status, NULL);
}

/// A stream `p` written by one call; `terminal` when it is stdout or stderr while the REPL's
/// terminal hooks are set.
static ld_stream output(lua_State *L, LStream *p) {
    ld_stream s = {L, p, LD_KIND_UNKNOWN, terminal_begin != NULL && (p->f == stdout || p->f == stderr)};
    return s;
}

int ld_stdlib_io_write(lua_State *L) {
    ld_stream s = output(L, ld_getiostream(L, IO_OUTPUT));
    return g_write(L, &s, 1);
}

int ld_stdlib_f_write(lua_State *L) {
    ld_stream s = output(L, ld_tostream(L));
    lua_pushvalue(L, 1); /* push file at the stack top (to be returned) */
    return g_write(L, &s, 2);
}
