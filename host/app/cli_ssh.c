/*
 * cli_ssh.c - `runloop-mcp ssh DEVBOX [COMMAND...]`: a shell (or a
 * command) in a devbox of the local engine through the OpenSSH client.
 * The engine hands out the devbox's key (create_ssh_key), kept in a 0600
 * file in a private (0700) temporary directory while ssh runs, removed
 * after ssh ends, also when the CLI gets HUP, TERM or QUIT; ssh reaches the devbox through
 * `runloop-mcp ssh --proxy URL`, its ProxyCommand, which asks the engine's
 * tunnel listener for the devbox's SSH route (an HTTP upgrade) and then
 * relays bytes between ssh and an sshd the engine starts inside the devbox
 * for the connection. See docs/cli.md, "ssh".
 */
#define _GNU_SOURCE /* asprintf */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend.h"
#include "log.h"
#include "rlclient.h"

#define SSH_HEAD_MAX 8192
#define SSH_BUF 65536

static void ssh_usage(FILE *out)
{
    fprintf(out,
            "Usage: runloop-mcp ssh [-c FILE] DEVBOX [--] [COMMAND [ARG]...]\n"
            "A shell in a devbox of the local engine (or COMMAND there), as "
            "its user,\n"
            "through the OpenSSH client (ssh). The engine makes the devbox's "
            "key on\n"
            "first use; nothing listens for SSH on the host or in the "
            "devbox.\n"
            "\n"
            "  -c, --config FILE    deployment (default: as for serving)\n"
            "\n"
            "  runloop-mcp ssh --proxy URL   (ssh's ProxyCommand) relays "
            "stdin and\n"
            "                       stdout to the SSH route URL that "
            "create_ssh_key returned\n");
}

/* ------------------------------------------------------------ --proxy */

/* "http://HOST:PORT/PATH" into its parts (host, port and path are
 * malloc'd by sscanf). 0, or -1. */
static int split_url(const char *url, char **host, char **port, char **path)
{
    const char *p = NULL;
    const char *slash = NULL;
    const char *colon = NULL;

    *host = *port = *path = NULL;
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    p = url + 7;
    slash = strchr(p, '/');
    if (slash == NULL)
        return -1;
    colon = memchr(p, ':', (size_t)(slash - p));
    if (colon == NULL || colon == p || colon + 1 == slash)
        return -1;
    *host = strndup(p, (size_t)(colon - p));
    *port = strndup(colon + 1, (size_t)(slash - colon - 1));
    *path = strdup(slash);
    if (*host == NULL || *port == NULL || *path == NULL)
        return -1;
    return 0;
}

static int connect_to(const char *host, const char *port)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    struct addrinfo *ai = NULL;
    int fd = -1;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int write_full(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads the answer head (and whatever came after it) into head; 0 with
 * *head_len and *total, or -1. */
static int read_head(int fd, char *head, size_t max, size_t *head_len,
                     size_t *total)
{
    size_t len = 0;

    while (len < max - 1) {
        ssize_t n = read(fd, head + len, max - 1 - len);
        char *end = NULL;

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        head[len] = '\0';
        end = strstr(head, "\r\n\r\n");
        if (end != NULL) {
            *head_len = (size_t)(end - head) + 4;
            *total = len;
            return 0;
        }
    }
    head[len] = '\0';
    *head_len = *total = len;
    return -1;
}

/* Copies between stdin/stdout and the socket until both directions end. */
static void relay(int sfd, const char *first, size_t first_len)
{
    char *buf = malloc(SSH_BUF);
    struct pollfd pf[2];
    bool in_open = true;
    bool sock_open = true;

    if (buf == NULL)
        return;
    if (first_len > 0 && write_full(1, first, first_len) != 0)
        goto out;
    while (sock_open) {
        int n;

        pf[0].fd = in_open ? 0 : -1;
        pf[0].events = POLLIN;
        pf[1].fd = sfd;
        pf[1].events = POLLIN;
        n = poll(pf, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        if (in_open && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t r = read(0, buf, SSH_BUF);

            if (r > 0) {
                if (write_full(sfd, buf, (size_t)r) != 0)
                    break;
            } else if (r == 0 || errno != EINTR) {
                in_open = false;
                shutdown(sfd, SHUT_WR); /* the devbox still answers */
            }
        }
        if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = read(sfd, buf, SSH_BUF);

            if (r > 0) {
                if (write_full(1, buf, (size_t)r) != 0)
                    break;
            } else if (r == 0 || errno != EINTR) {
                sock_open = false;
            }
        }
    }
out:
    free(buf);
}

static int ssh_proxy(const char *url)
{
    char *host = NULL;
    char *port = NULL;
    char *path = NULL;
    char *req = NULL;
    char *head = NULL;
    size_t head_len = 0;
    size_t total = 0;
    int fd = -1;
    int rc = 1;

    signal(SIGPIPE, SIG_IGN);
    if (split_url(url, &host, &port, &path) != 0) {
        fprintf(
            stderr,
            "runloop-mcp: ssh --proxy: '%s' is not an SSH route URL "
            "(http://HOST:PORT/tunnel/22-KEY/, the url of create_ssh_key)\n",
            url);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    fd = connect_to(host, port);
    if (fd < 0) {
        fprintf(stderr,
                "runloop-mcp: ssh --proxy: cannot connect to %s:%s (is the "
                "engine running? runloop-mcp engine status)\n",
                host, port);
        goto out;
    }
    head = malloc(SSH_HEAD_MAX);
    if (head == NULL ||
        asprintf(&req,
                 "GET %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: Upgrade\r\n"
                 "Upgrade: ssh\r\n\r\n",
                 path, host, port) < 0) {
        req = NULL;
        goto out;
    }
    if (write_full(fd, req, strlen(req)) != 0 ||
        read_head(fd, head, SSH_HEAD_MAX, &head_len, &total) != 0 ||
        strncmp(head, "HTTP/1.1 101 ", 13) != 0) {
        const char *body = NULL;
        ssize_t r = 0;

        /* The engine's JSON error says why (no such route, devbox ended);
         * it may come after the head, then the engine closes. */
        while (total < SSH_HEAD_MAX - 1 &&
               (r = read(fd, head + total, SSH_HEAD_MAX - 1 - total)) > 0)
            total += (size_t)r;
        head[total] = '\0';
        body = strstr(head, "\r\n\r\n");

        fprintf(
            stderr,
            "runloop-mcp: ssh --proxy: the engine refused the SSH route: %s\n",
            body != NULL && body[4] != '\0'
                ? body + 4
                : (head && head[0] ? head : "no answer"));
        goto out;
    }
    relay(fd, head + head_len, total - head_len);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(req);
    free(head);
    free(host);
    free(port);
    free(path);
    return rc;
}

/* ---------------------------------------------------------------- ssh */

/* POST create_ssh_key: 0 with the response document, or -1 after saying
 * why. */
static int ask_key(struct backend *b, const char *devbox, cJSON **doc)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    char *path = NULL;
    const char *msg = NULL;
    cJSON *err_doc = NULL;
    int rc = -1;

    *doc = NULL;
    if (asprintf(&path, "/v1/devboxes/%s/create_ssh_key", devbox) < 0)
        return -1;
    req.method = "POST";
    req.path = path;
    req.timeout_ms = 60000;
    if (rlclient_request(backend_client(b), backend_api_key(b), &req, &r, NULL,
                         NULL) != RLMCP_OK) {
        fprintf(stderr, "runloop-mcp: ssh: the engine did not answer: %s\n",
                rlclient_last_error());
        goto out;
    }
    if (r->status != 200) {
        err_doc = cJSON_Parse(r->body);
        msg = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(err_doc, "message"));
        fprintf(
            stderr,
            "runloop-mcp: ssh: create_ssh_key for %s failed (HTTP %ld): %s\n",
            devbox, r->status, msg != NULL ? msg : r->body);
        goto out;
    }
    *doc = cJSON_Parse(r->body);
    rc = *doc != NULL ? 0 : -1;
out:
    cJSON_Delete(err_doc);
    rlclient_resp_free(r);
    free(path);
    return rc;
}

/* The ssh child while it runs, and the first stop signal the CLI caught:
 * HUP, TERM and QUIT are passed on to ssh so that the CLI outlives it
 * and removes the key (a default action would leave the key behind). */
static volatile sig_atomic_t ssh_child;
static volatile sig_atomic_t ssh_caught;

static const int stop_signals[] = {SIGHUP, SIGTERM, SIGQUIT};

static void on_stop_signal(int sig)
{
    pid_t pid = (pid_t)ssh_child;

    if (ssh_caught == 0)
        ssh_caught = sig;
    if (pid > 0)
        kill(pid, sig);
}

/* Blocks the stop signals (old mask into *old) and installs the handler
 * that forwards them; unblocked once the key's cleanup is guaranteed. */
static void guard_stop_signals(sigset_t *old)
{
    struct sigaction sa;
    sigset_t set;
    size_t i;

    sigemptyset(&set);
    for (i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
        sigaddset(&set, stop_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
        sigaction(stop_signals[i], &sa, NULL);
}

/* The private key into a new 0600 file in a new 0700 directory (no other
 * user can list or swap it); the file's path (malloc'd) or NULL. The
 * directory is the path's dirname: remove_key removes both. */
static char *key_file(const char *pem)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = NULL;
    char *path = NULL;
    int fd = -1;

    if (asprintf(&dir, "%s/runloop-mcp-ssh-XXXXXX",
                 tmp != NULL && *tmp ? tmp : "/tmp") < 0)
        return NULL;
    if (mkdtemp(dir) == NULL) { /* 0700 */
        fprintf(stderr,
                "runloop-mcp: ssh: cannot make a directory for the key in "
                "%s: %s (set TMPDIR to a writable directory)\n",
                tmp != NULL && *tmp ? tmp : "/tmp", strerror(errno));
        goto out;
    }
    if (asprintf(&path, "%s/id_ed25519", dir) < 0) {
        path = NULL;
        rmdir(dir);
        goto out;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write_full(fd, pem, strlen(pem)) != 0) {
        fprintf(stderr, "runloop-mcp: ssh: cannot write the key to %s: %s\n",
                path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        rmdir(dir);
        free(path);
        path = NULL;
        goto out;
    }
    close(fd);
out:
    free(dir);
    return path;
}

/* Removes the key file and its directory (from key_file). */
static void remove_key(char *path)
{
    char *slash = strrchr(path, '/');

    unlink(path);
    if (slash != NULL) {
        *slash = '\0';
        rmdir(path);
    }
}

/* Runs ssh (argv from the key, route and command), waits; its exit status. */
static int run_ssh(const char *keypath, const char *user, const char *url,
                   const char *devbox, int cargc, char **cargv,
                   const sigset_t *oldmask)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *idopt = NULL;
    char *proxy = NULL;
    char *dest = NULL;
    char *alias = NULL;
    char **argv = NULL;
    int argc = 0;
    int i;
    int status = 0;
    pid_t pid;
    int rc = 1;

    if (n <= 0)
        return 1;
    self[n] = '\0';
    if (strchr(self, '\'') != NULL || strchr(url, '\'') != NULL) {
        fprintf(
            stderr,
            "runloop-mcp: ssh: a quote in %s or %s: cannot hand it to ssh\n",
            self, url);
        return 1;
    }
    /* ssh runs ProxyCommand with sh -c: the path and URL go quoted (the
     * URL is the engine's, [A-Za-z0-9:/.-]; the path is ours). */
    if (asprintf(&proxy, "ProxyCommand='%s' ssh --proxy '%s'", self, url) < 0 ||
        asprintf(&dest, "%s@%s", user, devbox) < 0 ||
        asprintf(&alias, "HostKeyAlias=devbox-%s", devbox) < 0 ||
        asprintf(&idopt, "%s", keypath) < 0)
        goto out;
    argv = calloc((size_t)cargc + 32, sizeof(*argv));
    if (argv == NULL)
        goto out;
    argv[argc++] = "ssh";
    argv[argc++] = "-i";
    argv[argc++] = idopt;
    argv[argc++] = "-o";
    argv[argc++] = proxy;
    argv[argc++] = "-o";
    argv[argc++] = "IdentitiesOnly=yes";
    argv[argc++] = "-o";
    argv[argc++] = "IdentityAgent=none";
    argv[argc++] = "-o";
    argv[argc++] = "PasswordAuthentication=no";
    /* Each devbox boot makes a new host key; the route itself is the
     * engine's (the key in its URL is the secret), so no known_hosts. */
    argv[argc++] = "-o";
    argv[argc++] = "StrictHostKeyChecking=no";
    argv[argc++] = "-o";
    argv[argc++] = "UserKnownHostsFile=/dev/null";
    argv[argc++] = "-o";
    argv[argc++] = alias;
    argv[argc++] = "-o";
    argv[argc++] = "LogLevel=ERROR";
    argv[argc++] = "--";
    argv[argc++] = dest;
    for (i = 0; i < cargc; i++)
        argv[argc++] = cargv[i];
    argv[argc] = NULL;
    pid = fork();
    if (pid < 0)
        goto out;
    if (pid == 0) {
        for (i = 0; i < (int)(sizeof(stop_signals) / sizeof(stop_signals[0]));
             i++)
            signal(stop_signals[i], SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        execvp("ssh", argv);
        fprintf(stderr,
                "runloop-mcp: ssh: cannot run ssh (%s): install the OpenSSH "
                "client (Debian: openssh-client)\n",
                strerror(errno));
        _exit(127);
    }
    /* ssh owns the terminal; ^C is its to pass on. A stop signal caught
     * while blocked reaches ssh once unblocked here. */
    signal(SIGINT, SIG_IGN);
    ssh_child = pid;
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    ssh_child = 0;
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
    free(argv);
    free(idopt);
    free(proxy);
    free(dest);
    free(alias);
    return rc;
}

int cli_ssh_main(int argc, char **argv, cli_load_fn load)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"proxy", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct host_config cfg;
    struct backend *b = NULL;
    const char *config = NULL;
    const char *proxy = NULL;
    const char *devbox = NULL;
    const char *pem = NULL;
    const char *user = NULL;
    const char *url = NULL;
    char *keypath = NULL;
    char *err = NULL;
    cJSON *doc = NULL;
    sigset_t oldmask;
    bool guarded = false;
    int rc = CLI_EXIT_USAGE;
    int ch;

    memset(&cfg, 0, sizeof(cfg));
    optind = 1;
    /* "+": options end at DEVBOX; what follows is the command's. */
    while ((ch = getopt_long(argc, argv, "+:c:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            config = optarg;
            break;
        case 'p':
            proxy = optarg;
            break;
        case 'h':
            ssh_usage(stdout);
            return 0;
        default:
            return cli_option_error("ssh", ch, argv) != 0 ? CLI_EXIT_USAGE : 0;
        }
    }
    if (proxy != NULL) {
        if (cli_no_more_args("ssh --proxy", argc, argv) != 0)
            return CLI_EXIT_USAGE;
        return ssh_proxy(proxy);
    }
    if (optind >= argc) {
        fprintf(stderr, "runloop-mcp: ssh: which devbox? give its id "
                        "(runloop-mcp ssh DEVBOX [COMMAND...])\n");
        ssh_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    devbox = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (load(config, &cfg) != 0)
        return CLI_EXIT_USAGE;
    log_set_level(RLMCP_LOG_WARNING);
    if (backend_resolve(&cfg, &b, &err) != 0) {
        fprintf(stderr, "runloop-mcp: ssh: %s\n", err ? err : "no backend");
        goto out;
    }
    rc = 1;
    if (!backend_is_local(b)) {
        fprintf(stderr,
                "runloop-mcp: ssh: %s uses the Runloop API at %s; this "
                "command serves the local engine (for the cloud, use rli "
                "devbox ssh)\n",
                cfg.path ? cfg.path : "the deployment", backend_base_url(b));
        goto out;
    }
    if (backend_attach(b, &err) != 0) {
        fprintf(stderr, "runloop-mcp: ssh: %s\n", err ? err : "no engine");
        goto out;
    }
    if (ask_key(b, devbox, &doc) != 0)
        goto out;
    pem = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(doc, "ssh_private_key"));
    user =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "ssh_user"));
    url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "url"));
    if (pem == NULL || user == NULL || url == NULL ||
        strncmp(url, "http://", 7) != 0) {
        fprintf(stderr,
                "runloop-mcp: ssh: the engine's create_ssh_key answer has no "
                "usable key, user or url (an older engine? restart it: "
                "runloop-mcp engine stop)\n");
        goto out;
    }
    /* From before the key exists until it is gone, a stop signal does not
     * end the CLI: it goes to ssh, and the key is removed below. */
    guard_stop_signals(&oldmask);
    guarded = true;
    keypath = key_file(pem);
    if (keypath == NULL)
        goto out;
    rc = run_ssh(keypath, user, url, devbox, argc - optind, argv + optind,
                 &oldmask);
out:
    if (keypath != NULL) {
        remove_key(keypath);
        free(keypath);
    }
    if (guarded) {
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        if (ssh_caught != 0 && rc == 0)
            rc = 128 + ssh_caught;
    }
    cJSON_Delete(doc);
    free(err);
    backend_free(b);
    config_free(&cfg);
    return rc;
}
