// The carried libraries' end check (Sources/CLuaStdlib/steps.h): what the switch hook does at the
// next instruction (an end, Ctrl-C), done in the C function instead, which may not reach one for
// minutes. requests.c decides.
#define _GNU_SOURCE
#include "ld_control.h"
#include "switching.h"

void ld_stdlib_check_end(lua_State *L) { ld_requests_act(L, LD_ACT_STEP); }
