/*
** blocker: a C module that blocks, built against Lua's headers and include/luadispatch.h only
** (the tests compile it: clang -shared -fPIC -I/usr/include/lua5.4 -Iinclude). Each function
** reports whether the interpreter was released while it blocked.
**
**   blocker.sleep(seconds)          sleeps between luadispatch_release and luadispatch_retake
**   blocker.sleep_macro(seconds)    the same between LUADISPATCH_BEGIN/END_BLOCKING
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
static void sleep_for(double seconds) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  long long ns = until.tv_nsec + (long long)(seconds * 1e9);
  until.tv_sec += (time_t)(ns / 1000000000);
  until.tv_nsec = (long)(ns % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {}
}

static int b_sleep(lua_State *L) {
  double seconds = luaL_checknumber(L, 1);
  luadispatch_released r = luadispatch_release(L);
  sleep_for(seconds);
  luadispatch_retake(r);
  lua_pushboolean(L, r.released != NULL);
  return 1;
}

static int b_sleep_macro(lua_State *L) {
  double seconds = luaL_checknumber(L, 1);
  int released;
  LUADISPATCH_BEGIN_BLOCKING(L)
  released = luadispatch_released_.released != NULL;
  sleep_for(seconds);
  LUADISPATCH_END_BLOCKING
  lua_pushboolean(L, released);
  return 1;
}

static int b_sleep_held(lua_State *L) {
  sleep_for(luaL_checknumber(L, 1));
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
