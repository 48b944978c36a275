// The platform seam: every call the runtime makes that is Linux's own goes through here (the C
// side in platform/, the descriptor watcher and signal forwarding in ld_events.h). Each entry
// says what it becomes on Darwin, the home of GCD, so a port is this folder and these headers:
//
// | here (Linux)                         | on Darwin                                            |
// |--------------------------------------|------------------------------------------------------|
// | futex wait/wake (the interpreter lock)| os_unfair_lock, or __ulock_wait/__ulock_wake          |
// | gettid, tgkill (the switch signal)   | pthread_threadid_np, pthread_kill                    |
// | pthread_getattr_np (ld_thread_stack) | pthread_get_stackaddr_np, pthread_get_stacksize_np   |
// | epoll (ld_watch_*, ld_epoll_refusal) | a kqueue (EVFILT_READ/WRITE, EV_ONESHOT)             |
// | pidfd_open (process sources)         | DispatchSource.makeProcessSource                     |
// | eventfd (ld_ready_fd, Ctrl-C's wake) | a pipe, or an EVFILT_USER event                      |
// | inotify (Events/InotifyHub.swift)    | DispatchSource.makeFileSystemObjectSource (kqueue)   |
// | kcmp (ld_same_open_file)             | fstat's st_dev/st_ino and fcntl(F_GETFL)             |
// | pipe2(O_CLOEXEC)                     | pipe, then fcntl(F_SETFD, FD_CLOEXEC)                |
// | mallinfo2 (ld_heap_in_use)           | malloc_zone_statistics                               |
// | the main queue's handle (ld_dispatch.h) | the main run loop's port (CFRunLoop)              |
#ifndef LD_PLATFORM_H
#define LD_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/// The calling thread's kernel id (gettid(2)).
int64_t ld_gettid(void);
/// The calling thread's stack: its lowest address and size (NULL and 0 when unknown).
void ld_thread_stack(void **low, size_t *size);
/// Sends `sig` to thread `tid` of this process (tgkill(2)); 0, or -1 + errno.
int ld_thread_signal(int32_t tid, int sig);

/// Sleeps while `*word == expected`, until woken or `timeout_ns` passes (negative: no timeout)
/// (FUTEX_WAIT_PRIVATE). Returns at once if the word differs.
void ld_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns);
/// Wakes up to `n` threads sleeping on `word` (FUTEX_WAKE_PRIVATE).
void ld_futex_wake(uint32_t *word, int n);

/// 0 if epoll accepts `fd` (or it is a regular file, which libdispatch treats as always
/// ready); otherwise the errno epoll_ctl gives, e.g. EPERM for /dev/null.
int ld_epoll_refusal(int fd);

/// pipe2(2) with O_CLOEXEC (not visible to Swift): 0, or -1 and errno.
int ld_pipe_cloexec(int fds[2]);

/// pidfd_open(2) (syscall 434): a descriptor that becomes readable when `pid` exits; -1 + errno.
int ld_pidfd_open(int pid);

/// An eventfd (close-on-exec, non-blocking) holding `initial`; -1 + errno.
int ld_eventfd(unsigned initial);

/// A descriptor that is readable at once and stays so (an eventfd holding 1, close-on-exec,
/// non-blocking): what a process source watches for a pid that no longer exists; -1 + errno.
int ld_ready_fd(void);

/// Bytes malloc has handed out and not had back (glibc's main arena), for measurements.
size_t ld_heap_in_use(void);

/// A plain pthread mutex.
typedef struct ld_mutex ld_mutex;
ld_mutex *ld_mutex_new(void);
void ld_mutex_free(ld_mutex *m);
void ld_mutex_lock(ld_mutex *m);
void ld_mutex_unlock(ld_mutex *m);

#endif
