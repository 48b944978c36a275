// Linux's own calls (ld_platform.h, which says what each becomes on Darwin).
#define _GNU_SOURCE
#include "ld_platform.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int64_t ld_gettid(void) { return (int64_t)syscall(SYS_gettid); }

void ld_thread_stack(void **low, size_t *size) {
    *low = NULL;
    *size = 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, low, size);
        pthread_attr_destroy(&attr);
    }
}

int ld_thread_signal(int32_t tid, int sig) { return (int)syscall(SYS_tgkill, getpid(), tid, sig); }

void ld_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec t, *timeout = NULL;
    if (timeout_ns >= 0) {
        t.tv_sec = timeout_ns / 1000000000;
        t.tv_nsec = timeout_ns % 1000000000;
        timeout = &t;
    }
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, timeout, NULL, 0);
}

void ld_futex_wake(uint32_t *word, int n) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0); }

size_t ld_heap_in_use(void) { return mallinfo2().uordblks; }

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int ld_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int ld_eventfd(unsigned initial) { return eventfd(initial, EFD_CLOEXEC | EFD_NONBLOCK); }

int ld_ready_fd(void) { return ld_eventfd(1); }

int ld_epoll_refusal(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return errno;
    if (S_ISREG(st.st_mode)) return 0;
    int probe = epoll_create1(EPOLL_CLOEXEC);
    if (probe < 0) return 0;
    struct epoll_event ev = {.events = EPOLLIN};
    int result = epoll_ctl(probe, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
    close(probe);
    return result;
}

int ld_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
