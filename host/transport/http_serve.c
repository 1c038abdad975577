/*
 * http_serve.c - `runloop-mcp --transport http`: the deployment's
 * server.http section to transport options, and the serve loop that runs
 * until SIGINT or SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "backend.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "mcp.h"

/*
 * The key that signs 2026-07-28 requestState (mcp.h): SHA-256 of
 * server.http.state_secret, so replicas sharing it accept each other's
 * states; else random, and a state is good only on this process.
 */
static int state_secret(const struct host_config *cfg)
{
    const char *s = cfg->server.http.state_secret;
    unsigned char md[32];

    if (s == NULL)
        return mcp_set_state_secret(NULL, 0);
    SHA256((const unsigned char *)s, strlen(s), md);
    mcp_set_state_secret(md, sizeof(md));
    explicit_bzero(md, sizeof(md));
    return 0;
}

static int stop_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;

    if (write(stop_pipe[1], &c, 1) < 0) {
        /* nothing to do: a stop is already pending */
    }
    errno = saved;
}

int http_serve(struct mcp_dispatcher *d, const struct host_config *cfg)
{
    struct http_options opts;
    struct http_server *srv = NULL;
    struct sigaction sa;
    struct sigaction old_int;
    struct sigaction old_term;
    struct pollfd pfd;
    char err[512] = "";
    char url[300] = "";
    char c = 0;

    http_options_from_config(&opts, cfg);
    if (state_secret(cfg) != 0)
        return 1;
    if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        log_msg(RLMCP_LOG_ERROR, NULL, "http: pipe: %s", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    srv = http_server_start(d, &opts, err, sizeof(err));
    if (srv == NULL) {
        log_msg(RLMCP_LOG_ERROR, NULL, "http: %s", err);
        goto out;
    }
    http_server_url(srv, url, sizeof(url));
    log_msg(RLMCP_LOG_NOTICE, NULL, "http: listening on %s (port %u)%s", url,
            (unsigned)http_server_port(srv),
            opts.auth_token ? ", bearer token required" : "");
    pfd.fd = stop_pipe[0];
    pfd.events = POLLIN;
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
    if (read(stop_pipe[0], &c, 1) == 1)
        log_msg(RLMCP_LOG_NOTICE, NULL, "http: signal %d, stopping", (int)c);
    http_server_stop(srv);
out:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    close(stop_pipe[0]);
    close(stop_pipe[1]);
    stop_pipe[0] = stop_pipe[1] = -1;
    return srv != NULL ? 0 : 1;
}
