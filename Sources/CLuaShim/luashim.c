#define _GNU_SOURCE
#include <fcntl.h>
#include "luashim.h"
#include "ld_sandbox.h"
#include "ld_stdlib.h"

#include <errno.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

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
// unwind through its frames), so the memory limit does not apply while it runs.
static inline int run_entry(lua_State *L, int id) {
    int enforced = ld_alloc_enforced;
    ld_alloc_enforced = 0;
    int n = entry(L, id);
    ld_alloc_enforced = enforced;
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
    if (object == NULL) return 0;
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

int ld_openlibs(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base}, {LUA_LOADLIBNAME, luaopen_package}, {LUA_COLIBNAME, luaopen_coroutine},
        {LUA_TABLIBNAME, ld_luaopen_table}, {LUA_IOLIBNAME, luaopen_io}, {LUA_OSLIBNAME, luaopen_os},
        {LUA_STRLIBNAME, ld_luaopen_string}, {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, ld_luaopen_utf8},
        {LUA_DBLIBNAME, luaopen_debug},
    };
    lua_Integer mask = ld_sandbox_mask(lua_tointegerx(L, 1, NULL));
    for (int i = 0; i < (int)(sizeof libs / sizeof libs[0]); i++) {
        if (mask & ((lua_Integer)1 << i)) {
            luaL_requiref(L, libs[i].name, libs[i].func, 1);
            if (mask & LD_LIBS_RESTRICTED) ld_sandbox_restrict(L, libs[i].name);
            lua_pop(L, 1);
        }
    }
    return 0;
}

static int collect(lua_State *L) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}

int ld_gc_collect(lua_State *L) {
    lua_pushcfunction(L, collect);
    int status = ld_pcall(L, 0, 0, 0);
    if (status != LUA_OK) lua_pop(L, 1);
    return status;
}

int ld_error_string(lua_State *L, const char *message) {
    lua_pushstring(L, message);
    return lua_error(L);
}

// MARK: per-thread bookkeeping

typedef struct {
    void *queue;
    int barrier;
} frame;

static __thread frame frames[LD_MAX_FRAMES];
static __thread int depth;

int ld_frame_push(void *queue, int barrier) {
    if (depth < LD_MAX_FRAMES) {
        frames[depth].queue = queue;
        frames[depth].barrier = barrier;
    }
    return ++depth;
}

void ld_frame_pop(void) {
    if (depth > 0) depth--;
}

int ld_frame_count(void) { return depth < LD_MAX_FRAMES ? depth : LD_MAX_FRAMES; }
void *ld_frame_queue(int i) { return frames[i].queue; }
int ld_frame_barrier(int i) { return frames[i].barrier; }

static __thread void *current_task;

void *ld_task_current(void) { return current_task; }
void ld_task_set_current(void *task) { current_task = task; }

static atomic_int next_thread_number = 2;
__thread int ld_thread_number_cached;

int64_t ld_gettid(void) { return (int64_t)syscall(SYS_gettid); }

int ld_thread_number_first(void) {
    if (ld_thread_number_cached == 0)
        ld_thread_number_cached = ld_gettid() == (int64_t)getpid() ? 1 : atomic_fetch_add(&next_thread_number, 1);
    return ld_thread_number_cached;
}

static __thread unsigned long long pending_flow;
void ld_set_pending_flow(unsigned long long flow) { pending_flow = flow; }
unsigned long long ld_take_pending_flow(void) {
    unsigned long long f = pending_flow;
    pending_flow = 0;
    return f;
}

size_t ld_heap_in_use(void) { return mallinfo2().uordblks; }

// MARK: system calls

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int ld_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int ld_ready_fd(void) { return eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK); }

int ld_epoll_refusal(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return errno;
    if (S_ISREG(st.st_mode)) return 0;
    int probe = epoll_create1(EPOLL_CLOEXEC);
    if (probe < 0) return 0;
    struct epoll_event ev = {.events = EPOLLIN};
    int result = epoll_ctl(probe, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
    close(probe);
    return result;
}

int ld_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
