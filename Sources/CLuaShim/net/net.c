// Socket system calls for dispatch.net (see ld_net.h).
#define _GNU_SOURCE
#include "ld_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int fail(void) { return -errno; }

static void set_port(ld_net_addr *a, int port) {
    if (a->storage.ss_family == AF_INET) ((struct sockaddr_in *)&a->storage)->sin_port = htons((uint16_t)port);
    if (a->storage.ss_family == AF_INET6) ((struct sockaddr_in6 *)&a->storage)->sin6_port = htons((uint16_t)port);
}

int ld_net_numeric(const char *host, int port, ld_net_addr *out) {
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&out->storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->storage;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        out->length = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        out->length = sizeof *v6;
    } else {
        return 0;
    }
    set_port(out, port);
    return 1;
}

int ld_net_resolve(const char *host, int port, int datagram, int passive, ld_net_addr *out, int max) {
    struct addrinfo hints = {0}, *list = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = datagram ? SOCK_DGRAM : SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    char service[8];
    snprintf(service, sizeof service, "%d", port);
    int r = getaddrinfo(host, service, &hints, &list);
    if (r != 0) return r < 0 ? r : -r;
    int n = 0;
    for (struct addrinfo *ai = list; ai != NULL && n < max; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof out[n].storage) continue;
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        memset(&out[n], 0, sizeof out[n]);
        memcpy(&out[n].storage, ai->ai_addr, ai->ai_addrlen);
        out[n].length = ai->ai_addrlen;
        n++;
    }
    freeaddrinfo(list);
    return n > 0 ? n : EAI_NONAME;
}

const char *ld_net_gai_name(int code) {
    switch (code) {
    case EAI_NONAME: return "EAI_NONAME";
    case EAI_AGAIN: return "EAI_AGAIN";
    case EAI_FAIL: return "EAI_FAIL";
    case EAI_FAMILY: return "EAI_FAMILY";
    case EAI_MEMORY: return "EAI_MEMORY";
    case EAI_SERVICE: return "EAI_SERVICE";
    case EAI_SOCKTYPE: return "EAI_SOCKTYPE";
    case EAI_BADFLAGS: return "EAI_BADFLAGS";
#ifdef EAI_NODATA
    case EAI_NODATA: return "EAI_NODATA";
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY: return "EAI_ADDRFAMILY";
#endif
    case EAI_SYSTEM: return "EAI_SYSTEM";
    default: return "EAI_FAIL";
    }
}

const char *ld_net_gai_message(int code) { return gai_strerror(code); }

int ld_net_unix_max(void) { return (int)sizeof(((struct sockaddr_un *)0)->sun_path) - 1; }

int ld_net_unix(const char *path, ld_net_addr *out) {
    memset(out, 0, sizeof *out);
    struct sockaddr_un *un = (struct sockaddr_un *)&out->storage;
    size_t n = strlen(path);
    if (n == 0 || n > (size_t)ld_net_unix_max()) return -ENAMETOOLONG;
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, path, n + 1);
    out->length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    return 0;
}

static int new_socket(const ld_net_addr *a, int type) {
    return socket(a->storage.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int ld_net_listen(const ld_net_addr *a, int backlog) {
    int fd = new_socket(a, SOCK_STREAM);
    if (fd < 0) return fail();
    int on = 1;
    // A server restarted on its port must not wait for the old connections' TIME_WAIT (a port
    // another socket listens on still fails with EADDRINUSE).
    if (a->storage.ss_family != AF_UNIX) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(fd, (const struct sockaddr *)&a->storage, a->length) != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int ld_net_udp(const ld_net_addr *a) {
    int fd = new_socket(a, SOCK_DGRAM);
    if (fd < 0) return fail();
    if (bind(fd, (const struct sockaddr *)&a->storage, a->length) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int ld_net_local(int fd, ld_net_addr *out) {
    memset(out, 0, sizeof *out);
    out->length = sizeof out->storage;
    return getsockname(fd, (struct sockaddr *)&out->storage, &out->length) == 0 ? 0 : fail();
}

int ld_net_port(const ld_net_addr *a) {
    if (a->storage.ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)&a->storage)->sin_port);
    if (a->storage.ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)&a->storage)->sin6_port);
    return 0;
}

void ld_net_format(const ld_net_addr *a, char *buf, size_t size) {
    char host[INET6_ADDRSTRLEN] = "";
    switch (a->storage.ss_family) {
    case AF_INET:
        inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->storage)->sin_addr, host, sizeof host);
        snprintf(buf, size, "%s:%d", host, ld_net_port(a));
        break;
    case AF_INET6:
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&a->storage)->sin6_addr, host, sizeof host);
        snprintf(buf, size, "[%s]:%d", host, ld_net_port(a));
        break;
    case AF_UNIX: {
        const struct sockaddr_un *un = (const struct sockaddr_un *)&a->storage;
        size_t n = a->length > offsetof(struct sockaddr_un, sun_path) ? a->length - offsetof(struct sockaddr_un, sun_path) : 0;
        if (n > sizeof un->sun_path) n = sizeof un->sun_path;
        snprintf(buf, size, "%.*s", (int)strnlen(un->sun_path, n), un->sun_path);
        break;
    }
    default: snprintf(buf, size, "?");
    }
}

int ld_net_accept(int fd, ld_net_addr *peer) {
    memset(peer, 0, sizeof *peer);
    peer->length = sizeof peer->storage;
    int c;
    do { c = accept4(fd, (struct sockaddr *)&peer->storage, &peer->length, SOCK_NONBLOCK | SOCK_CLOEXEC); } while (c < 0 && errno == EINTR);
    return c < 0 ? fail() : c;
}

int ld_net_connect(const ld_net_addr *a, int *pending) {
    *pending = 0;
    int fd = new_socket(a, SOCK_STREAM);
    if (fd < 0) return fail();
    if (connect(fd, (const struct sockaddr *)&a->storage, a->length) == 0) return fd;
    if (errno == EINPROGRESS || errno == EINTR) {
        // On loopback the handshake is over by the time connect(2) returns EINPROGRESS: one
        // look saves the caller a round through its event loop.
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, 0) == 1) {
            int error = ld_net_connect_result(fd);
            if (error == 0) return fd;
            close(fd);
            return -error;
        }
        *pending = 1;
        return fd;
    }
    int e = errno;
    close(fd);
    return -e;
}

int ld_net_connect_result(int fd) {
    int error = 0;
    socklen_t n = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &n) != 0) return errno;
    return error;
}

long ld_net_sendto(int fd, const void *bytes, size_t length, const ld_net_addr *a) {
    ssize_t n;
    do {
        n = sendto(fd, bytes, length, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&a->storage, a->length);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? fail() : n;
}

long ld_net_recvfrom(int fd, void *buffer, size_t length, ld_net_addr *from) {
    memset(from, 0, sizeof *from);
    from->length = sizeof from->storage;
    ssize_t n;
    do {
        n = recvfrom(fd, buffer, length, MSG_DONTWAIT, (struct sockaddr *)&from->storage, &from->length);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? fail() : n;
}

int ld_net_shutdown(int fd, int how) {
    static const int hows[] = {SHUT_RD, SHUT_WR, SHUT_RDWR};
    if (how < 0 || how > 2) return -EINVAL;
    return shutdown(fd, hows[how]) == 0 ? 0 : fail();
}

int ld_net_is_stream_socket(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
    int type = 0;
    socklen_t n = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n) == 0 && type == SOCK_STREAM;
}

static void quiet(int sig) { (void)sig; }

static void install_quiet_sigpipe(void) {
    struct sigaction current;
    if (sigaction(SIGPIPE, NULL, &current) != 0 || current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO)) return;
    struct sigaction sa = {0};
    sa.sa_handler = quiet;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
}

void ld_net_quiet_sigpipe(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_quiet_sigpipe);
}
