// The allocator (alloc.c): states whose small blocks come from pages of their own, and the
// memory budget every state of an interpreter charges.
#ifndef LD_ALLOC_H
#define LD_ALLOC_H

#include <lua5.4/lua.h>
#include <stddef.h>
#include <stdint.h>

/// A new state like luaL_newstate's, whose small blocks come from pages of its own (alloc.c):
/// every allocation of the state must then happen under its interpreter lock.
lua_State *ld_newstate(void);
/// The memory limit of an interpreter: every state made with it counts against one number of
/// bytes (alloc.c). An allocation past the limit fails (Lua raises "not enough memory") while
/// Lua code runs on the allocating thread (`ld_alloc_enforced`); the runtime's own allocations,
/// made outside Lua code where an error could not be raised safely, are counted but never fail.
typedef struct ld_budget ld_budget;
/// A budget held once (by the runtime that made it); a worker interpreter charging it holds it
/// too, and the last release frees it.
ld_budget *ld_budget_new(int64_t limit);
ld_budget *ld_budget_retain(ld_budget *b);
void ld_budget_release(ld_budget *b);
int64_t ld_budget_used(ld_budget *b);
int64_t ld_budget_limit(ld_budget *b);
/// Charges `n` bytes the runtime holds for the script (e.g. `dispatch.data`): 1, or 0 when
/// past the limit (unless `force`). Give them back with `ld_budget_refund`.
int ld_budget_charge(ld_budget *b, int64_t n, int force);
void ld_budget_refund(ld_budget *b, int64_t n);
/// Whether an allocation on this thread may fail at the limit: while Lua code runs (set by
/// ld_running_push, cleared around the runtime's own code: bindings, hooks' callbacks).
extern __thread int ld_alloc_enforced;
/// Called with the first piece of each warning of a state made here (`L`: the state's main
/// thread), before the warning is written; it may raise. Set once by control/finalizers.c.
extern void (*ld_warning_first)(lua_State *L, const char *message, int tocont);
/// `ld_newstate` charging `budget` (NULL: no limit).
lua_State *ld_newstate_budget(ld_budget *budget);
/// lua_close, then gives the state's pages back; the number of small blocks closing left
/// allocated (0 unless Lua leaked).
size_t ld_closestate(lua_State *L);
/// How many pages `L`'s small blocks occupy now; 0 for a state not made by ld_newstate or
/// under AddressSanitizer, where every block comes from the C library.
size_t ld_state_pages(lua_State *L);
/// Whether ld_newstate's states have pages of their own (not under AddressSanitizer).
int ld_pool_enabled(void);

#endif
