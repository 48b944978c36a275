// Charging the memory limit for what the runtime holds on a script's behalf (memory.c).
#ifndef LD_MEMORY_H
#define LD_MEMORY_H

#include <stdint.h>
#include <lua5.4/lua.h>

struct ld_budget;

/// How far past its limit a budget may be at a binding's return before the memory error
/// (`ld_memory_settle`): garbage of the interpreter's other states that this one cannot collect.
#define LD_MEMORY_SLACK ((int64_t)1 << 20)

/// Set on a thread when a charge that could not be refused (the runtime's own, made outside Lua
/// code, where an error could not unwind) left the budget past its limit, or when a binding
/// refused to make a copy: the binding running (or the next one to return on this thread)
/// raises Lua's memory error once it has returned, where raising is safe.
extern __thread struct ld_budget *ld_memory_owed;

/// Charges `n` bytes the runtime holds for the script (a copy, an object): never refused, but
/// past the limit the binding that caused it raises the memory error once it returns.
void ld_memory_charge(struct ld_budget *b, int64_t n);
/// Charges `n` bytes unless that would pass the limit: 0 then, and the binding running raises
/// Lua's memory error once it returns (whatever it returns).
int ld_memory_try(struct ld_budget *b, int64_t n);
/// Marks the binding running as refused (it found a copy would pass the limit): it raises
/// Lua's memory error once it returns, whatever it returns.
void ld_memory_refuse(struct ld_budget *b);
/// Gives back bytes charged by either.
void ld_memory_uncharge(struct ld_budget *b, int64_t n);

/// After a binding returned on `L` with `ld_memory_owed` set (not to yield or call Lua): raises Lua's memory error
/// (status LUA_ERRMEM, "not enough memory", as a refused allocation does) if a copy was
/// refused, or if the budget is still past its limit (by more than LD_MEMORY_SLACK) once `L`
/// has been collected; otherwise forgets the debt.
void ld_memory_settle(lua_State *L);

/// The budget `L`'s allocations charge (NULL: none); alloc.c.
struct ld_budget *ld_state_budget(lua_State *L);

#endif
