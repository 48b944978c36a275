#ifndef LD_EVENTS_H
#define LD_EVENTS_H

/// Makes sure a process-directed `sig` is never discarded before libdispatch watches it. When
/// the signal has no handler (default action or ignored), installs the runtime's forwarding
/// handler: a thread that catches the signal blocks it from then on and sends it to the process
/// again, so it ends up pending for the process, where libdispatch's signalfd reads it. A
/// handler already installed (libdispatch's own, which forwards the same way, or the
/// program's) is left alone. 0, or an errno.
int ld_signal_forward(int sig);

/// Whether a signal source has watched `sig` in this process: the CLI's Ctrl-C handling
/// (interrupt.c) then leaves the signal to the source.
int ld_signal_watched(int sig);

/// The CLI's Ctrl-C handler (interrupt.c), which a signal source for SIGINT replaces.
void (*ld_interrupt_handler(void))(int);

/// Whether the runtime's forwarding handler is installed for `sig` (for tests).
int ld_signal_forwarding(int sig);

/// fcntl(fd, F_DUPFD_CLOEXEC, 3): the runtime's own copy of a descriptor; -1 + errno.
int ld_dup_cloexec(int fd);
/// 1 when `a` and `b` refer to one open file description (kcmp(2); without it, the same file
/// opened for the same access), else 0.
int ld_same_open_file(int a, int b);

#include <stdint.h>

/// The runtime's own epoll instance for the descriptors sources watch (close-on-exec); -1 + errno.
int ld_watch_create(void);
/// Adds (`modify` 0) or re-arms (`modify` 1) `fd` for readability (`write` 0) or writability,
/// one-shot: one report (hang-up and error included), then nothing until re-armed. 0, or -1 + errno
/// (EPERM for regular files, which are always ready).
int ld_watch_arm(int epfd, int fd, uint64_t token, int write, int modify);
/// Removes `fd`. 0, or -1 + errno.
int ld_watch_remove(int epfd, int fd);
/// Collects up to `max` (at most 16) reported tokens without waiting; their count, or -1 + errno.
int ld_watch_collect(int epfd, uint64_t *tokens, int max);
/// Bytes queued for reading (FIONREAD), or -1 when the descriptor cannot say.
long ld_fd_queued(int fd);
/// Free space in a pipe (its capacity less what is queued), or -1 for other descriptors.
long ld_fd_space(int fd);

#endif
