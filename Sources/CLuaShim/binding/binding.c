// The binding machinery (ld_binding.h): the trampoline every binding is called through, so that
// lua_error is only ever raised from a C frame; block records' slabs; object userdata.
#include "ld_binding.h"
#include "ld_lua.h"
#include "ld_alloc.h"
#include "ld_control.h"
#include "ld_memory.h"
#include "ld_finalizer.h"

#include <stdlib.h>

// MARK: bindings

static ld_entry_fn entry;

void ld_set_entry(ld_entry_fn fn) { entry = fn; }

// What the binding that returned LD_SUSPEND or LD_CALL asked for: read right after it returns,
// on the same thread, before any other binding can run there.
static __thread int next_continuation, next_nargs, call_status;

void ld_continue_with(int continuation, int nargs) {
    next_continuation = continuation;
    next_nargs = nargs;
}

int ld_call_status(void) { return call_status; }

static int finish(lua_State *L, int n);

// Runs binding `id`: Swift code, in which an allocation must never raise (a memory error would
// unwind through its frames), so the memory limit does not refuse anything while it runs; what
// it allocates is charged all the same, and a binding that went past the limit raises the
// memory error here, once its frames are gone (memory.c).
static inline int run_entry(lua_State *L, int id) {
    int enforced = ld_alloc_enforced;
    ld_alloc_enforced = 0;
    int n = entry(L, id);
    ld_alloc_enforced = enforced;
    // A binding that yields or calls Lua leaves its debt to the next one.
    if (__builtin_expect(ld_memory_owed != NULL, 0) && n != LD_SUSPEND && n != LD_CALL && n != LD_PCALL)
        ld_memory_settle(L);
    return n;
}

// Runs a binding's continuation (its id is the context) when the coroutine is resumed or the
// function it called returns; the stack is the binding's own, as it left it.
static int continuation(lua_State *L, int status, lua_KContext ctx) {
    call_status = status == LUA_YIELD ? LUA_OK : status;
    return finish(L, run_entry(L, (int)ctx));
}

static int finish(lua_State *L, int n) {
    while (n == LD_CALL || n == LD_PCALL) {
        int k = next_continuation;
        int enforced = ld_alloc_enforced;
        ld_alloc_enforced = 1;  // Lua code again
        if (n == LD_CALL) {
            lua_callk(L, next_nargs, LUA_MULTRET, k, continuation);
            call_status = LUA_OK;
        } else {
            call_status = lua_pcallk(L, next_nargs, LUA_MULTRET, 0, k, continuation);
        }
        ld_alloc_enforced = enforced;
        n = run_entry(L, k);
    }
    if (n >= 0) return n;
    if (n == LD_SUSPEND) return lua_yieldk(L, 0, next_continuation, continuation);
    if (n == LD_RAISE_WHERE && lua_type(L, -1) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

static int trampoline(lua_State *L) {
    int id = (int)lua_tointegerx(L, lua_upvalueindex(1), NULL);
    int n = run_entry(L, id);
    if (n >= 0) return n;
    return finish(L, n);
}

void ld_push_binding(lua_State *L, int id) {
    lua_pushinteger(L, id);
    lua_pushcclosure(L, trampoline, 1);
}

// q:async(fn), the hottest call there is, checked and submitted with as few calls into Lua as
// possible (docs/performance.md); any other form, or a submission the runtime declines, runs
// the binding as usual. Upvalue: the binding id. The submit function and the queue type's tag
// are the same for every interpreter, so they are kept here rather than read from upvalues.
static ld_submit_fn submit_fn;
static const void *submit_tag;

static int submit_trampoline(lua_State *L) {
    if (lua_gettop(L) == 2 && lua_type(L, 2) == LUA_TFUNCTION) {
        void **object = ld_object_at(L, 1, submit_tag);
        if (object != NULL && *object != NULL) {
            int enforced = ld_alloc_enforced;
            ld_alloc_enforced = 0;
            void *record = submit_fn(L, *object);
            ld_alloc_enforced = enforced;
            if (record != NULL) {
                ld_record_store(L, record, 2);  // the slab's table it leaves is dropped on return
                if (__builtin_expect(ld_memory_owed != NULL, 0)) ld_memory_settle(L);
                return 0;
            }
        }
    }
    return trampoline(L);
}

void ld_push_binding_submit(lua_State *L, int id, ld_submit_fn submit, const void *tag) {
    submit_fn = submit;
    submit_tag = tag;
    lua_pushinteger(L, id);
    lua_pushcclosure(L, submit_trampoline, 1);
}

static int new_slab_table(lua_State *L) {
    lua_createtable(L, LD_SLAB_BYTES / LD_RECORD_BYTES - 1, 0);
    lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
    return 1;
}

int ld_new_slab_table(lua_State *L) {
    lua_pushcfunction(L, new_slab_table);
    int ref = LUA_NOREF;
    if (lua_pcall(L, 0, 1, 0) == LUA_OK) ref = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    return ref;
}

void ld_record_take(lua_State *L, void *record) {
    lua_Integer i = ld_record_index(record);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ld_slab_head_of(record)->functions);
    lua_rawgeti(L, -1, i);
    lua_pushnil(L);
    lua_rawseti(L, -3, i);
}

static const char object_tags[32];

const void *ld_object_tag(int kind) { return &object_tags[kind]; }

static int object_gc(lua_State *L) {
    if (lua_type(L, 1) != LUA_TUSERDATA || lua_rawlen(L, 1) != 2 * sizeof(void *)) return 0;
    void **p = (void **)lua_touserdata(L, 1);
    const char *tag = p[1], *wanted = lua_touserdata(L, lua_upvalueindex(2));
    if (wanted != NULL ? tag != wanted : (tag < object_tags || tag >= object_tags + sizeof object_tags)) return 0;
    void *object = p[0];
    if (object == NULL || !ld_in_finalizer(L)) return 0;
    p[0] = NULL;
    ld_object_release_fn release = (ld_object_release_fn)lua_touserdata(L, lua_upvalueindex(1));
    int enforced = ld_alloc_enforced;
    ld_alloc_enforced = 0;
    release(object);
    ld_alloc_enforced = enforced;
    return 0;
}

void ld_push_release(lua_State *L, ld_object_release_fn release, const void *tag) {
    lua_pushlightuserdata(L, (void *)release);
    lua_pushlightuserdata(L, (void *)tag);
    lua_pushcclosure(L, object_gc, 2);
}

void ld_object_metatable(lua_State *L, int shared) {
    shared = lua_absindex(L, shared);
    int fields = lua_gettop(L);
    lua_createtable(L, 0, 8);
    lua_pushnil(L);
    while (lua_next(L, shared)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
    lua_pushliteral(L, "__index");
    lua_pushvalue(L, fields);
    lua_rawset(L, -3);
    lua_replace(L, fields);
}

void ld_push_binding_n(lua_State *L, int id, int n) {
    lua_pushinteger(L, id);
    lua_insert(L, -n - 1);
    lua_pushcclosure(L, trampoline, n + 1);
}

// lua.c's message handler: a string (or a value that converts to one) gets a traceback
// appended; a value with __tostring becomes that string; any other value becomes
// "(error object is a T value)" with a traceback. Code that calls `load` with a reader that
// raises inherits this handler, exactly as under `lua`.
int ld_msgh(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int ld_index(lua_State *L) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    if (lua_type(L, lua_upvalueindex(2)) == LUA_TFUNCTION) {
        lua_pushvalue(L, lua_upvalueindex(2));
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 2);
        lua_call(L, 2, 1);
        return 1;
    }
    lua_pushnil(L);
    return 1;
}

int ld_index_adopting(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_pushvalue(L, 1);
    lua_call(L, 1, 0);  // the object's own metatable now answers (or the call raised)
    lua_settop(L, 2);
    lua_gettable(L, 1);
    return 1;
}

int ld_call_dropping_self(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_replace(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}
