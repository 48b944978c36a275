// The binding machinery (binding/binding.c): the trampoline through which every binding is
// called (so that lua_error is only ever raised from a C frame), block records' slabs, object
// userdata and their tags, __index helpers.
#ifndef LD_BINDING_H
#define LD_BINDING_H

#include <lua5.4/lua.h>
#include <stdint.h>

// MARK: bindings

/// Return values of a binding besides a result count (>= 0).
enum {
    LD_RAISE = -1,        // raise the value on top of the stack as it is
    LD_RAISE_WHERE = -2,  // prefix the message on top with the caller's position, then raise
    LD_SUSPEND = -3,      // yield the running coroutine; its continuation runs when it is resumed
    LD_CALL = -4,         // call the function below the top `nargs` values; then the continuation
    LD_PCALL = -5,        // the same in protected mode (see ld_call_status)
};

/// The Swift side: runs binding `id` on `L`; returns a result count or one of the LD_ codes.
typedef int (*ld_entry_fn)(lua_State *L, int id);
void ld_set_entry(ld_entry_fn fn);

/// Names, before a binding returns LD_SUSPEND or LD_CALL, the binding that finishes its work
/// (run through the trampoline on the same stack once the coroutine is resumed or the call has
/// returned), and for LD_CALL the argument count. Yields and calls happen in C, with
/// lua_yieldk and lua_callk, so that neither a yield nor an error ever crosses a Swift frame.
void ld_continue_with(int continuation, int nargs);
/// In a continuation after LD_PCALL: LUA_OK, or the error status (the error value on top).
int ld_call_status(void);

/// Pushes a C closure that calls binding `id` through the trampoline.
void ld_push_binding(lua_State *L, int id);
/// Same, with the `n` values on top of the stack as upvalues 2...n+1 (popped).
void ld_push_binding_n(lua_State *L, int id, int n);
/// The fast path of `q:async(fn)`: given the queue's object (the pointer its userdata holds),
/// submits the block and returns its record, where the function goes (ld_record_store), or
/// NULL to let the binding run instead. It must not raise.
typedef void *(*ld_submit_fn)(lua_State *L, void *object);
/// Like ld_push_binding, but a call with exactly an object of the type tagged `tag` (see
/// ld_object_tag) and a function first tries `submit`, then stores the function for the
/// record it returns. One type of one submit function per process (the queue's `async`).
void ld_push_binding_submit(lua_State *L, int id, ld_submit_fn submit, const void *tag);

// MARK: block records (BlockRecords.swift)

/// Block records come in slabs of LD_SLAB_BYTES, aligned to their size. A slab's first
/// LD_RECORD_BYTES are its head; each record after it has an index in the slab (1, 2, ...),
/// and a pending record's function waits in the slab's table, at that index: a table whose
/// array is made at full size, so that storing a function never rehashes.
#define LD_SLAB_BYTES 8192
#define LD_RECORD_BYTES 16
typedef struct ld_slab_head {
    void *owner;        // the runtime (unretained)
    int32_t functions;  // registry reference of the slab's table of pending functions
} ld_slab_head;
static inline ld_slab_head *ld_slab_head_of(void *record) {
    return (ld_slab_head *)((uintptr_t)record & ~(uintptr_t)(LD_SLAB_BYTES - 1));
}
static inline lua_Integer ld_record_index(void *record) {
    return (lua_Integer)(((uintptr_t)record & (LD_SLAB_BYTES - 1)) / LD_RECORD_BYTES);
}
/// A new slab's table, made at full size: its registry reference, or LUA_NOREF when Lua is out
/// of memory (made in a protected call, so that the error never unwinds through the Swift
/// frames that call this).
int ld_new_slab_table(lua_State *L);
/// Stores the function at index `i` of `L` (a positive index) as `record`'s, and leaves the
/// slab's table on top (inline: the trampoline's fast path returns without popping it).
static inline void ld_record_store(lua_State *L, void *record, int i) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ld_slab_head_of(record)->functions);
    lua_pushvalue(L, i);
    lua_rawseti(L, -2, ld_record_index(record));
}
/// Pushes the table of `record`'s slab and, above it, `record`'s function, and clears its
/// place in the table.
void ld_record_take(lua_State *L, void *record);

/// lua.c's message handler: a string with a traceback appended (see ErrorValue.swift).
int ld_msgh(lua_State *L);

// MARK: object userdata (Objects.swift)

/// Every object the module hands to Lua is a full userdata of two words: the object (a pointer
/// or a 64-bit value), then its type's tag, the address of one of the module's own bytes. A
/// type check reads the tag: it needs no metatable, so an object may have a metatable of its
/// own (queues do: see ObjectTable.push).
const void *ld_object_tag(int kind);
/// Called by an object's `__gc` with the object (the pointer its userdata held, now cleared).
/// Swift, which must not raise; the memory limit does not apply while it runs.
typedef void (*ld_object_release_fn)(void *object);
/// Pushes a `__gc` that calls `release` for an object userdata whose tag is `tag` (any of the
/// module's tags when NULL): a C function, without a binding's machinery, since every object
/// pays for it once. Anything else passed to it (through `debug.getmetatable`) is left alone.
void ld_push_release(lua_State *L, ld_object_release_fn release, const void *tag);
/// The memory of the object userdata at `i` whose tag is `tag`, or NULL.
static inline void **ld_object_at(lua_State *L, int i, const void *tag) {
    if (lua_type(L, i) != LUA_TUSERDATA || lua_rawlen(L, i) != 2 * sizeof(void *)) return NULL;
    void **p = (void **)lua_touserdata(L, i);
    return p[1] == tag ? p : NULL;
}
/// Replaces the table on top (an object's fields) with a new metatable for that object: a copy
/// of the table at `shared` whose __index is the fields table.
void ld_object_metatable(lua_State *L, int shared);

/// An __index function: upvalue 1 is a methods table, upvalue 2 a getter function or nil.
int ld_index(lua_State *L);
/// An __index function that gives the object (a userdata) a metatable of its own with binding
/// upvalue 2, then indexes it again. Upvalue 1 is the methods table (as for ld_index), which
/// the metatable it gives falls back to.
int ld_index_adopting(lua_State *L);

/// A __call function for callable tables: drops the table and calls upvalue 1 with the rest.
int ld_call_dropping_self(lua_State *L);

#endif
