// io.popen, the closing of its files, and os.execute: Lua 5.4.4's liolib.c and loslib.c
// (Copyright (C) 1994-2022 Lua.org, PUC-Rio, MIT licence: the notice is in stream.h), with the
// interpreter released while popen starts the command (after flushing every stream, which may
// wait on a full pipe), while pclose waits for it to end, and while system runs it.
#define _GNU_SOURCE
#include "stream.h"

#include <errno.h>
#include <stdlib.h>

/* By default, Lua accepts only "r" or "w" as valid modes */
#define l_checkmodep(m) ((m[0] == 'r' || m[0] == 'w') && m[1] == '\0')

/*
** function to close 'popen' files
*/
static int io_pclose(lua_State *L) {
    LStream *p = tolstream(L);
    FILE *f = p->f; /* the handle is marked closed already: no other block uses it */
    void *released = ld_blocking_release(L);
    errno = 0;
    int stat = pclose(f);
    ld_blocking_retake(released); /* keeps errno */
    return luaL_execresult(L, stat);
}

int ld_stdlib_io_popen(lua_State *L) {
    const char *filename = luaL_checkstring(L, 1);
    const char *mode = luaL_optstring(L, 2, "r");
    LStream *p = (LStream *)lua_newuserdatauv(L, sizeof(LStream), 0); /* newprefile */
    p->closef = NULL; /* mark file handle as 'closed' */
    luaL_setmetatable(L, LUA_FILEHANDLE);
    luaL_argcheck(L, l_checkmodep(mode), 2, "invalid mode");
    void *released = ld_blocking_release(L);
    FILE *f = (fflush(NULL), popen(filename, mode));
    ld_blocking_retake(released); /* keeps errno */
    p->f = f;
    p->closef = &io_pclose;
    return (p->f == NULL) ? luaL_fileresult(L, 0, filename) : 1;
}

int ld_stdlib_os_execute(lua_State *L) {
    const char *cmd = luaL_optstring(L, 1, NULL);
    int stat;
    void *released = ld_blocking_release(L);
    errno = 0;
    stat = system(cmd); /* system(NULL) runs a shell too */
    ld_blocking_retake(released);
    if (cmd != NULL) return luaL_execresult(L, stat);
    else {
        lua_pushboolean(L, stat); /* true if there is a shell */
        return 1;
    }
}
