// io.read, file:read, io.lines, file:lines: Lua 5.4.4's liolib.c (Copyright (C) 1994-2022
// Lua.org, PUC-Rio, MIT licence: the notice is in stream.h), with one change. Before stdio would
// read(2) from a descriptor that can block (its buffer empty), the call waits for input without
// the interpreter; and on such a descriptor it takes what has arrived instead of looping in
// fread until it has all it asked for. Regular files are read exactly as liolib reads them.
#define _GNU_SOURCE
#include "stream.h"

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <string.h>

#define l_getc(f) getc_unlocked(f)
#define l_lockfile(f) flockfile(f)
#define l_unlockfile(f) funlockfile(f)

/// Whether the next getc on `f` could block: then the call waits first (ld_ready_to_read).
static inline int must_wait(ld_stream *s, FILE *f) {
    return s->kind != LD_KIND_NEVER && ld_buffered_input(f) == 0;
}

/// Up to `n` bytes from `f`, ready to read: what its buffer holds, or what one read(2) brings.
/// 0 at the end of the stream or on an error.
static size_t read_available(FILE *f, char *p, size_t n) {
    size_t avail = ld_buffered_input(f);
    if (avail == 0) {
        int c = getc(f);
        if (c == EOF) return 0;
        p[0] = (char)c;
        avail = ld_buffered_input(f);
        return 1 + fread(p + 1, sizeof(char), n - 1 < avail ? n - 1 : avail, f);
    }
    return fread(p, sizeof(char), n < avail ? n : avail, f);
}

// MARK: READ (liolib.c)

/* maximum length of a numeral */
#if !defined(L_MAXLENNUM)
#define L_MAXLENNUM 200
#endif

/* auxiliary structure used by 'read_number' */
typedef struct {
    ld_stream *s; /* stream being read */
    FILE *f;      /* its file */
    int c;        /* current character (look ahead) */
    int n;        /* number of elements in buffer 'buff' */
    char buff[L_MAXLENNUM + 1]; /* +1 for ending '\0' */
} RN;

/// The next character, waiting for it first (with the file unlocked) if it could block.
static int rn_getc(RN *rn) {
    if (must_wait(rn->s, rn->f)) {
        l_unlockfile(rn->f);
        int interrupted = ld_ready_to_read(rn->s) == NULL;  /* the same FILE: it is still open */
        l_lockfile(rn->f);
        if (interrupted) return EOF;
    }
    return l_getc(rn->f);
}

/*
** Add current char to buffer (if not out of space) and read next one
*/
static int nextc(RN *rn) {
    if (rn->n >= L_MAXLENNUM) { /* buffer overflow? */
        rn->buff[0] = '\0';     /* invalidate result */
        return 0;               /* fail */
    } else {
        rn->buff[rn->n++] = rn->c; /* save current char */
        rn->c = rn_getc(rn);       /* read next one */
        return 1;
    }
}

/*
** Accept current char if it is in 'set' (of size 2)
*/
static int test2(RN *rn, const char *set) {
    if (rn->c == set[0] || rn->c == set[1]) return nextc(rn);
    else return 0;
}

/*
** Read a sequence of (hex)digits
*/
static int readdigits(RN *rn, int hex) {
    int count = 0;
    while ((hex ? isxdigit(rn->c) : isdigit(rn->c)) && nextc(rn)) count++;
    return count;
}

/*
** Read a number: first reads a valid prefix of a numeral into a buffer.
** Then it calls 'lua_stringtonumber' to check whether the format is
** correct and to convert it to a Lua number.
*/
static int read_number(lua_State *L, ld_stream *s) {
    RN rn;
    int count = 0;
    int hex = 0;
    char decp[2];
    rn.s = s;
    rn.f = s->p->f;
    rn.n = 0;
    decp[0] = lua_getlocaledecpoint(); /* get decimal point from locale */
    decp[1] = '.';                     /* always accept a dot */
    l_lockfile(rn.f);
    do {
        rn.c = rn_getc(&rn);
    } while (isspace(rn.c)); /* skip spaces */
    test2(&rn, "-+");        /* optional sign */
    if (test2(&rn, "00")) {
        if (test2(&rn, "xX")) hex = 1; /* numeral is hexadecimal */
        else count = 1;                /* count initial '0' as a valid digit */
    }
    count += readdigits(&rn, hex); /* integral part */
    if (test2(&rn, decp))          /* decimal point? */
        count += readdigits(&rn, hex); /* fractional part */
    if (count > 0 && test2(&rn, (hex ? "pP" : "eE"))) { /* exponent mark? */
        test2(&rn, "-+");  /* exponent sign */
        readdigits(&rn, 0); /* exponent digits */
    }
    ungetc(rn.c, rn.f); /* unread look-ahead char */
    l_unlockfile(rn.f);
    rn.buff[rn.n] = '\0'; /* finish string */
    if (lua_stringtonumber(L, rn.buff)) return 1; /* ok, it is a valid number */
    else {               /* invalid format */
        lua_pushnil(L);  /* "result" to be removed */
        return 0;        /* read fails */
    }
}

static int test_eof(lua_State *L, ld_stream *s) {
    FILE *f = ld_ready_to_read(s);
    int c = f != NULL ? getc(f) : EOF;
    if (f != NULL) ungetc(c, f); /* no-op when c == EOF */
    lua_pushliteral(L, "");
    return (c != EOF);
}

static int read_line(lua_State *L, ld_stream *s, int chop) {
    luaL_Buffer b;
    int c;
    luaL_buffinit(L, &b);
    do { /* may need to read several chunks to get whole line */
        char *buff = luaL_prepbuffer(&b); /* preallocate buffer space */
        int i = 0;
        FILE *f = ld_ready_to_read(s);
        if (f == NULL) { /* interrupted */
            c = EOF;
            break;
        }
        l_lockfile(f); /* no memory errors can happen inside the lock */
        /* Up to end of line or buffer limit, from stdio's buffer a run at a time. Where a read
           could block, one read(2) per wait: ld_ready_to_read has made sure it does not. */
        int refill = 1;
        c = 0;
        while (i < LUAL_BUFFERSIZE) {
            if (f->_IO_read_ptr >= f->_IO_read_end) {
                if (!refill && s->kind != LD_KIND_NEVER) break; /* wait first */
                refill = 0;
                if ((c = l_getc(f)) == EOF || c == '\n') break; /* fills stdio's buffer */
                buff[i++] = (char)c;
                continue;
            }
            size_t avail = (size_t)(f->_IO_read_end - f->_IO_read_ptr);
            size_t n = (size_t)(LUAL_BUFFERSIZE - i) < avail ? (size_t)(LUAL_BUFFERSIZE - i) : avail;
            const char *from = f->_IO_read_ptr;
            const char *nl = memchr(from, '\n', n);
            size_t take = nl != NULL ? (size_t)(nl - from) : n;
            memcpy(buff + i, from, take);
            i += (int)take;
            f->_IO_read_ptr += take + (nl != NULL); /* as getc_unlocked advances it */
            if (nl != NULL) {
                c = '\n';
                break;
            }
        }
        l_unlockfile(f);
        luaL_addsize(&b, i);
    } while (c != EOF && c != '\n'); /* repeat until end of line */
    if (!chop && c == '\n') /* want a newline and have one? */
        luaL_addchar(&b, c); /* add ending newline to result */
    luaL_pushresult(&b);     /* close buffer */
    /* return ok if read something (either a newline or something else) */
    return (c == '\n' || lua_rawlen(L, -1) > 0);
}

static void read_all(lua_State *L, ld_stream *s) {
    size_t nr;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    do { /* read file in chunks of LUAL_BUFFERSIZE bytes */
        char *p = luaL_prepbuffer(&b);
        FILE *f = ld_ready_to_read(s);
        if (f == NULL) break; /* interrupted */
        if (s->kind == LD_KIND_NEVER) nr = fread(p, sizeof(char), LUAL_BUFFERSIZE, f);
        else nr = read_available(f, p, LUAL_BUFFERSIZE);
        luaL_addsize(&b, nr);
    } while (s->kind == LD_KIND_NEVER ? nr == LUAL_BUFFERSIZE : nr > 0);
    luaL_pushresult(&b); /* close buffer */
}

static int read_chars(lua_State *L, ld_stream *s, size_t n) {
    size_t nr = 0; /* number of chars actually read */
    char *p;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    p = luaL_prepbuffsize(&b, n); /* prepare buffer to read whole block */
    while (nr < n) {
        FILE *f = ld_ready_to_read(s);
        if (f == NULL) break; /* interrupted */
        if (s->kind == LD_KIND_NEVER) {
            nr += fread(p + nr, sizeof(char), n - nr, f); /* try to read 'n' chars */
            break;
        }
        size_t got = read_available(f, p + nr, n - nr);
        if (got == 0) break;
        nr += got;
    }
    luaL_addsize(&b, nr);
    luaL_pushresult(&b); /* close buffer */
    return (nr > 0);     /* true iff read something */
}

static int g_read(lua_State *L, ld_stream *s, int first) {
    int nargs = lua_gettop(L) - 1;
    int n, success;
    clearerr(s->p->f);
    if (nargs == 0) { /* no arguments? */
        success = read_line(L, s, 1);
        n = first + 1; /* to return 1 result */
    } else {
        /* ensure stack space for all results and for auxlib's buffer */
        luaL_checkstack(L, nargs + LUA_MINSTACK, "too many arguments");
        success = 1;
        for (n = first; nargs-- && success; n++) {
            if (lua_type(L, n) == LUA_TNUMBER) {
                size_t l = (size_t)luaL_checkinteger(L, n);
                success = (l == 0) ? test_eof(L, s) : read_chars(L, s, l);
            } else {
                const char *p = luaL_checkstring(L, n);
                if (*p == '*') p++; /* skip optional '*' (for compatibility) */
                switch (*p) {
                case 'n': /* number */
                    success = read_number(L, s);
                    break;
                case 'l': /* line */
                    success = read_line(L, s, 1);
                    break;
                case 'L': /* line with end-of-line */
                    success = read_line(L, s, 0);
                    break;
                case 'a':         /* file */
                    read_all(L, s); /* read entire file */
                    success = 1;    /* always success */
                    break;
                default:
                    return luaL_argerror(L, n, "invalid format");
                }
            }
        }
    }
    if (ferror(s->p->f)) return luaL_fileresult(L, 0, NULL);
    if (!success) {
        lua_pop(L, 1);     /* remove last result */
        luaL_pushfail(L); /* push nil instead */
    }
    return n - first;
}

int ld_stdlib_io_read(lua_State *L) {
    ld_stream s = {L, ld_getiostream(L, IO_INPUT), LD_KIND_UNKNOWN};
    return g_read(L, &s, 1);
}

int ld_stdlib_f_read(lua_State *L) {
    ld_stream s = {L, ld_tostream(L), LD_KIND_UNKNOWN};
    return g_read(L, &s, 2);
}

// MARK: LINES (liolib.c)

/*
** Calls the 'close' function from a file handle.
*/
static int aux_close(lua_State *L) {
    LStream *p = tolstream(L);
    volatile lua_CFunction cf = p->closef;
    p->closef = NULL; /* mark stream as closed */
    return (*cf)(L);  /* close it */
}

/*
** function to close regular files
*/
static int io_fclose(lua_State *L) {
    LStream *p = tolstream(L);
    int res = fclose(p->f);
    return luaL_fileresult(L, (res == 0), NULL);
}

static void opencheck(lua_State *L, const char *fname, const char *mode) {
    LStream *p = (LStream *)lua_newuserdatauv(L, sizeof(LStream), 0); /* newfile */
    p->closef = NULL; /* mark file handle as 'closed' */
    luaL_setmetatable(L, LUA_FILEHANDLE);
    p->f = NULL;
    p->closef = &io_fclose;
    p->f = fopen(fname, mode);
    if (p->f == NULL) luaL_error(L, "cannot open file '%s' (%s)", fname, strerror(errno));
}

/*
** Iteration function for 'lines'.
*/
static int io_readline(lua_State *L) {
    LStream *p = (LStream *)lua_touserdata(L, lua_upvalueindex(1));
    int i;
    int n = (int)lua_tointeger(L, lua_upvalueindex(2));
    if (isclosed(p)) /* file is already closed? */
        return luaL_error(L, "file is already closed");
    lua_settop(L, 1);
    luaL_checkstack(L, n, "too many arguments");
    for (i = 1; i <= n; i++) /* push arguments to 'g_read' */
        lua_pushvalue(L, lua_upvalueindex(3 + i));
    ld_stream s = {L, p, LD_KIND_UNKNOWN};
    n = g_read(L, &s, 2);     /* 'n' is number of results */
    if (lua_toboolean(L, -n)) /* read at least one value? */
        return n;             /* return them */
    else {                    /* first result is false: EOF or error */
        if (n > 1) {          /* is there error information? */
            /* 2nd result is error message */
            return luaL_error(L, "%s", lua_tostring(L, -n + 1));
        }
        if (lua_toboolean(L, lua_upvalueindex(3))) { /* generator created file? */
            lua_settop(L, 0);                        /* clear stack */
            lua_pushvalue(L, lua_upvalueindex(1));   /* push file at index 1 */
            aux_close(L);                            /* close it */
        }
        return 0;
    }
}

/*
** maximum number of arguments to 'f:lines'/'io.lines' (it + 3 must fit
** in the limit for upvalues of a closure)
*/
#define MAXARGLINE 250

/*
** Auxiliary function to create the iteration function for 'lines'.
** The iteration function is a closure over 'io_readline', with
** the following upvalues:
** 1) The file being read (first value in the stack)
** 2) the number of arguments to read
** 3) a boolean, true iff file has to be closed when finished ('toclose')
** *) a variable number of format arguments (rest of the stack)
*/
static void aux_lines(lua_State *L, int toclose) {
    int n = lua_gettop(L) - 1; /* number of arguments to read */
    luaL_argcheck(L, n <= MAXARGLINE, MAXARGLINE + 2, "too many arguments");
    lua_pushvalue(L, 1);        /* file */
    lua_pushinteger(L, n);      /* number of arguments to read */
    lua_pushboolean(L, toclose); /* close/not close file when finished */
    lua_rotate(L, 2, 3);        /* move the three values to their positions */
    lua_pushcclosure(L, io_readline, 3 + n);
}

int ld_stdlib_f_lines(lua_State *L) {
    ld_tostream(L); /* check that it's a valid file handle */
    aux_lines(L, 0);
    return 1;
}

/*
** Return an iteration function for 'io.lines'. If file has to be
** closed, also returns the file itself as a second result (to be
** closed as the state at the exit of a generic for).
*/
int ld_stdlib_io_lines(lua_State *L) {
    int toclose;
    if (lua_isnone(L, 1)) lua_pushnil(L); /* at least one argument */
    if (lua_isnil(L, 1)) {                /* no file name? */
        lua_getfield(L, LUA_REGISTRYINDEX, IO_INPUT); /* get default input */
        lua_replace(L, 1);                            /* put it at index 1 */
        ld_tostream(L); /* check that it's a valid file handle */
        toclose = 0;    /* do not close it after iteration */
    } else {            /* open a new file */
        const char *filename = luaL_checkstring(L, 1);
        opencheck(L, filename, "r");
        lua_replace(L, 1); /* put file at index 1 */
        toclose = 1;       /* close it after iteration */
    }
    aux_lines(L, toclose); /* push iteration function */
    if (toclose) {
        lua_pushnil(L);      /* state */
        lua_pushnil(L);      /* control */
        lua_pushvalue(L, 1); /* file is the to-be-closed variable (4th result) */
        return 4;
    } else
        return 1;
}
