#ifndef LD_NET_H
#define LD_NET_H

// Socket calls for dispatch.net (Sources/LuaDispatch/Net): the flags Swift cannot pass
// (SOCK_NONBLOCK | SOCK_CLOEXEC, accept4, MSG_NOSIGNAL) and sockaddr juggling. Every call that
// makes a descriptor makes it non-blocking and close-on-exec. Failures return -errno.

#include <stddef.h>
#include <sys/socket.h>

/// An IPv4, IPv6 or Unix-domain address.
typedef struct {
    struct sockaddr_storage storage;
    socklen_t length;
} ld_net_addr;

/// Fills `out` when `host` is a numeric IPv4 or IPv6 address: 1, else 0.
int ld_net_numeric(const char *host, int port, ld_net_addr *out);

/// Resolves `host` (a name or a numeric address) for a stream (or `datagram`) socket; `passive`
/// for binding. Blocks while the resolver works: call it without the interpreter. Fills up to
/// `max` addresses and returns how many, or a negative EAI_* code.
int ld_net_resolve(const char *host, int port, int datagram, int passive, ld_net_addr *out, int max);

/// The symbolic name of an EAI_* code ("EAI_NONAME") and its message (gai_strerror).
const char *ld_net_gai_name(int code);
const char *ld_net_gai_message(int code);

/// A Unix-domain address for `path`: 0, or -ENAMETOOLONG.
int ld_net_unix(const char *path, ld_net_addr *out);

/// The longest Unix-domain path, in bytes (sun_path less its terminating NUL).
int ld_net_unix_max(void);

/// A listening stream socket bound to `a` (with SO_REUSEADDR for TCP): the descriptor, or -errno.
int ld_net_listen(const ld_net_addr *a, int backlog);

/// A datagram socket bound to `a`: the descriptor, or -errno.
int ld_net_udp(const ld_net_addr *a);

/// The local address of `fd` (getsockname): 0, or -errno.
int ld_net_local(int fd, ld_net_addr *out);

/// The port of an IPv4 or IPv6 address (0 for Unix).
int ld_net_port(const ld_net_addr *a);

/// "host:port" ("[::1]:port" for IPv6) or the path of a Unix address, NUL-terminated in `buf`.
void ld_net_format(const ld_net_addr *a, char *buf, size_t size);

/// accept4(2), the new descriptor non-blocking and close-on-exec; the peer's address in `peer`.
int ld_net_accept(int fd, ld_net_addr *peer);

/// Starts a connect to `a` on a new socket: the descriptor, connected, or with `*pending` set
/// when the connection is still being made (EINPROGRESS and not yet writable: wait until it is,
/// then ask ld_net_connect_result); or -errno (-EAGAIN: a Unix listener's backlog is full, try
/// again).
int ld_net_connect(const ld_net_addr *a, int *pending);

/// The outcome of a connect that was in progress (SO_ERROR): 0 or an errno.
int ld_net_connect_result(int fd);

/// One datagram to `a` (never blocks; MSG_NOSIGNAL): bytes sent, or -errno.
long ld_net_sendto(int fd, const void *bytes, size_t length, const ld_net_addr *a);

/// One datagram (never blocks): its length, or -errno; the sender's address in `from`.
long ld_net_recvfrom(int fd, void *buffer, size_t length, ld_net_addr *from);

/// shutdown(2): `how` 0 read, 1 write, 2 both. 0, or -errno.
int ld_net_shutdown(int fd, int how);

/// 1 when `fd` is a stream socket (its two directions can be driven apart), else 0.
int ld_net_is_stream_socket(int fd);

/// Makes a write to a socket whose peer has gone fail with EPIPE instead of killing the
/// process: when SIGPIPE has its default action, installs a handler that does nothing. A
/// handler (unlike SIG_IGN) is reset by exec, so child processes still get the default. Once.
void ld_net_quiet_sigpipe(void);

#endif
