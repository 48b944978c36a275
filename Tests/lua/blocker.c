/*
** blocker: a C module that blocks, built against Lua's headers and include/luadispatch.h only
** (the tests compile it: clang -shared -fPIC -I/usr/include/lua5.4 -Iinclude). Each function
** reports whether the interpreter was released while it blocked.
**
**   blocker.sleep(seconds [, gate]) sleeps between luadispatch_release and luadispatch_retake,
**                                   until the file `gate` exists if given (`seconds` at most)
**   blocker.sleep_macro(seconds [, gate])  the same between LUADISPATCH_BEGIN/END_BLOCKING
**   blocker.sleep_held(seconds)     sleeps holding the interpreter (what a module without the pair does)
**   blocker.read(fd, max)           read(2) on a blocking descriptor, released: the bytes read
*/
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"
#include "luadispatch.h"

/* Sleeps until a deadline: a signal (the runtime's switch signal, when the interpreter is held)
** ends clock_nanosleep early, and sleeping again for what nanosleep reports left would make no
** progress if signals came faster than the call could arm its timer. */
static struct timespec after(struct timespec t, double seconds) {
  long long ns = t.tv_nsec + (long long)(seconds * 1e9);
  t.tv_sec += (time_t)(ns / 1000000000);
  t.tv_nsec = (long)(ns % 1000000000);
  return t;
}

static int before(struct timespec a, struct timespec b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* With a gate: until the file exists, looking every 10 ms. */
static void sleep_for(double seconds, const char *gate) {
  struct timespec now, until;
  clock_gettime(CLOCK_MONOTONIC, &now);
  until = after(now, seconds);
  while (gate != NULL && access(gate, F_OK) != 0) {
    struct timespec step = after(now, 0.01);
    if (!before(step, until)) break;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &step, NULL) == EINTR) {}
    clock_gettime(CLOCK_MONOTONIC, &now);
  }
  if (gate != NULL && access(gate, F_OK) == 0) return;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {}
}

static int b_sleep(lua_State *L) {
  double seconds = luaL_checknumber(L, 1);
  const char *gate = luaL_optstring(L, 2, NULL);
  luadispatch_released r = luadispatch_release(L);
  sleep_for(seconds, gate);
  luadispatch_retake(r);
  lua_pushboolean(L, r.released != NULL);
  return 1;
}

static int b_sleep_macro(lua_State *L) {
  double seconds = luaL_checknumber(L, 1);
  const char *gate = luaL_optstring(L, 2, NULL);
  int released;
  LUADISPATCH_BEGIN_BLOCKING(L)
  released = luadispatch_released_.released != NULL;
  sleep_for(seconds, gate);
  LUADISPATCH_END_BLOCKING
  lua_pushboolean(L, released);
  return 1;
}

static int b_sleep_held(lua_State *L) {
  sleep_for(luaL_checknumber(L, 1), NULL);
  lua_pushboolean(L, 0);
  return 1;
}

static int b_read(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  char buf[256];
  size_t max = (size_t)luaL_optinteger(L, 2, sizeof buf);
  ssize_t n;
  if (max > sizeof buf) max = sizeof buf;
  luadispatch_released r = luadispatch_release(L);
  do n = read(fd, buf, max); while (n < 0 && errno == EINTR);
  luadispatch_retake(r);  /* errno kept */
  if (n < 0) return luaL_error(L, "read: errno %d", errno);
  lua_pushlstring(L, buf, (size_t)n);
  lua_pushboolean(L, r.released != NULL);
  return 2;
}

static const luaL_Reg functions[] = {
  {"sleep", b_sleep},
  {"sleep_macro", b_sleep_macro},
  {"sleep_held", b_sleep_held},
  {"read", b_read},
  {NULL, NULL},
};

int luaopen_blocker(lua_State *L) {
  luaL_newlib(L, functions);
  return 1;
}
