// coroutine.resume, coroutine.wrap and coroutine.close from lcorolib.c (Lua 5.4.4, Copyright (C)
// 1994-2022 Lua.org, PUC-Rio, MIT licence), with one change: the coroutine is on this thread's
// stack of running states (switching.c) while it runs, so that a switch hooks the code that
// actually runs. Results and messages are lcorolib's.
#include "ld_control.h"

static const char *const statname[] = {"running", "dead", "suspended", "normal"};

enum { COS_RUN, COS_DEAD, COS_YIELD, COS_NORM };

static lua_State *getco(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co, 1, "thread");
    return co;
}

static int auxstatus(lua_State *L, lua_State *co) {
    if (L == co) return COS_RUN;
    switch (lua_status(co)) {
    case LUA_YIELD:
        return COS_YIELD;
    case LUA_OK: {
        lua_Debug ar;
        if (lua_getstack(co, 0, &ar)) return COS_NORM;  // it has frames: it is running
        if (lua_gettop(co) == 0) return COS_DEAD;
        return COS_YIELD;  // initial state
    }
    default:  // some error occurred
        return COS_DEAD;
    }
}

// Resumes a coroutine: the number of results, or -1 for errors.
static int auxresume(lua_State *L, lua_State *co, int narg) {
    int status, nres;
    if (!lua_checkstack(co, narg)) {
        lua_pushliteral(L, "too many arguments to resume");
        return -1;
    }
    lua_xmove(L, co, narg);
    ld_running_push(co);
    status = lua_resume(co, L, narg, &nres);
    ld_running_pop();
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nres + 1)) {
            lua_pop(co, nres);
            lua_pushliteral(L, "too many results to resume");
            return -1;
        }
        lua_xmove(co, L, nres);
        return nres;
    }
    lua_xmove(co, L, 1);  // the error message
    return -1;
}

int ld_coroutine_resume(lua_State *L) {
    lua_State *co = getco(L);
    int r = auxresume(L, co, lua_gettop(L) - 1);
    if (r < 0) {
        lua_pushboolean(L, 0);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -(r + 1));
    return r + 1;
}

/// Closes `co`'s to-be-closed variables (which run on `co`).
static int reset(lua_State *co) {
    ld_running_push(co);
    int status = lua_resetthread(co);
    ld_running_pop();
    return status;
}

static int auxwrap(lua_State *L) {
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    int r = auxresume(L, co, lua_gettop(L));
    if (r < 0) {
        int stat = lua_status(co);
        if (stat != LUA_OK && stat != LUA_YIELD) {  // an error in the coroutine
            stat = reset(co);
            lua_xmove(co, L, 1);
        }
        if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
            luaL_where(L, 1);
            lua_insert(L, -2);
            lua_concat(L, 2);
        }
        return lua_error(L);
    }
    return r;
}

int ld_coroutine_wrap(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *NL = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, NL, 1);
    lua_pushcclosure(L, auxwrap, 1);
    return 1;
}

int ld_coroutine_close(lua_State *L) {
    lua_State *co = getco(L);
    int status = auxstatus(L, co);
    switch (status) {
    case COS_DEAD:
    case COS_YIELD:
        status = reset(co);
        if (status == LUA_OK) {
            lua_pushboolean(L, 1);
            return 1;
        }
        lua_pushboolean(L, 0);
        lua_xmove(co, L, 1);
        return 2;
    default:
        return luaL_error(L, "cannot close a %s coroutine", statname[status]);
    }
}
