// Output to the terminal while an interactive prompt waits (the CLI's REPL, CLuaCLI/terminal.c):
// io.write and file:write to stdout or stderr call the hooks around each write, so that the
// prompt and the line being typed are taken off the screen and drawn back after.
#ifndef LD_TERMINAL_H
#define LD_TERMINAL_H

/// `begin` and `end(ended_line)` are called with the interpreter held; NULL: none (the default).
void ld_set_terminal_hooks(void (*begin)(void), void (*end)(int ended_line));

#endif
