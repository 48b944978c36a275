// The readiness set of dispatch.net's connections: see include/ld_netpoll.h.
#include "ld_netpoll.h"
#include "ld_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/epoll.h>

int ld_netpoll_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int ld_netpoll_interest(int set, int fd, uint64_t token, int had, int want) {
    struct epoll_event ev = {0};
    ev.data.u64 = token;
    ev.events = ((want & LD_NETPOLL_READ) ? EPOLLIN | EPOLLRDHUP : 0) | ((want & LD_NETPOLL_WRITE) ? EPOLLOUT : 0);
    int op = want == 0 ? EPOLL_CTL_DEL : had == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (want == 0 && had == 0) return 0;
    return epoll_ctl(set, op, fd, &ev) == 0 ? 0 : -errno;
}

int ld_netpoll_collect(int set, ld_netpoll_event *out, int max) {
    return ld_netpoll_wait(set, out, max, 0);
}

int ld_netpoll_wait(int set, ld_netpoll_event *out, int max, int timeout_ms) {
    struct epoll_event ev[64];
    if (max > 64) max = 64;
    int n;
    do { n = epoll_wait(set, ev, max, timeout_ms); } while (n < 0 && errno == EINTR && timeout_ms == 0);
    if (n < 0) return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        uint32_t e = ev[i].events, f = 0;
        if (e & (EPOLLIN | EPOLLRDHUP)) f |= LD_NETPOLL_READ;
        if (e & EPOLLOUT) f |= LD_NETPOLL_WRITE;
        if (e & (EPOLLHUP | EPOLLERR)) f |= LD_NETPOLL_HUP;
        out[i].token = ev[i].data.u64;
        out[i].flags = f;
    }
    return n;
}

#else  // Darwin and the BSDs: the same set as a kqueue.
#include <sys/event.h>

int ld_netpoll_create(void) {
    int fd = kqueue();
    if (fd < 0) return -errno;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

int ld_netpoll_interest(int set, int fd, uint64_t token, int had, int want) {
    struct kevent ch[2];
    int n = 0;
    if ((had ^ want) & LD_NETPOLL_READ)
        EV_SET(&ch[n++], fd, EVFILT_READ, (want & LD_NETPOLL_READ) ? EV_ADD : EV_DELETE, 0, 0, (void *)(uintptr_t)token);
    if ((had ^ want) & LD_NETPOLL_WRITE)
        EV_SET(&ch[n++], fd, EVFILT_WRITE, (want & LD_NETPOLL_WRITE) ? EV_ADD : EV_DELETE, 0, 0, (void *)(uintptr_t)token);
    if (n == 0) return 0;
    return kevent(set, ch, n, NULL, 0, NULL) == 0 ? 0 : -errno;
}

int ld_netpoll_collect(int set, ld_netpoll_event *out, int max) {
    return ld_netpoll_wait(set, out, max, 0);
}

int ld_netpoll_wait(int set, ld_netpoll_event *out, int max, int timeout_ms) {
    struct kevent ev[64];
    struct timespec limit = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
    if (max > 64) max = 64;
    int n;
    do { n = kevent(set, NULL, 0, ev, max, timeout_ms < 0 ? NULL : &limit); } while (n < 0 && errno == EINTR && timeout_ms == 0);
    if (n < 0) return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        uint32_t f = ev[i].filter == EVFILT_WRITE ? LD_NETPOLL_WRITE : LD_NETPOLL_READ;
        if (ev[i].flags & (EV_EOF | EV_ERROR)) f |= LD_NETPOLL_HUP;
        out[i].token = (uint64_t)(uintptr_t)ev[i].udata;
        out[i].flags = f;
    }
    return n;
}
#endif

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0  // Darwin: SO_NOSIGPIPE is set on each socket instead (ld_netpoll_prepare)
#endif

ssize_t ld_netpoll_read(int fd, void *buf, size_t size) {
    ssize_t n;
    do { n = read(fd, buf, size); } while (n < 0 && errno == EINTR);
    if (n < 0) return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    return n;
}

ssize_t ld_netpoll_write(int fd, const void *buf, size_t size) {
    ssize_t n;
    do { n = send(fd, buf, size, MSG_NOSIGNAL | MSG_DONTWAIT); } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == ENOTSOCK) {
        do { n = write(fd, buf, size); } while (n < 0 && errno == EINTR);
    }
    if (n < 0) return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    return n;
}

static int option_level(int option, int *name) {
    switch (option) {
    case 0: *name = TCP_NODELAY; return IPPROTO_TCP;
    case 1: *name = SO_KEEPALIVE; return SOL_SOCKET;
    case 2: *name = SO_REUSEADDR; return SOL_SOCKET;
#ifdef SO_REUSEPORT
    case 3: *name = SO_REUSEPORT; return SOL_SOCKET;
#endif
    case 4: *name = SO_RCVBUF; return SOL_SOCKET;
    case 5: *name = SO_SNDBUF; return SOL_SOCKET;
    default: return -1;
    }
}

int ld_netpoll_set_option(int fd, int option, int value) {
    int name = 0, level = option_level(option, &name);
    if (level < 0) return -ENOPROTOOPT;
    return setsockopt(fd, level, name, &value, sizeof value) == 0 ? 0 : -errno;
}

int ld_netpoll_get_option(int fd, int option) {
    int name = 0, level = option_level(option, &name), value = 0;
    socklen_t len = sizeof value;
    if (level < 0) return -ENOPROTOOPT;
    return getsockopt(fd, level, name, &value, &len) == 0 ? value : -errno;
}

int ld_netpoll_listen(const void *addr, int backlog, int reuseport) {
    const ld_net_addr *a = addr;
#ifdef SOCK_CLOEXEC
    // Close-on-exec from the start: a program started meanwhile must not inherit it.
    int fd = socket(a->storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
#else
    int fd = socket(a->storage.ss_family, SOCK_STREAM, 0);
#endif
    if (fd < 0) return -errno;
    int on = 1, e = ld_netpoll_prepare(fd);
    if (e != 0) { close(fd); return e; }
    if (a->storage.ss_family != AF_UNIX) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
#ifdef SO_REUSEPORT
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) { e = -errno; close(fd); return e; }
#endif
    if (bind(fd, (const struct sockaddr *)&a->storage, a->length) != 0 || listen(fd, backlog) != 0) {
        e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

int ld_netpoll_socket_type(int fd) {
    int type = 0;
    socklen_t len = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 ? type : -errno;
}

int ld_netpoll_prepare(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return -errno;
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) return -errno;
#ifdef SO_NOSIGPIPE
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    return 0;
}
