#ifndef LD_NESTING_H
#define LD_NESTING_H

#include <stddef.h>

/// How many blocking calls that run Lua code on the calling OS thread (`q:sync`, `perform`,
/// `concurrent_perform`, ...) may nest on one thread. Each nested call runs on a fresh pooled Lua
/// thread, so Lua's own C-stack guard (LUAI_MAXCCALLS) never sees the nesting: this bound does.
#define LD_MAX_NESTING 200

/// Whether Lua code may run nested once more on this OS thread: fewer than LD_MAX_NESTING
/// levels run here, and more C stack is left than one level of Lua's own nesting can use.
int ld_nest_allowed(void);
/// Enters a nesting level if allowed (returns 1), else returns 0 and enters nothing.
int ld_nest_enter(void);
void ld_nest_leave(void);
/// Bytes of C stack left on this OS thread above the reserve (negative when below it).
long ld_stack_room(void);

#endif
