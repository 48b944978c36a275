// The step counter of the carried string, table and utf8 libraries (lstrlib*.c, ltablib.c,
// lutf8lib.c): a C function that can run long without returning to the VM (backtracking
// patterns, string.rep, table.move over a huge range) counts its steps, and every LD_STEPS of
// them looks whether the interpreter is ending its code (a time limit, `interrupt()`, Ctrl-C).
// The look costs a load or two; the count, a decrement in a loop that does far more.
#ifndef LD_STDLIB_STEPS_H
#define LD_STDLIB_STEPS_H

#include <lua5.4/lua.h>
#include <lua5.4/luaconf.h>

/// Steps between two looks: a match step or a moved element takes nanoseconds, so a look comes
/// well under a millisecond apart.
#define LD_STEPS 4096

/// Raises the end's own error ("time limit exceeded", "interrupted", Ctrl-C's "interrupted!")
/// in `L` if the interpreter running it is ending its code; returns otherwise.
void ld_stdlib_check_end(lua_State *L);

/// Counts `n` steps on `counter` (an int), looking every LD_STEPS.
#define ld_step(L, counter, n)                                                                  \
    do {                                                                                        \
        if (luai_unlikely(((counter) -= (int)(n)) <= 0)) {                                      \
            (counter) = LD_STEPS;                                                               \
            ld_stdlib_check_end(L);                                                             \
        }                                                                                       \
    } while (0)

#endif
