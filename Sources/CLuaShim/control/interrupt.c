// Ctrl-C as lua.c handles it. The signal handler only sets Ctrl-C's bits in the interpreter's
// request word and pokes, which is async-signal-safe (requests.c decides what happens): lua.c's
// poke, a hook on the main Lua thread's state, whose next instruction raises "interrupted!", and,
// since a wait the main thread is parked in runs no instruction, a write to an eventfd that the
// runtime watches (Control/Interruption.swift).
#define _GNU_SOURCE
#include "ld_control.h"
#include "ld_events.h"
#include "ld_platform.h"
#include "switching.h"

#include <signal.h>
#include <stdint.h>
#include <unistd.h>

static volatile int interrupt_fd = -1;

static void setsignal(int sig, void (*handler)(int)) {
    if (ld_signal_watched(sig)) return;  // a signal source owns it now (events.c)
    struct sigaction sa;
    sa.sa_handler = handler;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void laction(int i) {
    setsignal(i, SIG_DFL);  // a second Ctrl-C ends the process
    if (!ld_request_interrupt()) return;
    if (interrupt_fd >= 0) {
        uint64_t one = 1;
        ssize_t n = write(interrupt_fd, &one, sizeof one);
        (void)n;
    }
}

void (*ld_interrupt_handler(void))(int) { return laction; }

void ld_interrupt_set_fd(int fd) { interrupt_fd = fd; }

int ld_interrupt_eventfd(void) { return ld_eventfd(0); }

void ld_interrupt_arm(lua_State *L, ld_lock *lock) {
    ld_requests_interrupt_target(L, lock);
    setsignal(SIGINT, laction);
}

void ld_interrupt_disarm(void) { setsignal(SIGINT, SIG_DFL); }
