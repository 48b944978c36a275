// The allocator of the runtime's Lua states. Small blocks (closures, tables, strings, upvalues,
// userdata up to LD_POOL_MAX bytes) come from pages of one size class each; larger ones from
// the C library. Every allocation of a state happens under its interpreter lock (a worker
// interpreter's, by the one thread that runs it), so the pages need no lock: a block costs a
// few instructions instead of malloc's search, and a closure freed by the collector goes back
// in a few more (docs/performance.md has the figures).
//
// Pages are carved from regions mapped from the system. A page that empties (unless it is the
// last of its class with room) becomes a spare; beyond a few spares kept for reuse, its memory
// goes back to the system (MADV_DONTNEED): memory a script stops using is returned, as malloc
// returns it. Closing the state unmaps the regions.
//
// Under AddressSanitizer every block comes from the C library, so that Lua memory misused by
// the runtime is still reported.
#include "ld_alloc.h"
#include <lua5.4/lauxlib.h>
#include "ld_memory.h"

#include <stdatomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LD_POOL_DISABLED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LD_POOL_DISABLED 1
#endif

#define LD_POOL_GRAIN 8           // classes by 8 bytes: Lua aligns its objects to 8 (LUAI_MAXALIGN)
#define LD_POOL_MAX 256
#define LD_POOL_CLASSES (LD_POOL_MAX / LD_POOL_GRAIN)
#define LD_PAGE_BYTES 4096      // a page is aligned to its size: a block finds its page by masking
#define LD_REGION_BYTES (1 << 20)
#define LD_HOT_SPARES 16         // empty pages kept with their memory
#define LD_POSERS 64

typedef struct ld_page {
    struct ld_page *next, *prev;  // in its class's list of pages with room
    void *free;                   // blocks freed since the page was made
    char *fresh, *end;            // blocks never used yet: [fresh, end)
    uint32_t live;                // blocks in use
    uint32_t size;                // bytes per block
} ld_page;

#define LD_PAGE_HEAD ((sizeof(ld_page) + LD_POOL_GRAIN - 1) / LD_POOL_GRAIN * LD_POOL_GRAIN)

typedef struct ld_region { struct ld_region *next; } ld_region;  // in the region's first page

typedef struct ld_pool {
    ld_page *room[LD_POOL_CLASSES];  // pages with room, by class
    ld_page *hot;                    // spare pages that keep their memory (linked through it)
    size_t nhot;
    ld_page **cold;                  // spare pages whose memory went back to the system
    size_t ncold, capcold;
    char *fresh, *end;               // pages of the newest region not used yet
    ld_region *regions;
    size_t pages;                    // pages in use (not spare)
    size_t live;                     // blocks in use
    // Blocks of the C library that Lua believes small: a shrink that could not get a page
    // (out of memory) keeps the bigger block, as Lua requires of a shrink.
    size_t nposers;
    void *posers[LD_POSERS];
    ld_budget *budget;               // the interpreter's memory limit, or NULL
    int64_t credit;                  // bytes taken from the budget and not used yet
} ld_pool;

static inline size_t class_of(size_t size) { return (size - 1) / LD_POOL_GRAIN; }
static inline ld_page *page_of(void *block) {
    return (ld_page *)((uintptr_t)block & ~(uintptr_t)(LD_PAGE_BYTES - 1));
}
static inline int page_full(ld_page *page) {
    return page->free == NULL && page->fresh == page->end;
}

static void unlink_page(ld_pool *p, size_t c, ld_page *page) {
    if (page->prev != NULL) page->prev->next = page->next;
    else p->room[c] = page->next;
    if (page->next != NULL) page->next->prev = page->prev;
    page->next = page->prev = NULL;
}

static void link_page(ld_pool *p, size_t c, ld_page *page) {
    page->prev = NULL;
    page->next = p->room[c];
    if (page->next != NULL) page->next->prev = page;
    p->room[c] = page;
}

static ld_page *carve_page(ld_pool *p) {
    ld_page *page;
    if ((page = p->hot) != NULL) {
        p->hot = page->next;
        p->nhot--;
    } else if (p->ncold > 0) {
        page = p->cold[--p->ncold];
    } else {
        if (p->fresh == p->end) {
            char *region = mmap(NULL, LD_REGION_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (region == MAP_FAILED) return NULL;
            ((ld_region *)region)->next = p->regions;
            p->regions = (ld_region *)region;
            p->fresh = region + LD_PAGE_BYTES;  // the first page holds the link
            p->end = region + LD_REGION_BYTES;
        }
        page = (ld_page *)p->fresh;
        p->fresh += LD_PAGE_BYTES;
    }
    return page;
}

static void spare_page(ld_pool *p, ld_page *page) {
    if (p->nhot >= LD_HOT_SPARES) {
        // Listed outside the page: a write to it would take its memory back.
        if (p->ncold == p->capcold) {
            size_t cap = p->capcold ? 2 * p->capcold : 64;
            ld_page **cold = realloc(p->cold, cap * sizeof *cold);
            if (cold != NULL) {
                p->cold = cold;
                p->capcold = cap;
            }
        }
        if (p->ncold < p->capcold) {
            madvise(page, LD_PAGE_BYTES, MADV_DONTNEED);
            p->cold[p->ncold++] = page;
            return;
        }
    }
    page->next = p->hot;
    p->hot = page;
    p->nhot++;
}

static ld_page *new_page(ld_pool *p, size_t c) {
    ld_page *page = carve_page(p);
    if (page == NULL) return NULL;
    uint32_t size = (uint32_t)((c + 1) * LD_POOL_GRAIN);
    page->free = NULL;
    page->fresh = (char *)page + LD_PAGE_HEAD;
    page->end = page->fresh + (LD_PAGE_BYTES - LD_PAGE_HEAD) / size * size;
    page->live = 0;
    page->size = size;
    link_page(p, c, page);
    p->pages++;
    return page;
}

static inline void *pool_take(ld_pool *p, size_t size) {
    size_t c = class_of(size);
    ld_page *page = p->room[c];
    if (page == NULL && (page = new_page(p, c)) == NULL) return NULL;
    void *block = page->free;
    if (block != NULL) {
        page->free = *(void **)block;
    } else {
        block = page->fresh;
        page->fresh += page->size;
    }
    page->live++;
    p->live++;
    if (page_full(page)) unlink_page(p, c, page);
    return block;
}

static inline void pool_give(ld_pool *p, void *block) {
    ld_page *page = page_of(block);
    size_t c = class_of(page->size);
    if (page_full(page)) link_page(p, c, page);
    *(void **)block = page->free;
    page->free = block;
    p->live--;
    if (--page->live == 0 && (page->next != NULL || page->prev != NULL)) {
        // Empty, and not the class's only page with room: a spare.
        unlink_page(p, c, page);
        spare_page(p, page);
        p->pages--;
    }
}

// Whether `block`, of a small size to Lua, is one of the C library's (see `posers`); if so it
// is forgotten, since the caller frees or moves it.
static int take_poser(ld_pool *p, void *block) {
    for (size_t i = 0; i < p->nposers; i++) {
        if (p->posers[i] == block) {
            p->posers[i] = p->posers[--p->nposers];
            return 1;
        }
    }
    return 0;
}

// MARK: the memory limit

// Every state of an interpreter charges one budget. A state takes the budget's bytes in chunks
// and uses them up with plain arithmetic (its allocations all happen under its own lock), so
// the shared counter is touched once per chunk, not once per allocation; a state gives back
// what it holds beyond two chunks. The limit is exact to a couple of chunks per state.
#define LD_BUDGET_CHUNK ((int64_t)64 * 1024)

struct ld_budget {
    _Atomic int64_t used;
    int64_t limit;
    _Atomic int refs;  // the runtimes charging it: an interpreter and its workers
};

__thread int ld_alloc_enforced;

ld_budget *ld_budget_new(int64_t limit) {
    ld_budget *b = calloc(1, sizeof *b);
    if (b == NULL) abort();
    b->limit = limit;
    b->refs = 1;
    return b;
}

ld_budget *ld_budget_retain(ld_budget *b) {
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}

void ld_budget_release(ld_budget *b) {
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) free(b);
}

int64_t ld_budget_used(ld_budget *b) { return atomic_load_explicit(&b->used, memory_order_relaxed); }
int64_t ld_budget_limit(ld_budget *b) { return b->limit; }

int ld_budget_charge(ld_budget *b, int64_t n, int force) {
    int64_t used = atomic_fetch_add_explicit(&b->used, n, memory_order_relaxed) + n;
    if (used <= b->limit || force) return 1;
    atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
    return 0;
}

void ld_budget_refund(ld_budget *b, int64_t n) { atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed); }

// `n` more bytes for a state holding `*credit`: 0 when the limit refuses them (only while Lua
// code runs: elsewhere the runtime's own allocations must not fail, see ld_alloc_enforced).
static int take_bytes(ld_budget *b, int64_t *credit, int64_t n) {
    if (*credit >= n) {
        *credit -= n;
        return 1;
    }
    int64_t need = n - *credit, chunk = need > LD_BUDGET_CHUNK ? need : LD_BUDGET_CHUNK;
    if (!ld_budget_charge(b, chunk, 0)) {
        chunk = need;  // the last bytes below the limit
        if (!ld_budget_charge(b, chunk, !ld_alloc_enforced)) return 0;
        // Forced past the limit (the runtime's code, for a binding): settled when it returns.
        if (atomic_load_explicit(&b->used, memory_order_relaxed) > b->limit) ld_memory_owed = b;
    }
    *credit += chunk - n;
    return 1;
}

static void give_bytes(ld_budget *b, int64_t *credit, int64_t n) {
    *credit += n;
    if (*credit > 2 * LD_BUDGET_CHUNK) {
        int64_t back = *credit - LD_BUDGET_CHUNK;
        *credit -= back;
        ld_budget_refund(b, back);
    }
}

// lua_Alloc: `osize` is the block's size whenever `ptr` is not NULL (Lua 5.4's contract), so
// whether a block is small is known without a header, and its page by its address.
static void *pool_alloc_raw(ld_pool *p, void *ptr, size_t osize, size_t nsize) {
    if (ptr == NULL) {
        if (nsize == 0) return NULL;
        return nsize <= LD_POOL_MAX ? pool_take(p, nsize) : malloc(nsize);
    }
    int small = osize <= LD_POOL_MAX && !(p->nposers > 0 && take_poser(p, ptr));
    if (nsize == 0) {
        if (small) pool_give(p, ptr);
        else free(ptr);
        return NULL;
    }
    if (!small && nsize > LD_POOL_MAX) return realloc(ptr, nsize);
    if (small && nsize <= LD_POOL_MAX && nsize <= page_of(ptr)->size) return ptr;
    void *block = nsize <= LD_POOL_MAX ? pool_take(p, nsize) : malloc(nsize);
    if (block == NULL) {
        if (nsize > osize) {
            if (!small && osize <= LD_POOL_MAX) p->posers[p->nposers++] = ptr;  // still one
            return NULL;
        }
        // Lua counts on a shrink never failing: keep the block. A small one has room; one of
        // the C library's is remembered as such.
        if (!small) {
            if (p->nposers == LD_POSERS) abort();
            p->posers[p->nposers++] = ptr;
        }
        return ptr;
    }
    memcpy(block, ptr, osize < nsize ? osize : nsize);
    if (small) pool_give(p, ptr);
    else free(ptr);
    return block;
}

static void *pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    ld_pool *p = ud;
    if (p->budget == NULL) return pool_alloc_raw(p, ptr, osize, nsize);
    // When `ptr` is NULL, `osize` is the kind of object, not a size.
    int64_t before = ptr != NULL ? (int64_t)osize : 0, delta = (int64_t)nsize - before;
    if (delta > 0 && !take_bytes(p->budget, &p->credit, delta)) return NULL;
    void *block = pool_alloc_raw(p, ptr, osize, nsize);
    if (block == NULL && nsize != 0) {
        if (delta > 0) give_bytes(p->budget, &p->credit, delta);
    } else if (delta < 0) {
        give_bytes(p->budget, &p->credit, -delta);
    }
    return block;
}

// The C library's blocks, counted: the allocator under AddressSanitizer, when there is a budget.
typedef struct {
    ld_budget *budget;
    int64_t credit;
} ld_counted;

static void *counted_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    ld_counted *c = ud;
    int64_t before = ptr != NULL ? (int64_t)osize : 0, delta = (int64_t)nsize - before;
    if (nsize == 0) {
        free(ptr);
        if (before > 0) give_bytes(c->budget, &c->credit, before);
        return NULL;
    }
    if (delta > 0 && !take_bytes(c->budget, &c->credit, delta)) return NULL;
    void *block = realloc(ptr, nsize);
    if (block == NULL) {
        if (delta > 0) give_bytes(c->budget, &c->credit, delta);
        return NULL;
    }
    if (delta < 0) give_bytes(c->budget, &c->credit, -delta);
    return block;
}

// lauxlib's own: the message printed when an error escapes every protected call.
static int panic(lua_State *L) {
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "error object is not a string";
    fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n", msg);
    fflush(stderr);
    return 0;
}

// Warnings as lauxlib's luaL_newstate sets them up: off until "@on", continued messages
// joined, each ended by a newline. A warning's first piece goes to `ld_warning_first` before
// anything is written (control/finalizers.c: it may raise instead).
static void warn_off(void *ud, const char *message, int tocont);
static void warn_on(void *ud, const char *message, int tocont);

static int warn_control(lua_State *L, const char *message, int tocont) {
    if (tocont || *(message++) != '@') return 0;
    if (strcmp(message, "off") == 0) lua_setwarnf(L, warn_off, L);
    else if (strcmp(message, "on") == 0) lua_setwarnf(L, warn_on, L);
    return 1;
}

void (*ld_warning_first)(lua_State *L, const char *message, int tocont);

static void warn_off(void *ud, const char *message, int tocont) {
    if (ld_warning_first != NULL) ld_warning_first(ud, message, tocont);
    warn_control((lua_State *)ud, message, tocont);
}

static void warn_cont(void *ud, const char *message, int tocont) {
    lua_State *L = ud;
    fprintf(stderr, "%s", message);
    fflush(stderr);
    if (tocont) {
        lua_setwarnf(L, warn_cont, L);
    } else {
        fprintf(stderr, "\n");
        fflush(stderr);
        lua_setwarnf(L, warn_on, L);
    }
}

static void warn_on(void *ud, const char *message, int tocont) {
    if (ld_warning_first != NULL) ld_warning_first(ud, message, tocont);
    if (warn_control((lua_State *)ud, message, tocont)) return;
    fprintf(stderr, "Lua warning: ");
    fflush(stderr);
    warn_cont(ud, message, tocont);
}

lua_State *ld_newstate(void) { return ld_newstate_budget(NULL); }

lua_State *ld_newstate_budget(ld_budget *budget) {
    lua_State *L;
#ifdef LD_POOL_DISABLED
    // The C library's blocks, so that the sanitizer sees each; the same panic and warnings.
    if (budget == NULL) {
        L = luaL_newstate();
        if (L == NULL) return NULL;
    } else {
        ld_counted *c = calloc(1, sizeof(ld_counted));
        if (c == NULL) return NULL;
        c->budget = budget;
        L = lua_newstate(counted_alloc, c);
        if (L == NULL) {
            free(c);
            return NULL;
        }
    }
#else
    ld_pool *p = calloc(1, sizeof(ld_pool));
    if (p == NULL) return NULL;
    p->budget = budget;
    L = lua_newstate(pool_alloc, p);
    if (L == NULL) {
        free(p);
        return NULL;
    }
#endif
    lua_atpanic(L, panic);
    lua_setwarnf(L, warn_off, L);
    return L;
}

size_t ld_closestate(lua_State *L) {
    void *ud = NULL;
    lua_Alloc f = lua_getallocf(L, &ud);
    lua_close(L);
    if (f == counted_alloc) {
        ld_counted *c = ud;
        ld_budget_refund(c->budget, c->credit);
        free(c);
        return 0;
    }
    if (f != pool_alloc) return 0;
    ld_pool *p = ud;
    if (p->budget != NULL) ld_budget_refund(p->budget, p->credit);
    size_t live = p->live;  // closing frees every block: anything left is a leak
    for (ld_region *r = p->regions, *next; r != NULL; r = next) {
        next = r->next;
        munmap(r, LD_REGION_BYTES);
    }
    free(p->cold);
    free(p);
    return live;
}

int ld_pool_enabled(void) {
#ifdef LD_POOL_DISABLED
    return 0;
#else
    return 1;
#endif
}

size_t ld_state_pages(lua_State *L) {
    void *ud = NULL;
    return lua_getallocf(L, &ud) == pool_alloc ? ((ld_pool *)ud)->pages : 0;
}

ld_budget *ld_state_budget(lua_State *L) {
    void *ud = NULL;
    lua_Alloc f = lua_getallocf(L, &ud);
    if (f == pool_alloc) return ((ld_pool *)ud)->budget;
    if (f == counted_alloc) return ((ld_counted *)ud)->budget;
    return NULL;
}
