// A long-lived C host embedding Lua 5.4: it opens a state, loads dispatch.so, runs work (some of
// it still running or queued at close), closes the state, and does it again. Each round prints
// the process's thread count and resident memory, so that a test can tell a runtime that is
// not cleaned up at lua_close (threads or memory growing with the rounds).
//   c-host MODULE_DIR ROUNDS
#include <lua5.4/lauxlib.h>
#include <lua5.4/lua.h>
#include <lua5.4/lualib.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int thread_count(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static long rss_kb(void) {
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

static const char *script =
    "package.cpath = MODULE_DIR .. '/?.so;' .. package.cpath\n"
    "local d = require 'dispatch'\n"
    "local q = d.queue{label = 'c-host', concurrent = true}\n"
    "local n, count = 0, d.queue('count')\n"
    // Blocks of a concurrent queue may switch between reading n and writing it.
    "for i = 1, 20 do q:async(function() d.sleep(0.001) count:sync(function() n = n + 1 end) end) end\n"
    "q:barrier_sync(function() end)\n"
    "d.main:async(function() n = n + 1 end)\n"
    "d.run()\n"
    "assert(n == 21, n)\n"
    "local s = d.source.timer{deadline = 0.001, interval = 0.001, queue = q}\n"
    "s:set_event_handler(function() end)\n"
    "s:resume()\n"                                        // a live source at close
    "q:async(function() d.sleep(0.02) end)\n"            // a block parked at close
    "d.queue('held'):suspend()\n"
    "d.task(function() d.sleep(0.01) end)\n"             // a task suspended at close
    "d.sleep(0.005)\n";

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int rounds = atoi(argv[2]);
    for (int i = 1; i <= rounds; i++) {
        lua_State *L = luaL_newstate();
        luaL_openlibs(L);
        lua_pushstring(L, argv[1]);
        lua_setglobal(L, "MODULE_DIR");
        if (luaL_dostring(L, script) != LUA_OK) {
            fprintf(stderr, "round %d: %s\n", i, lua_tostring(L, -1));
            return 1;
        }
        lua_close(L);
        printf("round %d: %d threads, %ld kB\n", i, thread_count(), rss_kb());
        fflush(stdout);
    }
    return 0;
}
