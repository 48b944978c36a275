// The carried libraries' end check (Sources/CLuaStdlib/steps.h): what the switch hook raises at the next
// instruction, raised in the C function instead, which may not reach one for minutes.
#define _GNU_SOURCE
#include "ld_control.h"
#include "switching.h"

#include <stdatomic.h>

void ld_raise_termination(lua_State *L);
int ld_interrupt_check(lua_State *L);

void ld_stdlib_check_end(lua_State *L) {
    // Nonzero while any interpreter of the process is ending: only then is the lock looked at.
    if (ld_terminations) {
        ld_lock *lock = ld_lock_held();
        if (lock != NULL &&
            (atomic_load_explicit(&ld_lock_state(lock)->requests, memory_order_relaxed) & LD_REQUEST_TERMINATE))
            ld_raise_termination(L);
    }
    ld_interrupt_check(L);
}
