// The end checks of the carried string, table and utf8 libraries (lstrlib*.c, ltablib.c,
// lutf8lib.c): a C function that can run long without returning to the VM (backtracking
// patterns, string.rep, table.move over a huge range) looks, at each step of its loops, whether
// an end has been asked for (a time limit, `interrupt()`, Ctrl-C). The look is two loads of
// process-wide words that are zero unless some interpreter of the process is ending its code or
// Ctrl-C is pending; only then does it call ld_stdlib_check_end. (A step counter in the matcher
// cost 6% more instructions in the official pm.lua. The matcher's and string.rep's loops look
// every 64 or 1024 steps, using their own index as the count.)
#ifndef LD_STDLIB_STEPS_H
#define LD_STDLIB_STEPS_H

#include <lua5.4/lua.h>
#include <lua5.4/luaconf.h>
#include <stdatomic.h>
#include "ld_control.h"  // ld_terminations, ld_interrupt_unhandled, ld_stdlib_check_end

/// One step of a loop that may run long: raises if an end is asked for.
#define ld_step(L)                                                                              \
    do {                                                                                        \
        if (luai_unlikely(ld_terminations |                                                     \
                          atomic_load_explicit(&ld_interrupt_unhandled, memory_order_relaxed))) \
            ld_stdlib_check_end(L);                                                             \
    } while (0)

#endif
