// Ctrl-C as lua.c handles it: the signal handler only sets a hook on the main Lua thread, and
// the hook raises "interrupted!" at the next instruction. A wait the main thread is parked in
// runs no instruction, so the handler also writes to an eventfd that the runtime watches.
#define _GNU_SOURCE
#include "ld_control.h"
#include "ld_events.h"
#include "ld_platform.h"
#include "ld_threads.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

static lua_State *volatile interrupt_L;
static volatile int interrupt_fd = -1;
// Set by the handler, cleared by whichever of the hook, a wait or the eventfd reader acts first.
// Read by the carried libraries' end checks too (Sources/CLuaStdlib/steps.h).
atomic_int ld_interrupt_unhandled;
#define interrupt_unhandled ld_interrupt_unhandled

static void setsignal(int sig, void (*handler)(int)) {
    if (ld_signal_watched(sig)) return;  // a signal source owns it now (events.c)
    struct sigaction sa;
    sa.sa_handler = handler;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void lstop(lua_State *L, lua_Debug *ar) {
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    atomic_store(&interrupt_unhandled, 0);
    luaL_error(L, "interrupted!");
}

static void laction(int i) {
    int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
    setsignal(i, SIG_DFL);  // a second Ctrl-C ends the process
    atomic_store(&interrupt_unhandled, 1);
    lua_sethook(interrupt_L, lstop, flag, 1);
    if (interrupt_fd >= 0) {
        uint64_t one = 1;
        ssize_t n = write(interrupt_fd, &one, sizeof one);
        (void)n;
    }
}

void (*ld_interrupt_handler(void))(int) { return laction; }

void ld_interrupt_set_fd(int fd) { interrupt_fd = fd; }

int ld_interrupt_eventfd(void) { return ld_eventfd(0); }

void ld_interrupt_arm(lua_State *L) {
    interrupt_L = L;
    setsignal(SIGINT, laction);
}

void ld_interrupt_disarm(void) { setsignal(SIGINT, SIG_DFL); }

int ld_interrupt_pending(lua_State *L) { return L != NULL && lua_gethook(L) == lstop; }

int ld_interrupt_clear(lua_State *L) {
    if (!ld_interrupt_pending(L)) return 0;
    lua_sethook(L, NULL, 0, 0);
    atomic_store(&interrupt_unhandled, 0);
    return 1;
}

/// Ctrl-C for the carried libraries' long C loops (Sources/CLuaStdlib/steps.h): on the main thread, where
/// the hook would raise at the next instruction, raises as it would.
int ld_interrupt_check(lua_State *L) {
    if (!atomic_load_explicit(&interrupt_unhandled, memory_order_relaxed) || !ld_is_main_thread()) return 0;
    lua_State *main = interrupt_L;
    if (main == NULL || lua_gethook(main) != lstop) return 0;
    lua_sethook(main, NULL, 0, 0);
    atomic_store(&interrupt_unhandled, 0);
    return luaL_error(L, "interrupted!");
}

int ld_interrupt_take(void) { return atomic_exchange(&interrupt_unhandled, 0); }

// MARK: the main queue without a run loop
