/*
 * http_check.c - the pure checks of the HTTP transport: Host and Origin
 * rules, Accept and Content-Type, protocol versions, tokens, redaction.
 * No I/O here but the name lookup of http_options_check, so the unit tests
 * cover every branch.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include "config.h"
#include "http.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif

void http_options_from_config(struct http_options *opts,
                              const struct host_config *cfg)
{
    const struct host_http_config *h = &cfg->server.http;

    memset(opts, 0, sizeof(*opts));
    opts->listen = h->listen != NULL ? h->listen : "127.0.0.1:8000";
    opts->allowed_origins = (const char *const *)h->allowed_origins;
    opts->auth_token = h->auth_token;
    opts->allow_query_key = h->allow_query_key;
    opts->max_body_bytes =
        h->max_body_bytes ? h->max_body_bytes : 4u * 1024 * 1024;
    opts->max_sessions = h->max_sessions ? h->max_sessions : 64;
    opts->max_sessions_per_client = h->max_sessions_per_client;
    opts->max_connections = h->max_connections ? h->max_connections : 256;
    opts->session_idle_seconds =
        h->session_idle_seconds ? h->session_idle_seconds : 1800;
    opts->server_name = cfg->server.name ? cfg->server.name : "runloop-mcp";
    opts->server_version = RLMCP_VERSION;
    opts->metrics = (int)h->metrics;
}

int http_limits_check(const struct http_options *o, bool loopback, char *err,
                      size_t errlen)
{
    const char *token = o->auth_token;

    if (token != NULL && token[0] == '\0')
        token = NULL;
    if (!loopback && token == NULL) {
        snprintf(err, errlen,
                 "refusing to listen on %s without an access token: anyone "
                 "who reaches it could run code in your devboxes. Set "
                 "server.http.auth_token (at least 16 characters, e.g. "
                 "${RLMCP_HTTP_TOKEN}) or listen on 127.0.0.1",
                 o->listen);
        return -1;
    }
    if (token != NULL && strlen(token) < 16) {
        snprintf(err, errlen,
                 "server.http.auth_token is shorter than 16 characters; use "
                 "a long random value (e.g. `openssl rand -hex 32`)");
        return -1;
    }
    if (o->max_body_bytes < 1024) {
        snprintf(err, errlen,
                 "server.http.max_body_bytes must be at least 1024");
        return -1;
    }
    if (o->max_sessions == 0 || o->max_connections == 0) {
        snprintf(err, errlen,
                 "server.http.max_sessions and max_connections must be at "
                 "least 1");
        return -1;
    }
    return 0;
}

/*
 * Whether the host of a listen address is loopback, looked up as the
 * server binds it (its first address). A host that does not resolve is
 * refused as such, with the server's own words, before any token rule.
 */
static int listen_is_loopback(const char *host, bool *loopback, char *err,
                              size_t errlen)
{
    struct addrinfo hints = {0};
    struct addrinfo *res = NULL;
    int rc = 0;

    *loopback = false;
    if (http_host_is_loopback(host)) {
        *loopback = true;
        return 0;
    }
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || res == NULL) {
        snprintf(err, errlen,
                 "server.http.listen: cannot resolve '%s' (%s); use an IP "
                 "address such as 127.0.0.1",
                 host, rc != 0 ? gai_strerror(rc) : "no address");
        return -1;
    }
    if (res->ai_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)res->ai_addr;
        *loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (res->ai_family == AF_INET6) {
        const struct sockaddr_in6 *in6 =
            (const struct sockaddr_in6 *)res->ai_addr;
        *loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    freeaddrinfo(res);
    return 0;
}

int http_options_check(const struct http_options *o, char *err, size_t errlen)
{
    char host[256];
    uint16_t port = 0;
    bool loopback = false;

    if (http_parse_listen(o->listen, host, sizeof(host), &port) != 0) {
        snprintf(err, errlen,
                 "server.http.listen '%s' is not HOST:PORT; write e.g. "
                 "127.0.0.1:8000 or [::1]:8000",
                 o->listen != NULL ? o->listen : "");
        return -1;
    }
    if (listen_is_loopback(host, &loopback, err, errlen) != 0)
        return -1;
    return http_limits_check(o, loopback, err, errlen);
}

int http_parse_listen(const char *listen, char *host, size_t hostlen,
                      uint16_t *port)
{
    const char *colon = NULL;
    const char *h = NULL;
    size_t hlen = 0;
    char *end = NULL;
    unsigned long p = 0;

    if (listen == NULL || *listen == '\0')
        return -1;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (close == NULL || close[1] != ':')
            return -1;
        h = listen + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(listen, ':');
        if (colon == NULL)
            return -1;
        h = listen;
        hlen = (size_t)(colon - listen);
        if (memchr(h, ':', hlen) != NULL)
            return -1; /* a bare IPv6 address needs brackets */
    }
    if (hlen == 0 || hlen >= hostlen)
        return -1;
    if (colon[1] == '\0' || !isdigit((unsigned char)colon[1]))
        return -1;
    errno = 0;
    p = strtoul(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || p > 65535)
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)p;
    return 0;
}

bool http_host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (host == NULL)
        return false;
    if (strcasecmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

/*
 * Split "name[:port]" or "[v6][:port]" into name and port text (port_out
 * is "" when absent). Returns false when malformed or too long.
 */
static bool split_hostport(const char *hp, size_t len, char *name,
                           size_t namelen, char *port_out, size_t portlen)
{
    const char *colon = NULL;
    size_t nlen = 0;
    size_t plen = 0;

    if (len == 0)
        return false;
    if (hp[0] == '[') {
        const char *close = memchr(hp, ']', len);
        if (close == NULL)
            return false;
        nlen = (size_t)(close - hp - 1);
        if (nlen == 0 || nlen >= namelen)
            return false;
        memcpy(name, hp + 1, nlen);
        name[nlen] = '\0';
        colon = close + 1;
        if (colon < hp + len && *colon != ':')
            return false;
    } else {
        colon = memchr(hp, ':', len);
        nlen = colon != NULL ? (size_t)(colon - hp) : len;
        if (nlen == 0 || nlen >= namelen)
            return false;
        memcpy(name, hp, nlen);
        name[nlen] = '\0';
    }
    port_out[0] = '\0';
    if (colon != NULL && colon < hp + len) {
        plen = len - (size_t)(colon + 1 - hp);
        if (plen == 0 || plen >= portlen)
            return false;
        memcpy(port_out, colon + 1, plen);
        port_out[plen] = '\0';
        for (size_t i = 0; i < plen; i++) {
            if (!isdigit((unsigned char)port_out[i]))
                return false;
        }
    }
    return true;
}

/*
 * The host name of an origin URL ("https://a.example:8443/x" ->
 * "a.example") into name (namelen bytes). False when it has none, or when
 * bare and something (a path) follows the host part.
 */
static bool origin_name(const char *origin, bool bare, char *name,
                        size_t namelen)
{
    const char *hp = strstr(origin, "://");
    char port[8];
    size_t len = 0;

    if (hp == NULL)
        return false;
    hp += 3;
    len = strcspn(hp, "/?#");
    if (len == 0 || (bare && hp[len] != '\0'))
        return false;
    return split_hostport(hp, len, name, namelen, port, sizeof(port));
}

static bool host_in_origins(const char *name, const char *const *origins)
{
    char oname[256];

    if (origins == NULL)
        return false;
    for (size_t i = 0; origins[i] != NULL; i++) {
        if (origin_name(origins[i], false, oname, sizeof(oname)) &&
            strcasecmp(oname, name) == 0)
            return true;
    }
    return false;
}

bool http_host_header_ok(const char *host_header, uint16_t port,
                         const char *const *allowed_origins)
{
    char name[256];
    char ptxt[8];

    if (host_header == NULL)
        return false;
    if (!split_hostport(host_header, strlen(host_header), name, sizeof(name),
                        ptxt, sizeof(ptxt)))
        return false;
    if (http_host_is_loopback(name)) {
        if (ptxt[0] == '\0')
            return true;
        return strtoul(ptxt, NULL, 10) == port;
    }
    /* A reverse proxy in front: its public name is an allowed origin. */
    return host_in_origins(name, allowed_origins);
}

bool http_origin_ok(const char *origin, const char *const *allowed_origins,
                    bool loopback_bind)
{
    char name[256];

    if (origin == NULL)
        return true;
    if (allowed_origins != NULL) {
        for (size_t i = 0; allowed_origins[i] != NULL; i++) {
            if (strcasecmp(allowed_origins[i], origin) == 0)
                return true;
        }
    }
    if (!loopback_bind)
        return false;
    if (strncasecmp(origin, "http://", 7) != 0 &&
        strncasecmp(origin, "https://", 8) != 0)
        return false;
    /* An Origin has no path. */
    return origin_name(origin, true, name, sizeof(name)) &&
           http_host_is_loopback(name);
}

/* Does the comma-separated media-range list contain type (or a wildcard)? */
static bool accept_has(const char *accept, const char *type)
{
    const char *slash = strchr(type, '/');
    size_t major_len = (size_t)(slash - type);
    const char *p = accept;

    while (*p != '\0') {
        size_t n = 0;
        const char *item = NULL;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        item = p;
        n = strcspn(item, ",;");
        while (n > 0 && (item[n - 1] == ' ' || item[n - 1] == '\t'))
            n--;
        if (n == 3 && strncmp(item, "*/*", 3) == 0)
            return true;
        if (n == strlen(type) && strncasecmp(item, type, n) == 0)
            return true;
        if (n == major_len + 2 && strncasecmp(item, type, major_len + 1) == 0 &&
            item[major_len + 1] == '*')
            return true;
        p = item + strcspn(item, ",");
    }
    return false;
}

bool http_accept_ok(const char *accept, bool need_json, bool need_sse)
{
    if (accept == NULL)
        return false;
    if (need_json && !accept_has(accept, "application/json"))
        return false;
    if (need_sse && !accept_has(accept, "text/event-stream"))
        return false;
    return true;
}

bool http_content_type_json(const char *ctype)
{
    size_t n = 0;

    if (ctype == NULL)
        return false;
    while (*ctype == ' ')
        ctype++;
    n = strcspn(ctype, "; \t");
    return n == strlen("application/json") &&
           strncasecmp(ctype, "application/json", n) == 0;
}

bool http_token_equal(const char *a, const char *b)
{
    size_t la = 0;
    size_t lb = 0;
    unsigned char diff = 0;

    if (a == NULL || b == NULL)
        return false;
    la = strlen(a);
    lb = strlen(b);
    /* Compare over the expected length whatever the input, no early exit. */
    for (size_t i = 0; i < lb; i++) {
        unsigned char ca = i < la ? (unsigned char)a[i] : 0;
        diff |= (unsigned char)(ca ^ (unsigned char)b[i]);
    }
    return diff == 0 && la == lb;
}

const char *http_bearer(const char *authorization)
{
    const char *p = authorization;

    if (p == NULL || strncasecmp(p, "Bearer", 6) != 0)
        return NULL;
    p += 6;
    if (*p != ' ' && *p != '\t')
        return NULL;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0')
        return NULL;
    return p;
}

static bool secret_param(const char *name, size_t len)
{
    static const char *const secret[] = {"api_key", "apikey",       "key",
                                         "token",   "access_token", NULL};

    for (size_t i = 0; secret[i] != NULL; i++) {
        if (strlen(secret[i]) == len && strncasecmp(name, secret[i], len) == 0)
            return true;
    }
    return false;
}

void http_redact_url(const char *url, char *out, size_t outlen)
{
    const char *q = NULL;
    size_t o = 0;
    size_t n = 0;

    if (outlen == 0)
        return;
    out[0] = '\0';
    if (url == NULL)
        return;
    q = strchr(url, '?');
    n = q != NULL ? (size_t)(q - url) : strlen(url);
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, url, n);
    o = n;
    out[o] = '\0';
    if (q == NULL)
        return;
    q++;
    while (*q != '\0' && o + 1 < outlen) {
        size_t plen = strcspn(q, "&");
        size_t nlen = strcspn(q, "=&");
        const char *piece = q;
        char sep = (o == n) ? '?' : '&';
        int w = 0;
        if (secret_param(q, nlen) && nlen < plen)
            w = snprintf(out + o, outlen - o, "%c%.*s=[redacted]", sep,
                         (int)nlen, piece);
        else
            w = snprintf(out + o, outlen - o, "%c%.*s", sep, (int)plen, piece);
        if (w < 0 || (size_t)w >= outlen - o) {
            out[o] = '\0';
            return;
        }
        o += (size_t)w;
        q += plen;
        if (*q == '&')
            q++;
    }
}

bool http_parse_event_id(const char *id, uint64_t *stream, uint64_t *seq)
{
    char *end = NULL;
    unsigned long long s = 0;
    unsigned long long e = 0;

    if (id == NULL || !isdigit((unsigned char)id[0]))
        return false;
    errno = 0;
    s = strtoull(id, &end, 10);
    if (errno != 0 || *end != '-' || !isdigit((unsigned char)end[1]))
        return false;
    e = strtoull(end + 1, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *stream = s;
    *seq = e;
    return true;
}
