// Four fields of liblua's lua_State and two of its CallInfo. The runtime sets `allowhook`, which Lua clears while a hook,
// a finalizer (`__gc`) or a message handler called from a hook runs, so that no hook fires
// there. An end (a time limit, `interrupt()`) sets it again, so that the code running there
// is ended as any other (switching.c): a `__gc` or an `xpcall` handler that never returns no
// longer outlives the limit. Lua has no API for it: its offset is Lua 5.4.4's (lstate.h, the
// version Debian's liblua5.4 and lua5.4 carry), checked once against a live state; if the
// check fails, nothing is written and such code runs on as under stock Lua. It reads
// `errorJmp`, the state's innermost protected call, to know that an error raised on the state
// has somewhere to go, and clears `errfunc`, that call's message handler, for an error raised
// without it (finalizers.c); both checked likewise, and never used if they do not match.
// It sets the trap of the innermost Lua call (`ci`, CallInfo's `trap` and `callstatus`), which
// lua_sethook sets on every call of the stack: a signal that finds the switch hook already on
// need not walk 300,000 calls (switching.c).
#include "ld_internals.h"

#include <lua5.4/lauxlib.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>

// lstate.h 5.4.4: struct lua_State { GCObject *next; lu_byte tt; lu_byte marked; lu_byte
// status; lu_byte allowhook; ... }.
enum { OFFSET_STATUS = sizeof(void *) + 2, OFFSET_ALLOWHOOK = sizeof(void *) + 3 };
// ... unsigned short nci; StkId top; global_State *l_G; CallInfo *ci; StkId stack_last, stack;
// UpVal *openupval; StkId tbclist; GCObject *gclist; struct lua_State *twups;
// struct lua_longjmp *errorJmp; ...: the eleventh pointer-sized word on LP64.
// CallInfo base_ci (8 pointer-sized words); volatile lua_Hook hook; ptrdiff_t errfunc.
enum { OFFSET_ERRORJMP = 11 * sizeof(void *), OFFSET_ERRFUNC = 21 * sizeof(void *) };

// ... CallInfo *ci: the fifth pointer-sized word. lstate.h's CallInfo: StkId func, top;
// CallInfo *previous, *next; union { struct { const Instruction *savedpc; volatile l_signalT
// trap; int nextraargs; } l; ... (24 bytes) } u; union { int ... } u2; short nresults;
// unsigned short callstatus. CIST_C: a C function's call; CIST_HOOKED: a hook runs in it.
enum { OFFSET_CI = 4 * sizeof(void *), OFFSET_BASE_CI = 12 * sizeof(void *) };
enum { CI_PREVIOUS = 2 * sizeof(void *), CI_TRAP = 5 * sizeof(void *), CI_CALLSTATUS = 8 * sizeof(void *) - 2 };
enum { CIST_C = 1 << 1, CIST_HOOKED = 1 << 3 };

static int layout_known, errorjmp_known, callinfo_known;
static int seen_callinfo;
static unsigned char seen_in_hook = 0xff;

static unsigned char byte_at(lua_State *L, size_t offset) { return *((volatile unsigned char *)L + offset); }

static char *current_call(lua_State *L) { return *(char *volatile *)((char *)L + OFFSET_CI); }
static char *previous_call(char *ci) { return *(char *volatile *)(ci + CI_PREVIOUS); }
static unsigned short call_status(char *ci) { return *(volatile unsigned short *)(ci + CI_CALLSTATUS); }
static volatile sig_atomic_t *trap_of(char *ci) { return (volatile sig_atomic_t *)(ci + CI_TRAP); }

static void probe_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    seen_in_hook = byte_at(L, OFFSET_ALLOWHOOK);
    // The chunk's call, called from C (base_ci), a hook running in it, its trap set.
    char *ci = current_call(L);
    seen_callinfo = ci != NULL && !(call_status(ci) & CIST_C) && (call_status(ci) & CIST_HOOKED) &&
                    *trap_of(ci) == 1 && previous_call(ci) == (char *)L + OFFSET_BASE_CI &&
                    (call_status((char *)L + OFFSET_BASE_CI) & CIST_C);
}

static int yielder(lua_State *L) { return lua_yield(L, 0); }

static void *error_jmp(lua_State *L) { return *(void *volatile *)((char *)L + OFFSET_ERRORJMP); }
static ptrdiff_t *errfunc(lua_State *L) { return (ptrdiff_t *)((char *)L + OFFSET_ERRFUNC); }

// In a protected call: errorJmp is the longjmp record of luaD_rawrunprotected, a frame between
// the caller of lua_pcall and this function (the stack grows down on every platform the
// runtime builds for); errfunc, the message handler's place, is its offset from the stack's
// base, one slot (16 bytes) for the handler at index 1 of the main thread.
static void *volatile seen_jmp;
static char *volatile seen_below;
static volatile ptrdiff_t seen_errfunc;
static int probe_protected(lua_State *L) {
    char here;
    seen_jmp = error_jmp(L);
    seen_below = &here;
    seen_errfunc = *errfunc(L);
    return 0;
}

static int probe_errorjmp(lua_State *L) {
    char above;
    if (sizeof(void *) != 8 || error_jmp(L) != NULL || *errfunc(L) != 0) return 0;
    lua_settop(L, 0);
    lua_pushcfunction(L, yielder);  // the message handler, never called
    lua_pushcfunction(L, probe_protected);
    if (lua_pcall(L, 0, 0, 1) != LUA_OK) return 0;
    char *jmp = seen_jmp;
    return jmp != NULL && jmp > seen_below && jmp < &above && error_jmp(L) == NULL && seen_errfunc == 16 &&
           *errfunc(L) == 0;
}

static void probe(void) {
    lua_State *L = luaL_newstate();
    if (L == NULL) return;
    int ok = byte_at(L, OFFSET_ALLOWHOOK) == 1 && byte_at(L, OFFSET_STATUS) == LUA_OK;
    // In a hook: 0; after it: 1 again.
    lua_sethook(L, probe_hook, LUA_MASKCOUNT, 1);
    ok = ok && luaL_loadstring(L, "local a = 1 for i = 1, 3 do a = a + i end") == LUA_OK && lua_pcall(L, 0, 0, 0) == LUA_OK;
    lua_sethook(L, NULL, 0, 0);
    ok = ok && seen_in_hook == 0 && byte_at(L, OFFSET_ALLOWHOOK) == 1;
    // The status byte next to it follows lua_status (a suspended coroutine: LUA_YIELD).
    lua_State *co = lua_newthread(L);
    lua_pushcfunction(co, yielder);
    int n = 0;
    ok = ok && lua_resume(co, L, 0, &n) == LUA_YIELD && lua_status(co) == LUA_YIELD &&
         byte_at(co, OFFSET_STATUS) == LUA_YIELD && byte_at(co, OFFSET_ALLOWHOOK) == 1;
    errorjmp_known = ok && probe_errorjmp(L);
    // Outside the chunk, the current call is the base one (C) again.
    callinfo_known = ok && seen_callinfo && current_call(L) == (char *)L + OFFSET_BASE_CI;
    lua_close(L);
    layout_known = ok;
}

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

int ld_internals_init(void) {
    pthread_once(&probe_once, probe);
    return layout_known;
}

void ld_allow_hooks(lua_State *L) {
    if (layout_known && L != NULL) *((volatile unsigned char *)L + OFFSET_ALLOWHOOK) = 1;
}

const void *ld_protected_call(lua_State *L) { return errorjmp_known && L != NULL ? error_jmp(L) : NULL; }

void ld_drop_message_handler(lua_State *L) {
    if (errorjmp_known) *errfunc(L) = 0;
}

int ld_retrap_innermost_lua_call(lua_State *L) {
    if (!callinfo_known || L == NULL) return 0;
    // C calls above it are few (LUAI_MAXCCALLS bounds them): past this many, do it Lua's way.
    char *ci = current_call(L);
    for (int i = 0; ci != NULL && i < 256; i++, ci = previous_call(ci)) {
        if (!(call_status(ci) & CIST_C)) {
            *trap_of(ci) = 1;
            return 1;
        }
    }
    return 0;
}
