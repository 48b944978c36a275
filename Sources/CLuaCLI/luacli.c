// lua.c (Lua 5.4.4, Copyright (C) 1994-2022 Lua.org, PUC-Rio, MIT licence) adapted to an
// interpreter the host creates: the same options, order, messages and exit statuses. What
// differs: the state and its libraries come from the host (which honours -E before opening
// them), the message handler and Ctrl-C handling are the runtime's (identical to lua.c's, in
// CLuaShim), the REPL reads lines through readline's callback interface, loaded only when a
// prompt is shown, calling the host's wait hook before each read (terminal.c), and at the
// interactive prompt `dispatch` is a global.
#define _GNU_SOURCE
#include "luacli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>
#include "ld_control.h"
#include "ld_binding.h"
#include "terminal.h"

#define LUA_INIT_VAR "LUA_INIT"

// Every chunk the command line loads (the script, -e, LUA_INIT, standard input, the prompt's
// lines) is loaded in this mode: "t" in a sandbox, where a binary chunk could crash the VM.
static const char *chunk_mode;
void ldcli_set_text_only(int on) { chunk_mode = on ? "t" : NULL; }
#undef luaL_loadfile
#define luaL_loadfile(L, f) luaL_loadfilex(L, f, chunk_mode)
#undef luaL_loadbuffer
#define luaL_loadbuffer(L, s, sz, n) luaL_loadbufferx(L, s, sz, n, chunk_mode)

static const char *progname = "lua";
static ldcli_wait_fn wait_hook;
static const char *version_line, *usage_text;
void ldcli_set_version_line(const char *line) { version_line = line; }
void ldcli_set_usage(const char *text) { usage_text = text; }

static void print_usage(const char *badoption) {
    lua_writestringerror("%s: ", progname);
    if (badoption[1] == 'e' || badoption[1] == 'l')
        lua_writestringerror("'%s' needs argument\n", badoption);
    else
        lua_writestringerror("unrecognized option '%s'\n", badoption);
    if (usage_text != NULL) {
        lua_writestringerror("%s", usage_text);
        return;
    }
    lua_writestringerror(
        "usage: %s [options] [script [args]]\n"
        "Available options are:\n"
        "  -e stat   execute string 'stat'\n"
        "  -i        enter interactive mode after executing 'script'\n"
        "  -l mod    require library 'mod' into global 'mod'\n"
        "  -l g=mod  require library 'mod' into global 'g'\n"
        "  -v        show version information\n"
        "  -E        ignore environment variables\n"
        "  -W        turn warnings on\n"
        "  --        stop handling options\n"
        "  -         stop handling options and execute stdin\n",
        progname);
}

static void l_message(const char *pname, const char *msg) {
    if (pname) lua_writestringerror("%s: ", pname);
    lua_writestringerror("%s\n", msg);
}

static ldcli_error_fn error_hook;
static ldcli_message_fn message_filter;

void ldcli_set_error_hook(ldcli_error_fn hook) { error_hook = hook; }
void ldcli_set_message_filter(ldcli_message_fn filter) { message_filter = filter; }

static int report(lua_State *L, int status) {
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        if (error_hook != NULL && msg != NULL) error_hook(L, msg);
        char *replaced = message_filter != NULL && msg != NULL ? message_filter(L, msg) : NULL;
        l_message(progname, replaced != NULL ? replaced : msg);
        free(replaced);
        lua_pop(L, 1);
    }
    return status;
}

static int docall(lua_State *L, int narg, int nres) {
    int status;
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, ld_msgh);
    lua_insert(L, base);
    ld_interrupt_arm(L, ld_lock_held());
    status = lua_pcall(L, narg, nres, base);
    ld_interrupt_disarm();
    lua_remove(L, base);
    return status;
}

static void print_version(void) {
    lua_writestring(LUA_COPYRIGHT, strlen(LUA_COPYRIGHT));
    lua_writeline();
}

static void createargtable(lua_State *L, char **argv, int argc, int script) {
    int i, narg;
    if (script == argc) script = 0;
    narg = argc - (script + 1);
    lua_createtable(L, narg, script + 1);
    for (i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
    if (status == LUA_OK) status = docall(L, 0, 0);
    return report(L, status);
}

static int dofile(lua_State *L, const char *name) { return dochunk(L, luaL_loadfile(L, name)); }

static int dostring(lua_State *L, const char *s, const char *name) {
    return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

static int dolibrary(lua_State *L, char *globname) {
    int status;
    char *modname = strchr(globname, '=');
    if (modname == NULL)
        modname = globname;
    else {
        *modname = '\0';
        modname++;
    }
    lua_getglobal(L, "require");
    lua_pushstring(L, modname);
    status = docall(L, 1, 1);
    if (status == LUA_OK) lua_setglobal(L, globname);
    return report(L, status);
}

static int pushargs(lua_State *L) {
    int i, n;
    if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
    n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
    lua_remove(L, -i);
    return n;
}

static int handle_script(lua_State *L, char **argv) {
    int status;
    const char *fname = argv[0];
    if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL;
    status = luaL_loadfile(L, fname);
    if (status == LUA_OK) {
        int n = pushargs(L);
        status = docall(L, n, LUA_MULTRET);
    }
    return report(L, status);
}

#define has_error LDCLI_HAS_ERROR
#define has_i LDCLI_HAS_I
#define has_v LDCLI_HAS_V
#define has_e LDCLI_HAS_E
#define has_E LDCLI_HAS_NOENV

int ldcli_collectargs(char **argv, int *first) {
    int args = 0;
    int i;
    for (i = 1; argv[i] != NULL; i++) {
        *first = i;
        if (argv[i][0] != '-') return args;
        switch (argv[i][1]) {
        case '-':
            if (argv[i][2] != '\0') return has_error;
            *first = i + 1;
            return args;
        case '\0':
            return args;
        case 'E':
            if (argv[i][2] != '\0') return has_error;
            args |= has_E;
            break;
        case 'W':
            if (argv[i][2] != '\0') return has_error;
            break;
        case 'i':
            args |= has_i;  // -i implies -v
            /* FALLTHROUGH */
        case 'v':
            if (argv[i][2] != '\0') return has_error;
            args |= has_v;
            break;
        case 'e':
            args |= has_e;
            /* FALLTHROUGH */
        case 'l':
            if (argv[i][2] == '\0') {
                i++;
                if (argv[i] == NULL || argv[i][0] == '-') return has_error;
            }
            break;
        default:
            return has_error;
        }
    }
    *first = i;
    return args;
}

static int runargs(lua_State *L, char **argv, int n) {
    int i;
    for (i = 1; i < n; i++) {
        int option = argv[i][1];
        switch (option) {
        case 'e':
        case 'l': {
            int status;
            char *extra = argv[i] + 2;
            if (*extra == '\0') extra = argv[++i];
            status = (option == 'e') ? dostring(L, extra, "=(command line)") : dolibrary(L, extra);
            if (status != LUA_OK) return 0;
            break;
        }
        case 'W':
            lua_warning(L, "@on", 0);
            break;
        }
    }
    return 1;
}

static int handle_luainit(lua_State *L) {
    const char *name = "=" LUA_INIT_VAR LUA_VERSUFFIX;
    const char *init = getenv(name + 1);
    if (init == NULL) {
        name = "=" LUA_INIT_VAR;
        init = getenv(name + 1);
    }
    if (init == NULL) return LUA_OK;
    else if (init[0] == '@') return dofile(L, init + 1);
    else return dostring(L, init, name);
}

// MARK: the REPL

#define LUA_PROMPT "> "
#define LUA_PROMPT2 ">> "
static const char *get_prompt(lua_State *L, int firstline) {
    if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") == LUA_TNIL)
        return (firstline ? LUA_PROMPT : LUA_PROMPT2);
    else {
        const char *p = luaL_tolstring(L, -1, NULL);
        lua_remove(L, -2);
        return p;
    }
}

#define EOFMARK "<eof>"
#define marklen (sizeof(EOFMARK) / sizeof(char) - 1)

static int incomplete(lua_State *L, int status) {
    if (status == LUA_ERRSYNTAX) {
        size_t lmsg;
        const char *msg = lua_tolstring(L, -1, &lmsg);
        if (lmsg >= marklen && strcmp(msg + lmsg - marklen, EOFMARK) == 0) {
            lua_pop(L, 1);
            return 1;
        }
    }
    return 0;
}

static int pushline(lua_State *L, int firstline) {
    size_t l;
    const char *prmt = get_prompt(L, firstline);
    char *b = ldcli_read_line(prmt, wait_hook);
    if (b == NULL) return 0;
    lua_pop(L, 1);
    l = strlen(b);
    if (l > 0 && b[l - 1] == '\n') b[--l] = '\0';
    if (firstline && b[0] == '=')
        lua_pushfstring(L, "return %s", b + 1);
    else
        lua_pushlstring(L, b, l);
    free(b);
    return 1;
}

static int addreturn(lua_State *L) {
    const char *line = lua_tostring(L, -1);
    const char *retline = lua_pushfstring(L, "return %s;", line);
    int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
    if (status == LUA_OK) {
        lua_remove(L, -2);
        if (line[0] != '\0') ldcli_save_line(line);
    } else
        lua_pop(L, 2);
    return status;
}

static int multiline(lua_State *L) {
    for (;;) {
        size_t len;
        const char *line = lua_tolstring(L, 1, &len);
        int status = luaL_loadbuffer(L, line, len, "=stdin");
        if (!incomplete(L, status) || !pushline(L, 0)) {
            ldcli_save_line(line);
            return status;
        }
        lua_pushliteral(L, "\n");
        lua_insert(L, -2);
        lua_concat(L, 3);
    }
}

static int loadline(lua_State *L) {
    int status;
    lua_settop(L, 0);
    if (!pushline(L, 1)) return -1;
    if ((status = addreturn(L)) != LUA_OK) status = multiline(L);
    lua_remove(L, 1);
    return status;
}

static void l_print(lua_State *L) {
    int n = lua_gettop(L);
    if (n > 0) {
        luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
        lua_getglobal(L, "print");
        lua_insert(L, 1);
        if (lua_pcall(L, n, 0, 0) != LUA_OK)
            l_message(progname, lua_pushfstring(L, "error calling 'print' (%s)", lua_tostring(L, -1)));
    }
}

/// At the interactive prompt `dispatch` is a global, as after `-l dispatch` (unless the script
/// or an option has set one).
static void global_dispatch(lua_State *L) {
    int t = lua_getglobal(L, "dispatch");
    lua_pop(L, 1);
    if (t != LUA_TNIL) return;
    t = lua_getglobal(L, "require");
    lua_pop(L, 1);
    char name[] = "dispatch";
    if (t == LUA_TFUNCTION) dolibrary(L, name);
}

static void doREPL(lua_State *L) {
    int status;
    const char *oldprogname = progname;
    global_dispatch(L);
    ldcli_terminal_start(L);
    progname = NULL;
    while ((status = loadline(L)) != -1) {
        if (status == LUA_OK) status = docall(L, 0, LUA_MULTRET);
        if (status == LUA_OK) l_print(L);
        else report(L, status);
    }
    lua_settop(L, 0);
    lua_writeline();
    progname = oldprogname;
}

static int pmain(lua_State *L) {
    int argc = (int)lua_tointeger(L, 1);
    char **argv = (char **)lua_touserdata(L, 2);
    int script;
    int args = ldcli_collectargs(argv, &script);
    luaL_checkversion(L);
    if (argv[0] && argv[0][0]) progname = argv[0];
    if (args == has_error) {
        print_usage(argv[script]);
        return 0;
    }
    if (args & has_v) {
        // Before lua's banner, which stays the line before what the chunks print (the Lua test
        // suite's main.lua checks that).
        if (version_line != NULL) {
            lua_writestring(version_line, strlen(version_line));
            lua_writeline();
        }
        print_version();
    }
    createargtable(L, argv, argc, script);
    lua_gc(L, LUA_GCGEN, 0, 0);
    if (!(args & has_E)) {
        if (handle_luainit(L) != LUA_OK) return 0;
    }
    if (!runargs(L, argv, script)) return 0;
    if (script < argc && handle_script(L, argv + script) != LUA_OK) return 0;
    if (args & has_i)
        doREPL(L);
    else if (script == argc && !(args & (has_e | has_v))) {
        if (isatty(0)) {
            print_version();
            doREPL(L);
        } else
            dofile(L, NULL);
    }
    lua_pushboolean(L, 1);
    return 1;
}

int ldcli_main(lua_State *L, int argc, char **argv, ldcli_wait_fn wait) {
    int status, result;
    wait_hook = wait;
    if (argv[0] && argv[0][0]) progname = argv[0];
    lua_pushcfunction(L, &pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    status = lua_pcall(L, 2, 1, 0);
    result = lua_toboolean(L, -1);
    report(L, status);
    lua_settop(L, 0);
    return result && status == LUA_OK;
}
