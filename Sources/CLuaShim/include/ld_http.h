// dispatch.http (http/http.c): a GET through libcurl, loaded on first use.
#ifndef LD_HTTP_H
#define LD_HTTP_H

#include <stddef.h>

/// The outcome of one GET: the body (malloc'd, NUL-terminated; NULL on failure), the HTTP
/// status, or an error message (malloc'd).
typedef struct {
    char *body;
    size_t length;
    long status;
    char *error;
} ld_http_result;

/// Performs a GET through libcurl (loaded on first use), blocking the calling thread.
ld_http_result ld_http_get(const char *url);
void ld_http_result_free(ld_http_result *r);

#endif
