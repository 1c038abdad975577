/* devboxd-ptyd: the PTY server that runs inside a devbox on 127.0.0.1:13
 * (its netns).  See docs/devboxd.md, "PTY".
 *
 * From outside, the only way into the devbox's network namespace is
 * devboxd's tunnel listener, which requires the PTY tunnel's auth_token on
 * every request before relaying a byte.  Inside, any account can reach
 * 127.0.0.1:13, and a shell there is the devbox user's, who has sudo: so
 * every connection must first send, on a line of its own, the key devboxd
 * made for this boot (--key-fd: read from a pipe devboxd closes; never on
 * the command line or in the environment).  ptyd is not dumpable, so other
 * processes, even of its own uid, cannot read the key from /proc or ptrace
 * it.  What the key does not stop: root inside the devbox (the devbox user
 * becomes root with sudo by design), which can read any process. */
#ifndef DEVBOXD_PTYD_H
#define DEVBOXD_PTYD_H

#include <libwebsockets.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define PTYD_NAME_MAX 256
#define PTYD_DIM_MAX 1000
#define PTYD_BACKLOG (64 * 1024) /* output kept while nobody is attached */
#define PTYD_OUT_HIGH                                                          \
    (1024 * 1024) /* attached: stop reading the pty above this */
#define PTYD_IN_HIGH (1024 * 1024) /* stop reading the WebSocket above this */

struct ptyd_buf {
    char *data;
    size_t len;
    size_t cap;
};

struct ptyd_session {
    char name[PTYD_NAME_MAX + 1];
    int master;
    pid_t pid;
    int cols;
    int rows;
    struct lws *pty_wsi; /* the adopted master fd */
    struct lws *ws;      /* attached client or NULL */
    struct ptyd_buf out; /* terminal output not yet sent */
    struct ptyd_buf in;  /* client bytes not yet written to the terminal */
    time_t detached_at;
    time_t last_rx; /* last client frame (liveness) */
    time_t last_ping;
    int want_ping;
    int close_code; /* 0, 4000 (shell ended) or 4001 (ping timeout) */
    int dead;       /* shell gone: no new attach */
    int pty_flow_off;
    struct ptyd_session *next;
};

struct ptyd_config {
    int idle_ttl;      /* seconds after the last detach */
    int ping_interval; /* seconds */
    int ping_timeout;  /* seconds without a client frame → 4001 */
};

extern struct ptyd_config ptyd_cfg;

/* session.c */
int ptyd_name_valid(const char *name);
/* Parses "1".."1000" strictly; -1 otherwise. */
int ptyd_parse_dim(const char *s);
struct ptyd_session *ptyd_session_find(const char *name);
/* Creates a session running bash -i on a new pty; NULL with err. */
struct ptyd_session *ptyd_session_create(struct lws_vhost *vh, const char *name,
                                         int cols, int rows, char *err,
                                         size_t errlen);
int ptyd_session_resize(struct ptyd_session *s, int cols, int rows);
/* Signal name ("SIGINT") → number, or -1. */
int ptyd_signal_number(const char *name);
/* killpg(tcgetpgrp(master)); -1 with err. */
int ptyd_session_signal(struct ptyd_session *s, int sig, char *err,
                        size_t errlen);
/* SIGHUP, close the client with 4000, drop the session. */
void ptyd_session_close(struct ptyd_session *s);
/* Unlinks and frees (the pty wsi must be gone or going). */
void ptyd_session_free(struct ptyd_session *s);
void ptyd_housekeeping(void);
int ptyd_buf_append(struct ptyd_buf *b, const void *data, size_t len);
void ptyd_buf_consume(struct ptyd_buf *b, size_t n);
void ptyd_buf_keep_tail(struct ptyd_buf *b, size_t max);
void ptyd_session_kick_pty(struct ptyd_session *s);
extern const struct lws_protocols *ptyd_pty_protocol;

#endif
