// The end checks of the carried string, table and utf8 libraries (lstrlib*.c, ltablib.c,
// lutf8lib.c): a C function that can run long without returning to the VM (backtracking
// patterns, string.rep, table.move over a huge range) looks, at each step of its loops, whether
// an end has been asked for (a time limit, `interrupt()`, Ctrl-C). The look is one load of a
// process-wide word, the count of stop requests set in the interpreters' request words, zero
// unless some interpreter of the process is ending its code or Ctrl-C is pending; only then does
// it call ld_stdlib_check_end, which reads the interpreter's word and acts as its switch hook would
// (CLuaShim/control/requests.c). (A step counter in the matcher cost 6% more instructions in the
// official pm.lua. The matcher's and string.rep's loops look every 64 or 1024 steps, using their
// own index as the count.)
#ifndef LD_STDLIB_STEPS_H
#define LD_STDLIB_STEPS_H

#include <lua5.4/lua.h>
#include <lua5.4/luaconf.h>
#include <stdatomic.h>
#include "ld_control.h"  // ld_stop_requests, ld_stdlib_check_end

/// One step of a loop that may run long: raises if an end is asked for.
#define ld_step(L)                                                 \
    do {                                                           \
        if (luai_unlikely(ld_stop_requests)) ld_stdlib_check_end(L); \
    } while (0)

#endif
