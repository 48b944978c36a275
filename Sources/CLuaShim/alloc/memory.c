// Charging the memory limit for what the runtime holds on a script's behalf: copies of script
// data kept in Swift (labels, messages, job arguments, error values, data objects), native
// objects a script makes in bulk (queues, sources, tasks, pending blocks), and Lua allocations
// the runtime makes for a binding (its results). None of these may fail where they happen
// (Swift frames, which an error must not unwind through), so they are charged regardless, and
// the debt is settled when the binding returns to C: there the memory error is raised as Lua
// raises it for a refused allocation. The check costs one thread-local load per binding call.
#include "ld_alloc.h"
#include <lua5.4/lua.h>
#include "ld_memory.h"

__thread ld_budget *ld_memory_owed;
static __thread int refused;

void ld_memory_charge(ld_budget *b, int64_t n) {
    ld_budget_charge(b, n, 1);
    if (ld_budget_used(b) > ld_budget_limit(b)) ld_memory_owed = b;
}

void ld_memory_refuse(ld_budget *b) {
    ld_memory_owed = b;
    refused = 1;
}

int ld_memory_try(ld_budget *b, int64_t n) {
    if (ld_budget_charge(b, n, 0)) return 1;
    ld_memory_refuse(b);
    return 0;
}

void ld_memory_uncharge(ld_budget *b, int64_t n) { ld_budget_refund(b, n); }

void ld_memory_settle(lua_State *L) {
    ld_budget *b = ld_memory_owed;
    int refuse = refused;
    ld_memory_owed = NULL;
    refused = 0;
    if (b == NULL || ld_state_budget(L) != b) return;  // another interpreter's debt: its own code meets the limit
    // A MiB of slack: the count also holds garbage other states of the interpreter (workers,
    // concurrent_map's) have yet to collect, which this state's collection cannot free; a
    // binding of this state that goes past the limit by more is the script's doing.
    int64_t most = ld_budget_limit(b) + LD_MEMORY_SLACK;
    if (!refuse && ld_budget_used(b) <= most) return;
    // As Lua does before it fails an allocation: collect, and fail only if that was not enough.
    if (!refuse) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        if (ld_budget_used(b) <= most) return;
    }
    // An allocation bigger than the limit is refused whatever the count: Lua then collects
    // (as for any refused allocation) and raises its own memory error, LUA_ERRMEM.
    ld_alloc_enforced = 1;
    lua_newuserdatauv(L, (size_t)ld_budget_limit(b) + 1, 0);
}
