/*
 * rlclient_bench - client overhead of rlclient_request against devboxd.
 *
 *   rlclient_bench SOCKET [N]
 *
 * Times N sequential GET /v1/devboxes?limit=1 over the unix socket three
 * ways, interleaved in rounds so machine noise hits all of them alike:
 *   raw-keepalive  hand-written HTTP/1.1 on one persistent connection
 *                  (the floor: what the engine itself costs)
 *   raw-connect    the same, one new connection per request
 *   rlclient       rlclient_request (pooled libcurl handle, retries armed)
 * and prints p50/p90 for each and rlclient's p50 ratio and difference
 * against raw-keepalive. Built and run by tests/bench/rlclient_bench.sh.
 */
#define _GNU_SOURCE /* strcasestr */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rlclient.h"

static const char REQ[] = "GET /v1/devboxes?limit=1 HTTP/1.1\r\n"
                          "Host: localhost\r\n"
                          "Accept: application/json\r\n\r\n";

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int connect_unix(const char *path)
{
    struct sockaddr_un sun;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* One request/response on fd; returns the status or -1. Content-Length
 * bodies only (what devboxd sends for JSON). */
static int raw_get(int fd)
{
    char buf[65536];
    size_t used = 0;
    char *end = NULL;
    char *cl = NULL;
    size_t want = 0;
    int status = -1;

    if (write(fd, REQ, sizeof(REQ) - 1) != (ssize_t)(sizeof(REQ) - 1))
        return -1;
    for (;;) {
        ssize_t n = read(fd, buf + used, sizeof(buf) - 1 - used);

        if (n <= 0)
            return -1;
        used += (size_t)n;
        buf[used] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end != NULL)
            break;
    }
    sscanf(buf, "HTTP/1.1 %d", &status);
    cl = strcasestr(buf, "\r\ncontent-length:");
    if (cl == NULL || cl > end)
        return -1;
    want = (size_t)(end + 4 - buf) + strtoul(cl + 17, NULL, 10);
    while (used < want) {
        ssize_t n =
            read(fd, buf + used,
                 want - used < sizeof(buf) - 1 - used ? want - used
                                                      : sizeof(buf) - 1 - used);

        if (n <= 0)
            return -1;
        used += (size_t)n;
        if (used >= sizeof(buf) - 1)
            return -1;
    }
    return status;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return v[(int)(p * (n - 1))];
}

int main(int argc, char **argv)
{
    const char *sock = argc > 1 ? argv[1] : NULL;
    int n = argc > 2 ? atoi(argv[2]) : 2000;
    struct rlclient_options o = {.unix_socket = sock,
                                 .default_max_retries = -1};
    struct rlclient *c = NULL;
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    double *ka = NULL, *cn = NULL, *rl = NULL;
    double p_ka, p_cn, p_rl;
    int fd = -1;
    int i;

    if (sock == NULL || n < 10) {
        fprintf(stderr, "usage: rlclient_bench SOCKET [N>=10]\n");
        return 2;
    }
    ka = calloc((size_t)n, sizeof(double));
    cn = calloc((size_t)n, sizeof(double));
    rl = calloc((size_t)n, sizeof(double));
    rlclient_global_init();
    c = rlclient_create(&o);
    fd = connect_unix(sock);
    if (c == NULL || fd < 0 || ka == NULL || cn == NULL || rl == NULL) {
        fprintf(stderr, "cannot connect to %s: %s\n", sock, strerror(errno));
        return 1;
    }
    req.method = "GET";
    req.path = "/v1/devboxes?limit=1";
    for (i = -50; i < n; i++) { /* 50 warm-up rounds */
        struct rlmcp_http_resp *r = NULL;
        double t0 = now_us();
        double t1, t2, t3;
        int fd2 = -1;

        if (raw_get(fd) != 200)
            return 1;
        t1 = now_us();
        fd2 = connect_unix(sock);
        if (fd2 < 0 || raw_get(fd2) != 200)
            return 1;
        close(fd2);
        t2 = now_us();
        if (rlclient_request(c, NULL, &req, &r, NULL, NULL) != RLMCP_OK ||
            r->status != 200)
            return 1;
        rlclient_resp_free(r);
        t3 = now_us();
        if (i >= 0) {
            ka[i] = t1 - t0;
            cn[i] = t2 - t1;
            rl[i] = t3 - t2;
        }
    }
    p_ka = pct(ka, n, 0.5);
    p_cn = pct(cn, n, 0.5);
    p_rl = pct(rl, n, 0.5);
    printf(
        "GET /v1/devboxes?limit=1 on devboxd (unix socket), %d requests each\n",
        n);
    printf("%-14s p50 %8.1f us  p90 %8.1f us\n", "raw-keepalive", p_ka,
           pct(ka, n, 0.9));
    printf("%-14s p50 %8.1f us  p90 %8.1f us\n", "raw-connect", p_cn,
           pct(cn, n, 0.9));
    printf("%-14s p50 %8.1f us  p90 %8.1f us\n", "rlclient", p_rl,
           pct(rl, n, 0.9));
    printf("rlclient / raw-keepalive p50 ratio %.2f, added %.1f us\n",
           p_rl / p_ka, p_rl - p_ka);
    printf("rlclient / raw-connect   p50 ratio %.2f\n", p_rl / p_cn);
    close(fd);
    rlclient_destroy(c);
    free(ka);
    free(cn);
    free(rl);
    return 0;
}
