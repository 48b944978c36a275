// The REPL's terminal: lines read through GNU readline's callback interface (loaded at the first
// prompt, as lua5.4 links it: same editing and history), the host's wait hook called before each
// read so that blocks run while the prompt waits, and what they print meanwhile shown above the
// prompt: the prompt and the line being typed are taken off the screen, the output written, and
// both drawn again below it (as luvit's REPL does).
//
// Output from Lua happens only while the interpreter is held, and the REPL touches readline only
// while it holds it too (the wait hook releases it during its wait alone): so the hooks below and
// readline never run at the same time, and need no lock of their own.
#define _GNU_SOURCE
#include "terminal.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <lua5.4/lauxlib.h>
#include "ld_terminal.h"

#define LUA_MAXINPUT 512

static struct {
    int tried, ok, redraw;
    void (*install)(const char *, void (*)(char *));
    void (*read_char)(void);
    void (*remove)(void);
    void (*add_history)(const char *);
    // For redrawing around output (optional: without them output is not redrawn around).
    void (*save_prompt)(void);
    void (*restore_prompt)(void);
    void (*replace_line)(const char *, int);
    char *(*copy_text)(int, int);
    int (*redisplay)(void);
    int *point, *end;
    char *(*variable_value)(const char *);
} rl;
static char *rl_line;
static int rl_done;
/// Whether readline shows a prompt and waits for its line (under the interpreter lock).
static int prompt_shown;
/// While output is written: the line being typed and the cursor in it, to draw back after.
static char *hidden_text;
static int hidden_point, hidden_depth;

static void load_readline(void) {
    if (rl.tried) return;
    rl.tried = 1;
    void *h = dlopen("libreadline.so.8", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) return;
    rl.install = (void (*)(const char *, void (*)(char *)))dlsym(h, "rl_callback_handler_install");
    rl.read_char = (void (*)(void))dlsym(h, "rl_callback_read_char");
    rl.remove = (void (*)(void))dlsym(h, "rl_callback_handler_remove");
    rl.add_history = (void (*)(const char *))dlsym(h, "add_history");
    const char **name = (const char **)dlsym(h, "rl_readline_name");
    if (name) *name = "lua";
    rl.ok = rl.install && rl.read_char && rl.remove && rl.add_history;
    rl.save_prompt = (void (*)(void))dlsym(h, "rl_save_prompt");
    rl.restore_prompt = (void (*)(void))dlsym(h, "rl_restore_prompt");
    rl.replace_line = (void (*)(const char *, int))dlsym(h, "rl_replace_line");
    rl.copy_text = (char *(*)(int, int))dlsym(h, "rl_copy_text");
    rl.redisplay = (int (*)(void))dlsym(h, "rl_redisplay");
    rl.point = (int *)dlsym(h, "rl_point");
    rl.end = (int *)dlsym(h, "rl_end");
    rl.variable_value = (char *(*)(const char *))dlsym(h, "rl_variable_value");
    rl.redraw = rl.ok && rl.save_prompt && rl.restore_prompt && rl.replace_line && rl.copy_text && rl.redisplay &&
                rl.point && rl.end;
}

// MARK: leaving the terminal as it was

// While the prompt waits, readline has the terminal in its own mode (no echo, not canonical,
// bracketed paste on); it puts it back when the line is read, and lua5.4's readline also on a
// signal that ends the process. Here readline runs only while a character is read, so every
// other way out restores what was saved before the prompt: a signal that would end the process
// (Ctrl-C at an idle prompt), exit() from a block (atexit), and the host's _exit paths
// (ldcli_terminal_restore).
static struct termios saved_terminal;
static volatile sig_atomic_t terminal_taken, paste_on, echo_ctl, in_readline;
static const int ending_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
#define N_ENDING (sizeof ending_signals / sizeof ending_signals[0])
static int caught[N_ENDING];

static void write_all(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

void ldcli_terminal_restore(void) {
    if (!terminal_taken || in_readline) return;
    terminal_taken = 0;
    if (paste_on) write_all("\033[?2004l\r");  // what readline writes when it lets go
    tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_terminal);
}

// As readline's handler does: echo ^C (or ^\\), give the terminal back, then end by the signal.
static void on_ending_signal(int sig) {
    if (terminal_taken && !in_readline && echo_ctl) write_all(sig == SIGINT ? "^C" : sig == SIGQUIT ? "^\\" : "");
    ldcli_terminal_restore();
    signal(sig, SIG_DFL);
    raise(sig);
}

// Only where the signal would end the process anyway (its action is the default one): a
// script's own handling of it (a signal source) is left alone. Called before every wait, since
// blocks run during the wait may set SIGINT's action back to the default.
static void catch_ending_signals(void) {
    for (size_t i = 0; i < N_ENDING; i++) {
        struct sigaction old;
        if (sigaction(ending_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_ending_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(ending_signals[i], &sa, NULL);
        caught[i] = 1;
    }
}

static void release_ending_signals(void) {
    for (size_t i = 0; i < N_ENDING; i++) {
        struct sigaction old;
        if (!caught[i] || sigaction(ending_signals[i], NULL, &old) != 0) continue;
        if (old.sa_handler == on_ending_signal) signal(ending_signals[i], SIG_DFL);
        caught[i] = 0;
    }
}

static void take_terminal(void) {
    static int registered;
    if (!registered) registered = atexit(ldcli_terminal_restore) == 0;
    if (tcgetattr(STDIN_FILENO, &saved_terminal) != 0) return;
    echo_ctl = (saved_terminal.c_lflag & ECHOCTL) != 0;
    terminal_taken = 1;
}

static int variable_on(const char *name) {
    const char *v = rl.variable_value ? rl.variable_value(name) : NULL;
    return v != NULL && strcmp(v, "on") == 0;
}

static void on_line(char *line) {
    rl_line = line;
    rl_done = 1;
    prompt_shown = 0;
    rl.remove();
    terminal_taken = 0;
}

// Bytes stdio has already read from fd 0 and not handed out yet (glibc).
static int stdin_buffered(void) { return stdin->_IO_read_ptr < stdin->_IO_read_end; }

char *ldcli_read_line(const char *prompt, ldcli_wait_fn wait) {
    load_readline();
    if (rl.ok) {
        rl_done = 0;
        rl_line = NULL;
        // Caught from before the prompt shows: a signal may come as soon as it is seen.
        take_terminal();
        paste_on = variable_on("enable-bracketed-paste");
        echo_ctl = echo_ctl && variable_on("echo-control-characters");
        catch_ending_signals();
        rl.install(prompt, on_line);
        paste_on = variable_on("enable-bracketed-paste");  // as the first prompt read the settings
        prompt_shown = 1;
        while (!rl_done) {
            catch_ending_signals();
            if (wait) wait(0);
            in_readline = 1;
            rl.read_char();
            in_readline = 0;
        }
        release_ending_signals();
        return rl_line;
    }
    fputs(prompt, stdout);
    fflush(stdout);
    if (wait && !stdin_buffered()) wait(0);
    char *b = malloc(LUA_MAXINPUT);
    if (b == NULL || fgets(b, LUA_MAXINPUT, stdin) == NULL) {
        free(b);
        return NULL;
    }
    return b;
}

void ldcli_save_line(const char *line) {
    if (rl.ok) rl.add_history(line);
}

// MARK: output while the prompt waits

void ldcli_output_begin(void) {
    if (hidden_depth++ > 0 || !prompt_shown || !rl.redraw) return;
    hidden_point = *rl.point;
    hidden_text = rl.copy_text(0, *rl.end);
    rl.save_prompt();
    rl.replace_line("", 0);
    rl.redisplay();  // an empty line, the cursor at its start
}

void ldcli_output_end(int ended_line) {
    if (--hidden_depth > 0 || hidden_text == NULL) return;
    fflush(stdout);
    fflush(stderr);
    if (!ended_line) fputs("\n", stdout);  // the prompt starts a line of its own
    rl.restore_prompt();
    rl.replace_line(hidden_text, 0);
    *rl.point = hidden_point;
    rl.redisplay();
    free(hidden_text);
    hidden_text = NULL;
}

/// `print` at the REPL: lbaselib's, except that while the prompt waits (a block prints) the
/// values are converted first (__tostring may run Lua, which may switch), then written between
/// ldcli_output_begin and ldcli_output_end. Upvalue 1: the print it stands in for.
static int repl_print(lua_State *L) {
    int n = lua_gettop(L);
    if (!prompt_shown) {
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_insert(L, 1);
        lua_call(L, n, 0);
        return 0;
    }
    for (int i = 1; i <= n; i++) luaL_tolstring(L, i, NULL);
    ldcli_output_begin();
    for (int i = 1; i <= n; i++) {
        size_t l;
        const char *s = lua_tolstring(L, n + i, &l);
        if (i > 1) lua_writestring("\t", 1);
        lua_writestring(s, l);
    }
    lua_writeline();
    ldcli_output_end(1);
    return 0;
}

void ldcli_terminal_start(lua_State *L) {
    load_readline();
    if (!rl.redraw || !isatty(0) || !isatty(1)) return;
    // io.write and file:write to stdout and stderr (CLuaShim/stdlib) call the hooks too.
    ld_set_terminal_hooks(ldcli_output_begin, ldcli_output_end);
    if (lua_getglobal(L, "print") == LUA_TFUNCTION) {
        lua_pushcclosure(L, repl_print, 1);
        lua_setglobal(L, "print");
    } else {
        lua_pop(L, 1);
    }
}
