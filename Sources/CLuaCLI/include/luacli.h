// The `lua` stand-alone interpreter's command line (lua.c of Lua 5.4.4), run on an interpreter
// the host made, with one hook: waiting for input at the REPL's prompt, so that the host can
// go on servicing its event loop meanwhile.
#ifndef LUACLI_H
#define LUACLI_H

#include <lua5.4/lua.h>

#define LDCLI_HAS_ERROR 1
#define LDCLI_HAS_I 2
#define LDCLI_HAS_V 4
#define LDCLI_HAS_E 8
#define LDCLI_HAS_NOENV 16

/// lua.c's collectargs: the options before the script, as a mask of LDCLI_HAS_* (or exactly
/// LDCLI_HAS_ERROR); `*first` is the index of the script (argc when none) or of the bad option.
int ldcli_collectargs(char **argv, int *first);

/// Blocks until file descriptor `fd` is readable, with the interpreter released meanwhile.
typedef void (*ldcli_wait_fn)(int fd);

/// Called with every error lua.c reports (a chunk's, a prompt line's), before it is printed.
typedef void (*ldcli_error_fn)(lua_State *L, const char *message);
void ldcli_set_error_hook(ldcli_error_fn hook);

/// Around output written while the REPL's prompt waits (an error a block reports): takes the
/// prompt and the line being typed off the screen, then (`ended_line`: the output ended with a
/// newline) draws them back below it. Nothing happens outside the interactive REPL. Call them
/// with the interpreter held.
void ldcli_output_begin(void);
void ldcli_output_end(int ended_line);

/// A line `-v` (and `-i`) print before Lua's banner, and the usage text a bad option prints after
/// its message instead of lua's (both NULL: lua's output alone). Kept, not copied.
void ldcli_set_version_line(const char *line);
void ldcli_set_usage(const char *text);

/// Called with every error lua.c reports; returns a malloc'd message to print instead, or NULL.
typedef char *(*ldcli_message_fn)(lua_State *L, const char *message);
void ldcli_set_message_filter(ldcli_message_fn filter);

/// Gives the terminal back as it was before the REPL's prompt took it (modes, bracketed paste),
/// if the prompt has it now: for ways out that skip atexit (_exit). Async-signal-safe.
void ldcli_terminal_restore(void);

/// With `on`, every chunk is loaded as text only (a binary chunk gets Lua's "attempt to load a
/// binary chunk" error): for `--sandbox`.
void ldcli_set_text_only(int on);

/// Runs lua.c's `pmain` on `L` (the libraries already open): LUA_INIT, -e / -l / -W, the
/// script, the REPL or standard input. Returns 1 when everything ran without error (lua.c's
/// exit status 0). `wait` (may be NULL) is called before reading each line at the prompt.
int ldcli_main(lua_State *L, int argc, char **argv, ldcli_wait_fn wait);

/// Makes freed blocks of 128 KiB or more go back to the system at once (memory.c), so that
/// resident memory follows what `--memory-limit` counts.
void ldcli_return_freed_memory(void);

#endif
