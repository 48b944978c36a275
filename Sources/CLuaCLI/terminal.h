// The REPL's terminal (terminal.c): reading a line, and output while the prompt waits.
#ifndef LDCLI_TERMINAL_H
#define LDCLI_TERMINAL_H

#include "luacli.h"

/// A malloc'd line read at `prompt` (readline's callback interface, else stdio), without its
/// newline, or NULL at end of input; `wait` (may be NULL) is called before each read.
char *ldcli_read_line(const char *prompt, ldcli_wait_fn wait);
/// Adds a line to readline's history.
void ldcli_save_line(const char *line);
/// The interactive REPL starts on a terminal: output while its prompt waits is shown above the
/// prompt (the global `print` and io.write to stdout and stderr take the prompt off the screen
/// and draw it back after).
void ldcli_terminal_start(lua_State *L);

#endif
