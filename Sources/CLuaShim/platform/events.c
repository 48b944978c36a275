// Signal forwarding and descriptor probes for the runtime's sources (Sources/LuaDispatch/Events).
#define _GNU_SOURCE
#include "ld_events.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <ucontext.h>
#include <unistd.h>

// Runs on whichever thread the kernel picked, which does not block `sig`: block it in this
// thread for good (the mask the kernel restores on return is the one in the context) and send
// the signal to the process again. Once every thread that can catch it has, the signal stays
// pending for the process until a signalfd reads it. Async-signal-safe: kill(2) only.
static void forward(int sig, siginfo_t *info, void *context) {
    (void)info;
    int saved = errno;
    ucontext_t *uc = context;
    sigaddset(&uc->uc_sigmask, sig);
    kill(getpid(), sig);
    errno = saved;
}

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t watched[65];

int ld_signal_watched(int sig) { return sig > 0 && sig < 65 && watched[sig]; }

int ld_signal_forward(int sig) {
    if (sig <= 0 || sig >= 65) return EINVAL;
    pthread_mutex_lock(&install_lock);
    watched[sig] = 1;
    struct sigaction current;
    int result = 0;
    if (sigaction(sig, NULL, &current) != 0) {
        result = errno;
    } else if (!(current.sa_flags & SA_SIGINFO)
               && (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN
                   || current.sa_handler == ld_interrupt_handler())) {
        struct sigaction sa = {0};
        sa.sa_sigaction = forward;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, NULL) != 0) result = errno;
    }
    pthread_mutex_unlock(&install_lock);
    return result;
}

int ld_signal_forwarding(int sig) {
    struct sigaction current;
    if (sigaction(sig, NULL, &current) != 0) return 0;
    return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == forward;
}

int ld_dup_cloexec(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 3); }

#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>

int ld_same_open_file(int a, int b) {
    long r = syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, a, b);
    if (r >= 0) return r == 0;
    // Without kcmp (a kernel built without it, or a seccomp filter refusing it): the same
    // file, opened for the same access, is the best that can be told.
    struct stat sa, sb;
    if (fstat(a, &sa) != 0 || fstat(b, &sb) != 0) return 0;
    int fa = fcntl(a, F_GETFL), fb = fcntl(b, F_GETFL);
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && fa >= 0 && (fa & O_ACCMODE) == (fb & O_ACCMODE);
}

// MARK: the descriptor watcher (DescriptorWatcher.swift)

#include <sys/epoll.h>

int ld_watch_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int ld_watch_arm(int epfd, int fd, uint64_t token, int write, int modify) {
    struct epoll_event ev = {.events = (write ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT, .data = {.u64 = token}};
    return epoll_ctl(epfd, modify ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
}

int ld_watch_remove(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL); }

int ld_watch_collect(int epfd, uint64_t *tokens, int max) {
    struct epoll_event ev[16];
    if (max > 16) max = 16;
    int n;
    do { n = epoll_wait(epfd, ev, max, 0); } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) tokens[i] = ev[i].data.u64;
    return n;
}

long ld_fd_queued(int fd) {
    int n = 0;
    return ioctl(fd, FIONREAD, &n) == 0 ? n : -1;
}

long ld_fd_space(int fd) {
    int size = fcntl(fd, F_GETPIPE_SZ);
    if (size < 0) return -1;
    int n = 0;
    if (ioctl(fd, FIONREAD, &n) != 0) n = 0;
    return size > n ? size - n : 0;
}
