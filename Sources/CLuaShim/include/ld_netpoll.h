#ifndef LD_NETPOLL_H
#define LD_NETPOLL_H

// The readiness set behind dispatch.net's connections (Sources/LuaDispatch/Net/NetPoller.swift):
// one epoll instance (a kqueue on Darwin) holds every socket of a queue's connections and
// listeners, and one Dispatch read source on it delivers every ready socket at once. Interest is
// level-triggered: a socket not drained is reported again. Failures return -errno.

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Readiness flags of a report.
enum { LD_NETPOLL_READ = 1, LD_NETPOLL_WRITE = 2, LD_NETPOLL_HUP = 4 };

typedef struct {
    uint64_t token;
    uint32_t flags;
} ld_netpoll_event;

/// A new readiness set (close-on-exec): its descriptor, or -errno.
int ld_netpoll_create(void);

/// Sets `fd`'s interest to `want` (LD_NETPOLL_READ | LD_NETPOLL_WRITE) under `token`; `had` is
/// the interest it had (0: not in the set, 0 wanted: removed). 0, or -errno.
int ld_netpoll_interest(int set, int fd, uint64_t token, int had, int want);

/// Collects up to `max` ready descriptors without waiting: how many, or -errno.
int ld_netpoll_collect(int set, ld_netpoll_event *out, int max);

/// Waits up to `timeout_ms` (-1: for ever) for ready descriptors, then collects up to `max`:
/// how many (0 on a timeout or a signal), or -errno.
int ld_netpoll_wait(int set, ld_netpoll_event *out, int max, int timeout_ms);

/// read(2) retried on EINTR: bytes (0 at end of stream), or -errno.
ssize_t ld_netpoll_read(int fd, void *buf, size_t size);

/// send(2) with MSG_NOSIGNAL (write(2) for what is not a socket), retried on EINTR: bytes, or
/// -errno (-EAGAIN when the socket's buffer is full).
ssize_t ld_netpoll_write(int fd, const void *buf, size_t size);

/// Socket options by name index: 0 nodelay, 1 keepalive, 2 reuseaddr, 3 reuseport, 4 rcvbuf,
/// 5 sndbuf. Set `value` (0 or -errno); ld_netpoll_get_option reads it (>= 0, or -errno).
int ld_netpoll_set_option(int fd, int option, int value);
int ld_netpoll_get_option(int fd, int option);

/// A listening stream socket bound to `a` (an ld_net_addr of ld_net.h) as ld_net_listen makes it,
/// with SO_REUSEPORT when `reuseport`: the descriptor, or -errno.
int ld_netpoll_listen(const void *a, int backlog, int reuseport);

/// A socket's type (SO_TYPE: SOCK_STREAM...), or -errno (-ENOTSOCK).
int ld_netpoll_socket_type(int fd);

/// Makes `fd` non-blocking and close-on-exec: 0, or -errno.
int ld_netpoll_prepare(int fd);

#endif
