// dispatch.http.get's transfer: libcurl, loaded on first use. Linking Foundation's URLSession
// instead would load Foundation, FoundationNetworking and libcurl at every start of every
// interpreter (tripling start-up time); libcurl alone, and only when a script uses HTTP, costs
// nothing until then. The constants are libcurl's stable ABI values (curl/curl.h).
#define _GNU_SOURCE
#include "ld_http.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CURLOPT_WRITEDATA 10001
#define CURLOPT_URL 10002
#define CURLOPT_WRITEFUNCTION 20011
#define CURLOPT_FOLLOWLOCATION 52
#define CURLOPT_NOSIGNAL 99
#define CURLINFO_RESPONSE_CODE 0x200002
#define CURL_GLOBAL_ALL 3

static struct {
    int ok;
    void *(*easy_init)(void);
    int (*easy_setopt)(void *, int, ...);
    int (*easy_perform)(void *);
    int (*easy_getinfo)(void *, int, ...);
    const char *(*easy_strerror)(int);
    void (*easy_cleanup)(void *);
} curl;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void load_curl(void) {
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) return;
    int (*global_init)(long) = (int (*)(long))dlsym(h, "curl_global_init");
    curl.easy_init = (void *(*)(void))dlsym(h, "curl_easy_init");
    curl.easy_setopt = (int (*)(void *, int, ...))dlsym(h, "curl_easy_setopt");
    curl.easy_perform = (int (*)(void *))dlsym(h, "curl_easy_perform");
    curl.easy_getinfo = (int (*)(void *, int, ...))dlsym(h, "curl_easy_getinfo");
    curl.easy_strerror = (const char *(*)(int))dlsym(h, "curl_easy_strerror");
    curl.easy_cleanup = (void (*)(void *))dlsym(h, "curl_easy_cleanup");
    curl.ok = global_init && curl.easy_init && curl.easy_setopt && curl.easy_perform && curl.easy_getinfo &&
              curl.easy_strerror && curl.easy_cleanup && global_init(CURL_GLOBAL_ALL) == 0;
}

static size_t on_data(char *data, size_t size, size_t n, void *user) {
    ld_http_result *r = user;
    size_t len = size * n;
    char *grown = realloc(r->body, r->length + len + 1);
    if (grown == NULL) return 0;
    memcpy(grown + r->length, data, len);
    r->body = grown;
    r->length += len;
    return len;
}

ld_http_result ld_http_get(const char *url) {
    ld_http_result r = {NULL, 0, 0, NULL};
    pthread_once(&curl_once, load_curl);
    if (!curl.ok) {
        r.error = strdup("HTTP is not available (libcurl.so.4 could not be loaded)");
        return r;
    }
    void *easy = curl.easy_init();
    if (easy == NULL) {
        r.error = strdup("HTTP is not available (curl_easy_init failed)");
        return r;
    }
    curl.easy_setopt(easy, CURLOPT_URL, url);
    curl.easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl.easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_data);
    curl.easy_setopt(easy, CURLOPT_WRITEDATA, &r);
    int code = curl.easy_perform(easy);
    if (code != 0) {
        free(r.body);
        r.body = NULL;
        r.length = 0;
        r.error = strdup(curl.easy_strerror(code));
    } else {
        curl.easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r.status);
        if (r.body == NULL) r.body = calloc(1, 1);
    }
    curl.easy_cleanup(easy);
    return r;
}

void ld_http_result_free(ld_http_result *r) {
    free(r->body);
    free(r->error);
}
