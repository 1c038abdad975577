/*
 * http.c - Streamable HTTP transport on libmicrohttpd.
 *
 * Threads: MHD runs a small pool of epoll threads. A POSTed request goes to
 * the dispatcher with a sink (struct http_stream); the sink collects what
 * the dispatcher sends, from any worker thread. JSON replies suspend the
 * connection until the final message arrives; SSE replies stream through a
 * content reader that suspends itself when it has nothing to write and is
 * resumed by the sink. Every stream keeps its events until they reached a
 * client completely, so a client that drops off can resume with GET and
 * Last-Event-ID (bounded per session; see docs/http.md).
 *
 * Locks: srv->lock (session table) or srv->reqs_lock (live requests)
 * before sess->lock; sess->lock guards the session's fields and all of its
 * streams and readers. Nothing calls into the dispatcher while holding a
 * lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <uthash.h>

#include "config.h" /* enum host_metrics */
#include "deadline.h"
#include "dlist.h"
#include "digest.h"
#include "http.h"
#include "log.h"
#include "intake.h"
#include "mcp.h"
#include "metrics.h"
#include "random.h"
#include "secret.h"
#include "strbuf.h"

#define SESSION_ID_BYTES 16
#define CRED_BYTES DIGEST_BYTES
/* "1.2.3.4" or the /64 prefix of an IPv6 address, "2001:db8:0:1::/64". */
#define PEER_LEN 64
#define SSE_RETRY_MS 1000
/* Seconds between keep-alive comments on listen streams. */
#define LISTEN_KEEPALIVE_S 10u
/* How long shutdown waits for listen streams to write their result. */
#define LISTEN_FLUSH_MS 2000u
/* Replies written in full that a session keeps for a resume. */
#define RESUME_WRITTEN_KEEP 64

struct http_server;
struct http_session;
struct http_req;

struct http_ev {
    uint64_t seq;
    char *text; /* the whole SSE event, ready to write */
    size_t len;
    bool final;
};

/* One reply: the sink the dispatcher writes to, and its stored events. */
struct http_stream {
    struct mcp_sink sink; /* first: the dispatcher's handle */
    atomic_int refs;
    struct http_session *sess; /* counted reference */
    uint64_t no;               /* per session; event ids are "<no>-<seq>" */
    bool sse;
    bool stateless;            /* its session is one stateless request's */
    struct intake_reply reply; /* how its final answer goes out */
    char *req_id;              /* the JSON-RPC id as text, for log lines */
    /* Everything below is guarded by sess->lock. */
    bool done;        /* the final send happened */
    bool listed;      /* on sess->streams (holds a reference) */
    bool written;     /* every event went to a socket; kept for a resume */
    char *json_reply; /* JSON mode: the response */
    size_t json_len;
    struct http_ev *evs; /* SSE mode: stored events, oldest first */
    size_t n_evs;
    size_t cap_evs;
    size_t bytes;
    uint64_t next_seq;
    struct http_req *tap; /* the request currently reading it, or NULL */
    struct http_stream *prev;
    struct http_stream *next;
};

struct http_session {
    char id[SESSION_ID_BYTES * 2 + 1];
    atomic_int refs;
    pthread_mutex_t lock;
    struct http_server *srv;
    struct mcp_session *ms;
    bool stateless;      /* one 2026-07-28 request's; never in the table */
    char peer[PEER_LEN]; /* the opening client's address; immutable */
    /* The credentials that opened it: HMAC of the caller's Runloop key
     * under a per-process salt (the key itself is not kept). Immutable. */
    bool has_cred;
    unsigned char cred[CRED_BYTES];
    /* Guarded by lock. */
    unsigned reqs;     /* HTTP requests attached to it right now */
    bool used;         /* a request after initialize came in */
    unsigned handling; /* access handlers inside mcp_handle() */
    unsigned busy;     /* streams whose final message is still due */
    bool terminated;
    bool ms_freed;
    double last_used;
    uint64_t next_stream;
    struct http_stream *streams; /* oldest first */
    struct http_stream *streams_tail;
    /* The standalone GET stream (counted), where messages that belong to
     * no request go (notify_sink); NULL when no client holds one open. */
    struct http_stream *get_stream;
    struct mcp_sink notify_sink; /* the mcp_session's; refs the session */
    unsigned n_written;          /* listed streams with written set */
    size_t store_events;
    size_t store_bytes;
    UT_hash_handle hh; /* guarded by srv->lock */
};

enum req_phase {
    PHASE_NEW = 0,
    PHASE_HEADERS, /* a request without a body: answered on the next call */
    PHASE_BODY,    /* reading a POST body */
    PHASE_WAITING, /* suspended until the JSON reply arrives */
    PHASE_FIRST,   /* stateless: suspended until the first message */
    PHASE_DONE     /* a response is queued */
};

/* Per HTTP request: MHD's con_cls. Also the reader of an SSE reply. */
struct http_req {
    struct http_server *srv;
    struct MHD_Connection *conn;
    enum req_phase phase;
    double t0;
    struct strbuf body; /* the request's body */
    bool too_big;
    unsigned status; /* for the access log */
    char method[8];
    char url[64];
    struct http_session *sess;  /* counted reference, may be NULL */
    bool attached;              /* counted in sess->reqs */
    struct http_stream *stream; /* counted reference, may be NULL */
    /* SSE reading state, guarded by sess->lock. */
    bool suspended;
    bool primed;
    uint64_t cursor; /* next seq to write */
    size_t woff;     /* bytes of that event already written */
    /* A subscriptions/listen stream's reader, of client peer (reqs_lock). */
    bool listening;
    char peer[PEER_LEN];
    struct http_req *prev; /* srv->reqs, for waking everything at stop */
    struct http_req *next;
};

struct http_server {
    struct MHD_Daemon *mhd;
    struct mcp_dispatcher *d;
    struct http_options opts;
    char **origins; /* owned copy of opts.allowed_origins */
    char *auth_token;
    char *listen;
    char *name;
    char *version;
    char host[256];
    uint16_t port;
    bool loopback;
    atomic_bool stopping;
    atomic_int connections;
    pthread_mutex_t lock;       /* the session table */
    pthread_mutex_t reqs_lock;  /* before any sess->lock */
    struct http_req *reqs;      /* every request MHD has not completed */
    pthread_cond_t listen_gone; /* a listening request completed */
    struct http_session *sessions;
    unsigned n_sessions;
    struct digest_key cred_key; /* random per process */
    pthread_t reaper;
    bool reaper_started;
    pthread_cond_t reaper_cond;
    bool reaper_stop;
    /* Sessions ended and connections closed, ever: the reaper trims after
     * them. */
    atomic_uint released;
};

static double now_s(void)
{
    return (double)deadline_now_ns() / 1e9;
}

/* ------------------------------------------------------------------------ */
/* Responses                                                                */
/* ------------------------------------------------------------------------ */

static void add_common_headers(struct http_server *srv,
                               struct MHD_Connection *conn,
                               struct MHD_Response *resp)
{
    const char *origin =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");

    /* Only reached for allowed origins: the check runs before. */
    if (origin != NULL) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                "Mcp-Session-Id");
        MHD_add_response_header(resp, "Vary", "Origin");
    }
    (void)srv;
}

static enum MHD_Result queue_buffer(struct http_req *req, unsigned status,
                                    const char *ctype, char *body, size_t len,
                                    bool take, const char *session_id)
{
    struct MHD_Response *resp = NULL;
    enum MHD_Result ret = MHD_NO;

    resp = MHD_create_response_from_buffer(
        len, body, take ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
    if (resp == NULL) {
        if (take)
            free(body);
        return MHD_NO;
    }
    if (ctype != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (session_id != NULL)
        MHD_add_response_header(resp, "Mcp-Session-Id", session_id);
    add_common_headers(req->srv, req->conn, resp);
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE ||
        status == MHD_HTTP_TOO_MANY_REQUESTS)
        MHD_add_response_header(resp, "Retry-After", "5");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"runloop-mcp\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                "GET, POST, DELETE");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    ret = MHD_queue_response(req->conn, status, resp);
    MHD_destroy_response(resp);
    req->phase = PHASE_DONE;
    req->status = status;
    return ret;
}

/*
 * A JSON-RPC error body with id null: what every transport-level refusal
 * carries, so MCP clients show the message to the user.
 */
static enum MHD_Result reply_error(struct http_req *req, unsigned status,
                                   enum intake_refusal why, const char *fmt,
                                   ...) RLMCP_PRINTF(4, 5);

/* A refusal before the dispatcher (id null); the protocol words it as a
 * JSON-RPC error (intake_refusal). */
static enum MHD_Result reply_error(struct http_req *req, unsigned status,
                                   enum intake_refusal why, const char *fmt,
                                   ...)
{
    char msg[512];
    char *text = NULL;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_msg(RLMCP_LOG_DEBUG, NULL, "http: %u: %s", status, msg);
    text = intake_refusal(why, NULL, msg);
    if (text == NULL)
        return queue_buffer(req, status, NULL, "", 0, false, NULL);
    return queue_buffer(req, status, "application/json", text, strlen(text),
                        true, NULL);
}

/* ------------------------------------------------------------------------ */
/* Sessions                                                                 */
/* ------------------------------------------------------------------------ */

static void stream_unref(struct http_stream *st);
static void notify_send(struct mcp_sink *sink, const char *json, size_t len,
                        bool final);
static void notify_retain(struct mcp_sink *sink);
static void notify_release(struct mcp_sink *sink);
static void get_stream_end(struct http_session *s);

static void session_ref(struct http_session *s)
{
    atomic_fetch_add(&s->refs, 1);
}

static void session_unref(struct http_session *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Caller holds s->lock. Unlinks st; the caller drops the list's ref. */
static void session_unlist(struct http_session *s, struct http_stream *st)
{
    if (!st->listed)
        return;
    if (st->prev != NULL)
        st->prev->next = st->next;
    else
        s->streams = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    else
        s->streams_tail = st->prev;
    st->prev = NULL;
    st->next = NULL;
    st->listed = false;
    if (st->written)
        s->n_written--;
    s->store_events -= st->n_evs;
    s->store_bytes -= st->bytes;
}

static void stream_free_events(struct http_stream *st)
{
    for (size_t i = 0; i < st->n_evs; i++)
        free(st->evs[i].text);
    free(st->evs);
    st->evs = NULL;
    st->n_evs = 0;
    st->cap_evs = 0;
    st->bytes = 0;
}

/* Caller holds s->lock: does a stored final reply still wait for a client? */
static bool stream_undelivered(const struct http_stream *st)
{
    return st->sse && !st->written && st->n_evs > 0 &&
           st->evs[st->n_evs - 1].final;
}

/* Caller holds srv->lock. Take s out of the table; true if it was in it. */
static bool session_unhash(struct http_server *srv, struct http_session *s)
{
    struct http_session *found = NULL;

    if (s->terminated)
        return false;
    HASH_FIND_STR(srv->sessions, s->id, found);
    if (found != s)
        return false;
    HASH_DEL(srv->sessions, s);
    srv->n_sessions--;
    return true;
}

/*
 * End a session already out of the table (in_table: it was, and the
 * table's reference is ours to drop). Its calls are cancelled once no
 * access handler is inside mcp_handle() with it.
 */
static void session_end(struct http_session *s, const char *why, bool in_table)
{
    struct http_stream *drop = NULL;
    bool free_ms = false;

    pthread_mutex_lock(&s->lock);
    s->terminated = true;
    get_stream_end(s);
    for (struct http_stream *st = s->streams; st != NULL;) {
        struct http_stream *next = st->next;
        /* Unread replies go; the rest leave with their requests. */
        if (st->sse && st->tap == NULL) {
            if (stream_undelivered(st))
                log_msg(RLMCP_LOG_WARNING, NULL,
                        "http: session %.8s… ended (%s) before the reply to "
                        "request %s reached the client; the reply is dropped",
                        s->id, why, st->req_id ? st->req_id : "?");
            session_unlist(s, st);
            st->next = drop; /* reuse the link for the drop list */
            drop = st;
        }
        st = next;
    }
    if (s->handling == 0 && !s->ms_freed) {
        s->ms_freed = true;
        free_ms = true;
    }
    pthread_mutex_unlock(&s->lock);

    while (drop != NULL) {
        struct http_stream *next = drop->next;
        drop->next = NULL;
        stream_unref(drop);
        drop = next;
    }
    if (free_ms && s->ms != NULL)
        mcp_session_free(s->ms);
    /* A stateless request's private session counts too: a keep-alive
     * client of those never closes a connection nor leaves the table. */
    if (in_table || s->stateless)
        atomic_fetch_add(&s->srv->released, 1);
    if (in_table) {
        log_msg(RLMCP_LOG_INFO, NULL, "http: session %.8s… ended (%s)", s->id,
                why);
        session_unref(s); /* the table's reference */
    }
}

/* End a session (DELETE, idle expiry, failed initialize, shutdown). */
static void session_terminate(struct http_server *srv, struct http_session *s,
                              const char *why)
{
    bool in_table = false;

    pthread_mutex_lock(&srv->lock);
    in_table = session_unhash(srv, s);
    pthread_mutex_unlock(&srv->lock);
    session_end(s, why, in_table);
}

/*
 * Who a connection is, for the per-client limit: the IPv4 address, or the
 * /64 prefix of an IPv6 one (one host usually owns a whole /64).
 */
static void peer_of(struct MHD_Connection *conn, char *out, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
    char buf[INET6_ADDRSTRLEN];

    snprintf(out, len, "?");
    if (sa == NULL)
        return;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf)) != NULL)
            snprintf(out, len, "%s", buf);
    } else if (sa->sa_family == AF_INET6) {
        struct in6_addr a = ((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&a)) {
            if (inet_ntop(AF_INET, &a.s6_addr[12], buf, sizeof(buf)) != NULL)
                snprintf(out, len, "%s", buf);
            return;
        }
        memset(&a.s6_addr[8], 0, 8);
        if (inet_ntop(AF_INET6, &a, buf, sizeof(buf)) != NULL)
            snprintf(out, len, "%s/64", buf);
    }
}

/* The session binding of a caller key (NULL: none). */
static bool cred_of(struct http_server *srv, const char *key,
                    unsigned char out[CRED_BYTES])
{
    memset(out, 0, CRED_BYTES);
    if (key == NULL)
        return false;
    if (digest_hmac(&srv->cred_key, key, strlen(key), out) != 0)
        memset(out, 0xff, CRED_BYTES); /* matches nothing HMAC makes */
    return true;
}

/* Does the caller bring the credentials that opened s? Constant time. */
static bool session_cred_ok(struct http_server *srv,
                            const struct http_session *s, const char *key)
{
    unsigned char c[CRED_BYTES];
    bool has = cred_of(srv, key, c);
    bool same = CRYPTO_memcmp(c, s->cred, CRED_BYTES) == 0;

    explicit_bzero(c, sizeof(c));
    return has == s->has_cred && same;
}

/* A session the table may drop: no request, no call, no handler on it. */
struct reclaim_pick {
    struct http_session *s;
    int rank;
    double last_used;
};

/* Never authenticated before authenticated, unused before used. */
static int session_rank(const struct http_session *s)
{
    return (s->has_cred ? 2 : 0) + (s->used ? 1 : 0);
}

static void pick_better(struct reclaim_pick *p, struct http_session *s,
                        int rank, double last_used)
{
    if (p->s == NULL || rank < p->rank ||
        (rank == p->rank && last_used < p->last_used)) {
        p->s = s;
        p->rank = rank;
        p->last_used = last_used;
    }
}

/*
 * Caller holds srv->lock. Make room in the table for one more session of
 * peer by taking out the idle session that goes first (session_rank, then
 * least recently used): the peer's own when it is at its limit, else any
 * when the table is full. Returns 0 (*victim: the session taken out, for
 * the caller to end, or NULL), -1 when every session is in use, -3 when
 * every one of peer's is.
 */
static int table_make_room(struct http_server *srv, const char *peer,
                           struct http_session **victim)
{
    struct http_session *s = NULL;
    struct http_session *tmp = NULL;
    struct reclaim_pick any = {0};
    struct reclaim_pick mine = {0};
    unsigned n_peer = 0;
    bool full = srv->n_sessions >= srv->opts.max_sessions;

    *victim = NULL;
    HASH_ITER(hh, srv->sessions, s, tmp)
    {
        bool same = strcmp(s->peer, peer) == 0;
        bool idle = false;
        int rank = 0;
        double last = 0;

        if (same)
            n_peer++;
        pthread_mutex_lock(&s->lock);
        idle = s->reqs == 0 && s->busy == 0 && s->handling == 0;
        rank = session_rank(s);
        last = s->last_used;
        pthread_mutex_unlock(&s->lock);
        if (!idle)
            continue;
        if (same)
            pick_better(&mine, s, rank, last);
        pick_better(&any, s, rank, last);
    }
    if (n_peer >= srv->opts.max_sessions_per_client) {
        if (mine.s == NULL)
            return -3;
        *victim = mine.s;
    } else if (full) {
        if (any.s == NULL)
            return -1;
        *victim = any.s;
    }
    if (*victim != NULL)
        session_unhash(srv, *victim);
    return 0;
}

static void session_free_new(struct http_session *s)
{
    mcp_session_free(s->ms);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/*
 * A new session for req's client, bound to key (NULL: none). Returns a
 * counted reference attached to req, or NULL: *why -1 the table is full of
 * sessions in use, -3 so are the client's own, -2 no memory.
 */
static struct http_session *session_create(struct http_req *req,
                                           const char *key, int *why)
{
    struct http_server *srv = req->srv;
    unsigned char raw[SESSION_ID_BYTES];
    struct http_session *s = NULL;
    struct http_session *victim = NULL;
    int r = 0;

    *why = -2;
    if (random_fill(raw, sizeof(raw)) != 0)
        return NULL;
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    digest_hex(raw, sizeof(raw), s->id);
    atomic_init(&s->refs, 2); /* the table's and the caller's */
    pthread_mutex_init(&s->lock, NULL);
    s->srv = srv;
    s->last_used = now_s();
    s->reqs = 1;
    peer_of(req->conn, s->peer, sizeof(s->peer));
    s->has_cred = cred_of(srv, key, s->cred);
    s->ms = mcp_session_new(srv->d);
    if (s->ms == NULL) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    {
        char label[9]; /* as the access log shows it: 8 digits */

        snprintf(label, sizeof(label), "%.8s", s->id);
        mcp_session_set_label(s->ms, label);
    }
    pthread_mutex_lock(&srv->lock);
    r = table_make_room(srv, s->peer, &victim);
    if (r == 0) {
        HASH_ADD_STR(srv->sessions, id, s);
        srv->n_sessions++;
    }
    pthread_mutex_unlock(&srv->lock);
    if (victim != NULL)
        session_end(victim, "idle, reclaimed for a new session", true);
    if (r != 0) {
        session_free_new(s);
        *why = r;
        return NULL;
    }
    s->notify_sink.send = notify_send;
    s->notify_sink.retain = notify_retain;
    s->notify_sink.release = notify_release;
    mcp_session_set_notify(s->ms, &s->notify_sink);
    *why = 0;
    req->attached = true;
    log_msg(RLMCP_LOG_INFO, NULL, "http: session %.8s… started", s->id);
    return s;
}

/*
 * The session of one stateless request: not in the table, no id, gone with
 * its request (which holds the only reference).
 */
static struct http_session *session_create_private(struct http_server *srv)
{
    struct http_session *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    snprintf(s->id, sizeof(s->id), "-");
    atomic_init(&s->refs, 1);
    pthread_mutex_init(&s->lock, NULL);
    s->srv = srv;
    s->stateless = true;
    s->last_used = now_s();
    s->ms = mcp_session_new(srv->d);
    if (s->ms == NULL) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    return s;
}

/*
 * req no longer uses its session (its answer is queued, or it ended): the
 * session may be reclaimed when idle, and its LRU clock restarts.
 */
static void req_detach(struct http_req *req)
{
    struct http_session *s = req->sess;

    if (!req->attached)
        return;
    req->attached = false;
    pthread_mutex_lock(&s->lock);
    s->reqs--;
    s->last_used = now_s();
    pthread_mutex_unlock(&s->lock);
}

/* The session named id, attached to req (a counted reference), or NULL. */
static struct http_session *session_lookup(struct http_req *req, const char *id)
{
    struct http_server *srv = req->srv;
    struct http_session *s = NULL;

    /* Attached under srv->lock: table_make_room never picks it after. */
    pthread_mutex_lock(&srv->lock);
    HASH_FIND_STR(srv->sessions, id, s);
    if (s != NULL) {
        session_ref(s);
        pthread_mutex_lock(&s->lock);
        s->reqs++;
        s->last_used = now_s();
        pthread_mutex_unlock(&s->lock);
        req->attached = true;
    }
    pthread_mutex_unlock(&srv->lock);
    return s;
}

/* Expire idle sessions: clients rarely send DELETE. */
static void sessions_expire(struct http_server *srv)
{
    struct http_session *s = NULL;
    struct http_session *tmp = NULL;
    struct http_session **victims = NULL;
    size_t n = 0;
    double now = now_s();
    double idle = (double)srv->opts.session_idle_seconds;

    pthread_mutex_lock(&srv->lock);
    victims = calloc(srv->n_sessions + 1, sizeof(*victims));
    HASH_ITER(hh, srv->sessions, s, tmp)
    {
        bool old = false;
        if (victims == NULL)
            break;
        pthread_mutex_lock(&s->lock);
        old = s->reqs == 0 && s->busy == 0 && s->handling == 0 &&
              now - s->last_used >= idle;
        pthread_mutex_unlock(&s->lock);
        if (old) {
            session_ref(s);
            victims[n++] = s;
        }
    }
    pthread_mutex_unlock(&srv->lock);
    for (size_t i = 0; i < n; i++) {
        session_terminate(srv, victims[i], "idle timeout");
        session_unref(victims[i]);
    }
    free(victims);
}

static void stream_append(struct http_stream *st, const char *json, size_t len,
                          bool final);
static void store_trim(struct http_session *s, struct http_stream *cur,
                       struct http_stream **dropped);
static void stream_wake(struct http_stream *st);
static void stream_unref_list(struct http_stream *list);

/*
 * A comment line on every open listen stream: an idle stream's client that
 * went away is noticed when the write fails, and its place is freed.
 */
static void listens_keepalive(struct http_server *srv)
{
    struct http_stream *dropped = NULL;

    pthread_mutex_lock(&srv->reqs_lock);
    for (struct http_req *r = srv->reqs; r != NULL; r = r->next) {
        struct http_stream *st = __atomic_load_n(&r->stream, __ATOMIC_ACQUIRE);
        struct http_session *s = st != NULL ? st->sess : NULL;

        if (!r->listening || s == NULL)
            continue;
        pthread_mutex_lock(&s->lock);
        if (!st->done && st->tap == r && st->n_evs > 0) {
            stream_append(st, NULL, 0, false);
            store_trim(s, st, &dropped);
            stream_wake(st);
        }
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&srv->reqs_lock);
    stream_unref_list(dropped);
}

/*
 * Hand the memory of ended sessions and closed connections back to the
 * system. glibc keeps freed pages in its arenas (one per thread that
 * allocated, up to 8 per core): 1,000 sessions opened at once and ended
 * left 77-100 MiB against 13 MiB idle. Trimming walks every arena, so it
 * runs once a tick at most: on a tick that saw nothing released after one
 * that did, or every TRIM_EVERY_S under a steady churn.
 */
#define TRIM_EVERY_S 10u
struct trim_state {
    unsigned seen;    /* released at the last tick */
    unsigned pending; /* ticks since the first unreclaimed end; 0: none */
};

static void trim_tick(struct http_server *srv, struct trim_state *t)
{
    unsigned released = atomic_load(&srv->released);
    bool quiet = released == t->seen;

    t->seen = released;
    if (!quiet && t->pending == 0) {
        t->pending = 1;
        return;
    }
    if (t->pending == 0 || (!quiet && t->pending++ < TRIM_EVERY_S))
        return;
    t->pending = 0;
#ifdef __GLIBC__
    malloc_trim(0);
    log_msg(RLMCP_LOG_DEBUG, NULL,
            "http: freed memory handed back to the system (malloc_trim)");
#endif
}

static void *reaper_main(void *arg)
{
    struct http_server *srv = arg;
    struct trim_state trim = {0, 0};
    struct timespec ts;
    unsigned ticks = 0;

    pthread_mutex_lock(&srv->lock);
    while (!srv->reaper_stop) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&srv->reaper_cond, &srv->lock, &ts);
        if (srv->reaper_stop)
            break;
        pthread_mutex_unlock(&srv->lock);
        sessions_expire(srv);
        trim_tick(srv, &trim);
        if (++ticks % LISTEN_KEEPALIVE_S == 0)
            listens_keepalive(srv);
        pthread_mutex_lock(&srv->lock);
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Streams: the dispatcher's sinks                                          */
/* ------------------------------------------------------------------------ */

static void stream_ref(struct http_stream *st)
{
    atomic_fetch_add(&st->refs, 1);
}

static void stream_unref(struct http_stream *st)
{
    if (st == NULL || atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    stream_free_events(st);
    free(st->json_reply);
    free(st->req_id);
    session_unref(st->sess);
    free(st);
}

static void sink_retain(struct mcp_sink *sink)
{
    stream_ref((struct http_stream *)sink);
}

static void sink_release(struct mcp_sink *sink)
{
    stream_unref((struct http_stream *)sink);
}

/* "id: 3-7\nevent: message\ndata: {...}\n\n", newlines in data split. */
static char *format_event(uint64_t no, uint64_t seq, const char *json,
                          size_t len, size_t *out_len)
{
    size_t extra = 0;
    size_t cap = 0;
    size_t o = 0;
    char *buf = NULL;
    int w = 0;

    for (size_t i = 0; i < len; i++) {
        if (json[i] == '\n')
            extra += 6;
    }
    cap = 64 + len + extra + 3;
    buf = malloc(cap);
    if (buf == NULL)
        return NULL;
    w = snprintf(buf, cap,
                 "id: %" PRIu64 "-%" PRIu64 "\nevent: message\ndata: ", no,
                 seq);
    o = (size_t)w;
    for (size_t i = 0; i < len; i++) {
        if (json[i] == '\r')
            continue;
        if (json[i] == '\n') {
            memcpy(buf + o, "\ndata: ", 7);
            o += 7;
            continue;
        }
        buf[o++] = json[i];
    }
    buf[o++] = '\n';
    buf[o++] = '\n';
    buf[o] = '\0';
    *out_len = o;
    return buf;
}

/* Caller holds s->lock: unlist st and hand its list reference to *dropped
 * for the caller to release after unlocking. */
static void store_drop(struct http_session *s, struct http_stream *st,
                       struct http_stream **dropped)
{
    session_unlist(s, st);
    stream_free_events(st);
    st->next = *dropped;
    *dropped = st;
}

static bool store_over(const struct http_session *s)
{
    const struct http_options *o = &s->srv->opts;

    return s->store_events > o->event_store_events ||
           s->store_bytes > o->event_store_bytes;
}

/*
 * Caller holds s->lock. Keep the session's event store within its bounds:
 * first drop replies written in full (at most RESUME_WRITTEN_KEEP are kept:
 * a client that lost its connection may not have read what the kernel
 * accepted), then events a live reader has written already, then whole
 * replies nobody is reading (oldest first). The final event of a reply
 * being read is never dropped.
 */
static void store_trim(struct http_session *s, struct http_stream *cur,
                       struct http_stream **dropped)
{
    for (struct http_stream *st = s->streams; st != NULL;) {
        struct http_stream *next = st->next;
        if (!store_over(s) && s->n_written <= RESUME_WRITTEN_KEEP)
            break;
        if (st->written && st->tap == NULL && st != cur)
            store_drop(s, st, dropped);
        st = next;
    }
    for (struct http_stream *st = s->streams; st != NULL; st = st->next) {
        size_t drop = 0;
        if (!store_over(s))
            return;
        while (drop < st->n_evs && st->tap != NULL &&
               st->evs[drop].seq < st->tap->cursor && !st->evs[drop].final)
            drop++;
        for (size_t i = 0; i < drop; i++) {
            s->store_events--;
            s->store_bytes -= st->evs[i].len;
            st->bytes -= st->evs[i].len;
            free(st->evs[i].text);
        }
        if (drop > 0) {
            memmove(st->evs, st->evs + drop,
                    (st->n_evs - drop) * sizeof(*st->evs));
            st->n_evs -= drop;
        }
    }
    for (struct http_stream *st = s->streams; st != NULL;) {
        struct http_stream *next = st->next;
        if (!store_over(s))
            return;
        if (st->sse && st != cur && st->tap == NULL) {
            if (stream_undelivered(st))
                log_msg(RLMCP_LOG_WARNING, NULL,
                        "http: session %.8s…: event store full, dropping the "
                        "undelivered reply to request %s",
                        s->id, st->req_id ? st->req_id : "?");
            store_drop(s, st, dropped);
        }
        st = next;
    }
}

static void stream_unref_list(struct http_stream *list)
{
    while (list != NULL) {
        struct http_stream *next = list->next;
        list->next = NULL;
        stream_unref(list);
        list = next;
    }
}

/* Caller holds s->lock. Wake the reader if it sleeps. */
static void stream_wake(struct http_stream *st)
{
    struct http_req *tap = st->tap;

    if (tap != NULL && tap->suspended) {
        tap->suspended = false;
        MHD_resume_connection(tap->conn);
    }
}

/*
 * Caller holds s->lock: append one SSE event (json NULL: a comment line,
 * the listen streams' keep-alive).
 */
static void stream_append(struct http_stream *st, const char *json, size_t len,
                          bool final)
{
    struct http_session *s = st->sess;
    size_t tlen = 0;
    char *text = NULL;

    if (st->n_evs == st->cap_evs) {
        size_t cap = st->cap_evs ? st->cap_evs * 2 : 8;
        struct http_ev *evs = realloc(st->evs, cap * sizeof(*evs));
        if (evs == NULL)
            goto nomem;
        st->evs = evs;
        st->cap_evs = cap;
    }
    if (json != NULL)
        text = format_event(st->no, st->next_seq, json, len, &tlen);
    else if ((text = strdup(":\n\n")) != NULL)
        tlen = strlen(text);
    if (text == NULL)
        goto nomem;
    st->evs[st->n_evs].seq = st->next_seq++;
    st->evs[st->n_evs].text = text;
    st->evs[st->n_evs].len = tlen;
    st->evs[st->n_evs].final = final;
    st->n_evs++;
    st->bytes += tlen;
    if (st->listed) {
        s->store_events++;
        s->store_bytes += tlen;
    }
    return;
nomem:
    log_msg(RLMCP_LOG_ERROR, NULL,
            "http: out of memory: a message for request %s is lost",
            st->req_id ? st->req_id : "?");
}

static void sink_send(struct mcp_sink *sink, const char *json, size_t len,
                      bool final)
{
    struct http_stream *st = (struct http_stream *)sink;
    struct http_session *s = st->sess;
    struct http_stream *dropped = NULL;
    char *adapted = NULL;

    if (final)
        adapted = intake_answer(&st->reply, json, len);
    if (adapted != NULL) {
        json = adapted;
        len = strlen(adapted);
    }

    pthread_mutex_lock(&s->lock);
    if (st->done) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    if (json != NULL && st->sse && !st->listed && st->tap == NULL) {
        /* Evicted and unread: nobody can ever receive it. */
    } else if (json != NULL && st->sse) {
        stream_append(st, json, len, final);
        if (final && st->stateless && st->n_evs == 1)
            st->json_reply = strndup(json, len); /* may go out as JSON */
        if (final && st->json_reply != NULL)
            st->json_len = len;
    } else if (json != NULL && final) {
        st->json_reply = malloc(len + 1);
        if (st->json_reply != NULL) {
            memcpy(st->json_reply, json, len);
            st->json_reply[len] = '\0';
            st->json_len = len;
        }
    } else if (json != NULL) {
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "http: dropped a message sent on the JSON reply to request %s",
                st->req_id ? st->req_id : "?");
    }
    if (final) {
        st->done = true;
        if (s->busy > 0)
            s->busy--;
        s->last_used = now_s();
        if (st->sse && st->tap == NULL && json != NULL && st->listed)
            log_msg(RLMCP_LOG_INFO, NULL,
                    "http: session %.8s…: the reply to request %s is ready but "
                    "its client went away; kept for GET with Last-Event-ID",
                    s->id, st->req_id ? st->req_id : "?");
    }
    if (st->sse && st->listed)
        store_trim(s, st, &dropped);
    stream_wake(st);
    pthread_mutex_unlock(&s->lock);
    stream_unref_list(dropped);
    free(adapted);
}

/* reply: the request's (intake_reply_init); NULL for a GET stream. */
static struct http_stream *stream_new(struct http_session *s, bool sse,
                                      const cJSON *id,
                                      const struct intake_reply *reply)
{
    struct http_stream *st = calloc(1, sizeof(*st));

    if (st == NULL)
        return NULL;
    st->stateless = s->stateless;
    if (reply != NULL)
        st->reply = *reply;
    st->sink.send = sink_send;
    st->sink.retain = sink_retain;
    st->sink.release = sink_release;
    atomic_init(&st->refs, 1);
    session_ref(s);
    st->sess = s;
    st->sse = sse;
    st->next_seq = 1;
    if (id != NULL)
        st->req_id = cJSON_PrintUnformatted(id);
    pthread_mutex_lock(&s->lock);
    st->no = ++s->next_stream;
    s->busy++;
    /* Every stream is listed so that shutdown can find its reader. */
    stream_ref(st);
    st->listed = true;
    st->prev = s->streams_tail;
    if (s->streams_tail != NULL)
        s->streams_tail->next = st;
    else
        s->streams = st;
    s->streams_tail = st;
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ---- the standalone GET stream ------------------------------------------ */

static struct http_session *notify_session(struct mcp_sink *sink)
{
    return (struct http_session *)((char *)sink -
                                   offsetof(struct http_session, notify_sink));
}

static void notify_retain(struct mcp_sink *sink)
{
    session_ref(notify_session(sink));
}

static void notify_release(struct mcp_sink *sink)
{
    session_unref(notify_session(sink));
}

/* A message that belongs to no request: onto the GET stream, if open. */
static void notify_send(struct mcp_sink *sink, const char *json, size_t len,
                        bool final)
{
    struct http_session *s = notify_session(sink);
    struct http_stream *st = NULL;
    struct http_stream *dropped = NULL;

    (void) final;
    if (json == NULL)
        return;
    pthread_mutex_lock(&s->lock);
    st = s->terminated ? NULL : s->get_stream;
    if (st != NULL && !st->done) {
        stream_append(st, json, len, false);
        store_trim(s, st, &dropped);
        stream_wake(st);
    } else {
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "http: session %.8s…: no GET stream open; a notification is "
                "dropped",
                s->id);
    }
    pthread_mutex_unlock(&s->lock);
    stream_unref_list(dropped);
}

/* Caller holds s->lock: the GET stream ends (its reader finishes). */
static void get_stream_end(struct http_session *s)
{
    struct http_stream *st = s->get_stream;

    if (st != NULL && !st->done) {
        st->done = true;
        stream_wake(st);
    }
}

/* ------------------------------------------------------------------------ */
/* SSE content reader                                                       */
/* ------------------------------------------------------------------------ */

static size_t copy_out(char *buf, size_t max, const char *src, size_t len,
                       size_t *off)
{
    size_t n = len - *off;

    if (n > max)
        n = max;
    memcpy(buf, src + *off, n);
    *off += n;
    return n;
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct http_req *req = cls;
    struct http_stream *st = req->stream;
    struct http_session *s = st->sess;
    size_t w = 0;
    ssize_t ret = 0;

    (void)pos;
    pthread_mutex_lock(&s->lock);
    if (atomic_load(&req->srv->stopping) || st->tap != req) {
        ret = MHD_CONTENT_READER_END_WITH_ERROR;
        goto out;
    }
    if (!req->primed && s->stateless) {
        req->primed = true; /* 2026-07-28 has no resumption to prime */
    } else if (!req->primed) {
        /* Priming event (SEP-1699): an id to resume from, empty data. */
        char prime[96];
        int n = snprintf(prime, sizeof(prime),
                         "id: %" PRIu64 "-0\nretry: %d\ndata: \n\n", st->no,
                         SSE_RETRY_MS);
        size_t off = req->woff;
        w += copy_out(buf, max, prime, (size_t)n, &off);
        req->woff = off;
        if (req->woff < (size_t)n)
            goto wrote;
        req->woff = 0;
        req->primed = true;
    }
    for (size_t i = 0; i < st->n_evs && w < max; i++) {
        struct http_ev *ev = &st->evs[i];
        if (ev->seq < req->cursor)
            continue;
        w += copy_out(buf + w, max - w, ev->text, ev->len, &req->woff);
        if (req->woff < ev->len)
            break;
        req->woff = 0;
        req->cursor = ev->seq + 1;
    }
wrote:
    if (w > 0) {
        ret = (ssize_t)w;
        goto out;
    }
    if (st->done && req->cursor >= st->next_seq) {
        ret = MHD_CONTENT_READER_END_OF_STREAM;
        goto out;
    }
    req->suspended = true;
    MHD_suspend_connection(req->conn);
    ret = 0;
out:
    pthread_mutex_unlock(&s->lock);
    return ret;
}

static enum MHD_Result queue_sse(struct http_req *req, const char *session_id)
{
    struct MHD_Response *resp = NULL;
    enum MHD_Result ret = MHD_NO;

    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
                                             sse_reader, req, NULL);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                            "no-cache, no-transform");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    if (session_id != NULL)
        MHD_add_response_header(resp, "Mcp-Session-Id", session_id);
    add_common_headers(req->srv, req->conn, resp);
    ret = MHD_queue_response(req->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    req->phase = PHASE_DONE;
    req->status = MHD_HTTP_OK;
    return ret;
}

/* ------------------------------------------------------------------------ */
/* Request checks                                                           */
/* ------------------------------------------------------------------------ */

static const char *hdr(struct http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/* Host, Origin, endpoint token. Returns MHD_YES after queueing a refusal,
 * or -1 when the request may go on. */
static int check_access(struct http_req *req, bool need_token)
{
    struct http_server *srv = req->srv;
    const char *host = hdr(req, MHD_HTTP_HEADER_HOST);
    const char *origin = hdr(req, "Origin");
    const char *const *origins = (const char *const *)srv->origins;

    if (srv->loopback && !http_host_header_ok(host, srv->port, origins))
        return reply_error(req, MHD_HTTP_FORBIDDEN, INTAKE_REFUSE_SERVER,
                           "Forbidden: Host header '%.100s' is not allowed; "
                           "this server answers only to localhost, 127.0.0.1 "
                           "or [::1] (DNS-rebinding protection). Behind a "
                           "proxy, list its public origin in "
                           "server.http.allowed_origins",
                           host ? host : "(none)");
    if (!http_origin_ok(origin, origins, srv->loopback))
        return reply_error(req, MHD_HTTP_FORBIDDEN, INTAKE_REFUSE_SERVER,
                           "Forbidden: Origin '%.100s' is not allowed; add it "
                           "to server.http.allowed_origins to let that web "
                           "page call this server",
                           origin);
    if (need_token && srv->auth_token != NULL) {
        const char *tok = http_bearer(hdr(req, MHD_HTTP_HEADER_AUTHORIZATION));
        if (!http_token_equal(tok, srv->auth_token))
            return reply_error(req, MHD_HTTP_UNAUTHORIZED, INTAKE_REFUSE_SERVER,
                               "Unauthorized: this endpoint needs "
                               "'Authorization: Bearer <token>' with the "
                               "token configured in server.http.auth_token; "
                               "send your Runloop key in X-Runloop-Api-Key");
    }
    return -1;
}

/*
 * The caller's Runloop key for this request. Returns MHD_YES after a
 * refusal, -1 otherwise; *key is NULL when the caller brought none.
 */
static int caller_key(struct http_req *req, const char **key)
{
    struct http_server *srv = req->srv;
    const char *query = MHD_lookup_connection_value(
        req->conn, MHD_GET_ARGUMENT_KIND, "api_key");
    const char *k = NULL;

    *key = NULL;
    if (query != NULL && !srv->opts.allow_query_key)
        return reply_error(req, MHD_HTTP_BAD_REQUEST, INTAKE_REFUSE_SERVER,
                           "Bad Request: the api_key query parameter is "
                           "disabled on this server because URLs end up in "
                           "logs; send the key as 'X-Runloop-Api-Key: <key>' "
                           "or 'Authorization: Bearer <key>', or set "
                           "server.http.allow_query_key: true");
    k = hdr(req, "X-Runloop-Api-Key");
    if (k == NULL && srv->auth_token == NULL)
        k = http_bearer(hdr(req, MHD_HTTP_HEADER_AUTHORIZATION));
    if (k == NULL && query != NULL)
        k = query;
    if (k != NULL && *k == '\0')
        k = NULL;
    *key = k;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* POST /mcp                                                                */
/* ------------------------------------------------------------------------ */

/* Checks that need only the headers, before the body is read. */
static int post_precheck(struct http_req *req)
{
    struct http_server *srv = req->srv;
    const char *accept = hdr(req, MHD_HTTP_HEADER_ACCEPT);
    const char *ctype = hdr(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *clen = hdr(req, MHD_HTTP_HEADER_CONTENT_LENGTH);

    if (!http_accept_ok(accept, true, true))
        return reply_error(req, MHD_HTTP_NOT_ACCEPTABLE, INTAKE_REFUSE_SERVER,
                           "Not Acceptable: the Accept header must list both "
                           "application/json and text/event-stream");
    if (!http_content_type_json(ctype))
        return reply_error(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                           INTAKE_REFUSE_SERVER,
                           "Unsupported Media Type: send the JSON-RPC "
                           "message with Content-Type: application/json");
    if (clen != NULL && strtoull(clen, NULL, 10) > srv->opts.max_body_bytes)
        return reply_error(req, MHD_HTTP_CONTENT_TOO_LARGE,
                           INTAKE_REFUSE_SERVER,
                           "Payload Too Large: the body exceeds %zu bytes "
                           "(server.http.max_body_bytes); send smaller "
                           "arguments or raise the limit",
                           srv->opts.max_body_bytes);
    /* MCP-Protocol-Version is checked with the body (post_revision),
     * which says whether this is a stateless (2026-07-28) request. */
    return -1;
}

/* A JSON-RPC error answering the request (its id), with an HTTP status. */
static enum MHD_Result reply_rpc_error(struct http_req *req, unsigned status,
                                       const cJSON *id, int code,
                                       const char *msg, const cJSON *data)
{
    char *text = intake_refusal_code(code, id, msg, data);

    log_msg(RLMCP_LOG_DEBUG, NULL, "http: %u: %s", status, msg);
    if (text == NULL)
        return queue_buffer(req, status, NULL, "", 0, false, NULL);
    return queue_buffer(req, status, "application/json", text, strlen(text),
                        true, NULL);
}

/*
 * Which revision a POST speaks (intake.h): a request without a session
 * that names 2026-07-28 (header or params._meta) is stateless, and the
 * checks its revision asks fail with 400. Returns MHD_YES/NO after a
 * refusal, -1 to go on; *in is the message as read.
 */
static int post_revision(struct http_req *req, const cJSON *msg,
                         struct intake *in)
{
    struct intake_headers h = {
        .version = hdr(req, "MCP-Protocol-Version"),
        .method = hdr(req, "Mcp-Method"),
        .name = hdr(req, "Mcp-Name"),
    };
    enum intake_session where = hdr(req, "Mcp-Session-Id") != NULL
                                    ? INTAKE_SESSION_NAMED
                                    : INTAKE_NO_SESSION;
    cJSON *data = NULL;
    char err[512];
    char text[540];
    int code = 0;
    int ret = -1;

    intake_read(msg, &h, where, in);
    code = intake_check(msg, &h, in, err, sizeof(err), &data);
    if (code == 0)
        return -1;
    if (!in->stateless) {
        /* A session's message: no id to answer, the refusal has id null. */
        snprintf(text, sizeof(text), "Bad Request: %s", err);
        ret =
            reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, NULL, code, text, data);
    } else {
        ret =
            reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, in->id, code, err, data);
    }
    cJSON_Delete(data);
    return ret;
}

/* 404 for a session id this server does not know (any more). */
static int reply_no_session(struct http_req *req)
{
    return reply_error(req, MHD_HTTP_NOT_FOUND, INTAKE_REFUSE_NO_SESSION,
                       "Session not found: it was deleted, expired after %u s "
                       "idle, was reclaimed while idle for a new client, or "
                       "the server restarted; send initialize to start a new "
                       "session",
                       req->srv->opts.session_idle_seconds);
}

/*
 * The session named by Mcp-Session-Id, attached to req, when the caller
 * brings the credentials that opened it. Returns MHD_YES/NO after a
 * refusal, -1 to go on.
 */
static int use_session(struct http_req *req, const char *sid, const char *key)
{
    req->sess = session_lookup(req, sid);
    if (req->sess == NULL)
        return reply_no_session(req);
    if (!session_cred_ok(req->srv, req->sess, key)) {
        log_msg(RLMCP_LOG_NOTICE, NULL,
                "http: session %.8s…: refused a request with other "
                "credentials than the session was opened with",
                req->sess->id);
        return reply_error(req, MHD_HTTP_FORBIDDEN, INTAKE_REFUSE_SERVER,
                           "Forbidden: this session was opened with other "
                           "credentials; send the same Runloop key "
                           "(X-Runloop-Api-Key or Authorization) as the "
                           "initialize that opened it, or send initialize "
                           "to start a session of your own");
    }
    return -1;
}

/* A new session for an initialize; refusals queued. */
static int new_session(struct http_req *req, const char *key)
{
    struct http_server *srv = req->srv;
    int why = 0;

    req->sess = session_create(req, key, &why);
    if (req->sess != NULL)
        return -1;
    if (why == -3)
        return reply_error(
            req, MHD_HTTP_TOO_MANY_REQUESTS, INTAKE_REFUSE_SERVER,
            "Too Many Requests: this client already has %u sessions, each "
            "with a request or call running "
            "(server.http.max_sessions_per_client); end one with DELETE "
            "/mcp or retry when a call finishes",
            srv->opts.max_sessions_per_client);
    if (why == -1)
        return reply_error(
            req, MHD_HTTP_TOO_MANY_REQUESTS, INTAKE_REFUSE_SERVER,
            "Too Many Requests: all %u sessions (server.http.max_sessions) "
            "have a request or call running; retry when a call finishes",
            srv->opts.max_sessions);
    return reply_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR,
                       INTAKE_REFUSE_SERVER,
                       "Internal error: cannot create a session");
}

/* Find or create the session for a parsed message; refusals queued. */
static int post_session(struct http_req *req, bool is_init, const char *key)
{
    const char *sid = hdr(req, "Mcp-Session-Id");

    if (is_init) {
        if (sid != NULL)
            return reply_error(req, MHD_HTTP_BAD_REQUEST, INTAKE_REFUSE_SERVER,
                               "Bad Request: initialize starts a new session "
                               "and must not carry an Mcp-Session-Id header");
        return new_session(req, key);
    }
    if (sid == NULL)
        return reply_error(req, MHD_HTTP_BAD_REQUEST, INTAKE_REFUSE_SERVER,
                           "Bad Request: Mcp-Session-Id header is required; "
                           "send initialize first");
    return use_session(req, sid, key);
}

/* Caller holds nothing. JSON reply ready: send it (initialize: session). */
static enum MHD_Result post_reply_json(struct http_req *req)
{
    struct http_stream *st = req->stream;
    struct http_session *s = req->sess;
    char *body = NULL;
    size_t len = 0;
    bool have = false;
    struct intake_outcome out;
    const char *sid = NULL;
    unsigned status = MHD_HTTP_OK;

    pthread_mutex_lock(&s->lock);
    have = st->json_reply != NULL;
    body = st->json_reply;
    len = st->json_len;
    st->json_reply = NULL;
    pthread_mutex_unlock(&s->lock);
    if (!have)
        return queue_buffer(req, MHD_HTTP_ACCEPTED, NULL, "", 0, false, NULL);
    intake_outcome(&st->reply, body, len, &out);
    if (out.session_created)
        sid = s->id;
    if (out.session_refused)
        session_terminate(req->srv, s, "initialize failed");
    /* Before the client can see the answer and send its next request. */
    req_detach(req);
    if (out.status == INTAKE_STATUS_MALFORMED)
        status = MHD_HTTP_BAD_REQUEST;
    else if (out.status == INTAKE_STATUS_UNKNOWN)
        status = MHD_HTTP_NOT_FOUND;
    return queue_buffer(req, status, "application/json", body, len, true, sid);
}

/* Suspend until the JSON reply is there, or answer now if it is. */
static enum MHD_Result post_wait_json(struct http_req *req)
{
    struct http_session *s = req->sess;
    bool done = false;

    pthread_mutex_lock(&s->lock);
    done = req->stream->done;
    if (!done && atomic_load(&req->srv->stopping)) {
        pthread_mutex_unlock(&s->lock);
        return reply_error(req, MHD_HTTP_SERVICE_UNAVAILABLE,
                           INTAKE_REFUSE_SERVER,
                           "Service Unavailable: the server is shutting down");
    }
    if (!done) {
        req->stream->tap = req;
        req->suspended = true;
        req->phase = PHASE_WAITING;
        MHD_suspend_connection(req->conn);
    }
    pthread_mutex_unlock(&s->lock);
    if (done)
        return post_reply_json(req);
    return MHD_YES;
}

/*
 * A stateless request whose handler may stream: wait for its first message.
 * A lone final answer goes out as JSON, so an error keeps its HTTP status
 * (intake_outcome); anything else starts the SSE reply.
 */
static enum MHD_Result post_wait_first(struct http_req *req)
{
    struct http_session *s = req->sess;
    struct http_stream *st = req->stream;
    bool json = false;

    pthread_mutex_lock(&s->lock);
    if (st->n_evs == 0 && !st->done) {
        if (atomic_load(&req->srv->stopping)) {
            pthread_mutex_unlock(&s->lock);
            return reply_error(req, MHD_HTTP_SERVICE_UNAVAILABLE,
                               INTAKE_REFUSE_SERVER,
                               "Service Unavailable: the server is shutting "
                               "down");
        }
        req->suspended = true;
        req->phase = PHASE_FIRST;
        MHD_suspend_connection(req->conn);
        pthread_mutex_unlock(&s->lock);
        return MHD_YES;
    }
    json = st->done && st->n_evs == 1 && st->json_reply != NULL;
    if (json)
        req->cursor = st->next_seq; /* delivered as JSON */
    pthread_mutex_unlock(&s->lock);
    if (json)
        return post_reply_json(req);
    return queue_sse(req, NULL);
}

/* mcp_request_ctx.header: the request's headers, during mcp_handle. */
static const char *req_header(void *user, const char *name)
{
    return hdr(user, name);
}

/*
 * Hand the body to the dispatcher. The session's calls may not be cancelled
 * (mcp_session_free) while we are inside mcp_handle with it: a concurrent
 * DELETE leaves that to whoever leaves last. Returns 1 handled, 0 not (no
 * reply comes), -1 the session ended meanwhile.
 */
static int dispatch(struct http_req *req, cJSON *msg, const char *key,
                    bool used)
{
    struct http_session *s = req->sess;
    struct mcp_request_ctx ctx = {0};
    bool handled = false;
    bool free_ms = false;

    ctx.api_key = key;
    ctx.header = req_header;
    ctx.header_user = req;
    if (s->stateless)
        intake_mark_stateless(&ctx);
    pthread_mutex_lock(&s->lock);
    if (s->ms_freed) {
        /* Ended (DELETE) between the lookup and here. */
        if (!req->stream->done) {
            req->stream->done = true;
            if (s->busy > 0)
                s->busy--;
        }
        pthread_mutex_unlock(&s->lock);
        return -1;
    }
    s->handling++;
    if (used)
        s->used = true;
    pthread_mutex_unlock(&s->lock);
    handled = mcp_handle_msg(req->srv->d, s->ms, msg, &req->stream->sink, &ctx);
    pthread_mutex_lock(&s->lock);
    s->handling--;
    if (s->terminated && s->handling == 0 && !s->ms_freed) {
        s->ms_freed = true;
        free_ms = true;
    }
    if (!handled && !req->stream->done) {
        /* No reply will come: the stream never becomes busy work. */
        req->stream->done = true;
        if (s->busy > 0)
            s->busy--;
    }
    pthread_mutex_unlock(&s->lock);
    if (free_ms)
        mcp_session_free(s->ms);
    return handled ? 1 : 0;
}

/*
 * A subscriptions/listen request counts against its client's streams:
 * MHD_YES/NO after refusing it (too many), -1 to go on.
 */
static int listen_admit(struct http_req *req, const cJSON *id)
{
    struct http_server *srv = req->srv;
    unsigned n = 0;
    char msg[256];
    int code = 0;

    peer_of(req->conn, req->peer, sizeof(req->peer));
    pthread_mutex_lock(&srv->reqs_lock);
    for (struct http_req *r = srv->reqs; r != NULL; r = r->next) {
        if (r->listening && strcmp(r->peer, req->peer) == 0)
            n++;
    }
    code = intake_listen_admit(n, msg, sizeof(msg));
    if (code == 0)
        req->listening = true;
    pthread_mutex_unlock(&srv->reqs_lock);
    if (req->listening)
        return -1;
    return reply_rpc_error(req, MHD_HTTP_TOO_MANY_REQUESTS, id, code, msg,
                           NULL);
}

static enum MHD_Result post_dispatch(struct http_req *req, cJSON *msg)
{
    struct http_server *srv = req->srv;
    struct intake in;
    struct intake_reply reply;
    const cJSON *id = NULL;
    const char *key = NULL;
    bool sse = false;
    int handled = 0;
    bool stateless = false;
    int r = 0;

    r = caller_key(req, &key);
    if (r >= 0)
        return (enum MHD_Result)r;
    r = post_revision(req, msg, &in);
    if (r >= 0)
        return (enum MHD_Result)r;
    id = in.id;
    stateless = in.stateless;
    if (in.listen) {
        r = listen_admit(req, id);
        if (r >= 0)
            return (enum MHD_Result)r;
    }
    if (stateless) {
        req->sess = session_create_private(srv);
        if (req->sess == NULL)
            return reply_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR,
                               INTAKE_REFUSE_SERVER,
                               "Internal error: no memory");
    } else {
        r = post_session(req, in.initialize, key);
    }
    if (r >= 0)
        return (enum MHD_Result)r;
    sse = in.streams;
    intake_reply_init(&reply, &in);
    __atomic_store_n(&req->stream, stream_new(req->sess, sse, id, &reply),
                     __ATOMIC_RELEASE);
    if (req->stream == NULL)
        return reply_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR,
                           INTAKE_REFUSE_SERVER, "Internal error: no memory");
    if (sse) {
        /* Read from the start: attached before the first event exists, so
         * a full event store never evicts a reply that has a reader. */
        pthread_mutex_lock(&req->sess->lock);
        req->stream->tap = req;
        req->cursor = 1;
        pthread_mutex_unlock(&req->sess->lock);
    }
    handled = dispatch(req, msg, key, id != NULL && !in.initialize);
    if (handled < 0)
        return reply_no_session(req);
    if (handled == 0)
        return queue_buffer(req, MHD_HTTP_ACCEPTED, NULL, "", 0, false, NULL);
    if (!sse)
        return post_wait_json(req);
    if (stateless)
        return post_wait_first(req);
    return queue_sse(req, NULL);
}

static enum MHD_Result post_body_done(struct http_req *req)
{
    struct intake_parsed p;
    char *text = NULL;
    enum MHD_Result ret = MHD_NO;

    if (req->too_big)
        return reply_error(req, MHD_HTTP_CONTENT_TOO_LARGE,
                           INTAKE_REFUSE_SERVER,
                           "Payload Too Large: the body exceeds %zu bytes "
                           "(server.http.max_body_bytes); send smaller "
                           "arguments or raise the limit",
                           req->srv->opts.max_body_bytes);
    /* The protocol reads the body as stdio reads a line (intake_parse):
     * the same refusal, here with 400. */
    if (intake_parse(strbuf_str(&req->body), req->body.len, &p)) {
        ret = post_dispatch(req, p.msg);
        goto out;
    }
    log_msg(RLMCP_LOG_DEBUG, NULL, "http: %u: %s", MHD_HTTP_BAD_REQUEST, p.err);
    text = intake_parsed_refusal(&p);
    if (text == NULL)
        ret = queue_buffer(req, MHD_HTTP_BAD_REQUEST, NULL, "", 0, false, NULL);
    else
        ret = queue_buffer(req, MHD_HTTP_BAD_REQUEST, "application/json", text,
                           strlen(text), true, NULL);
out:
    intake_parsed_free(&p);
    return ret;
}

static enum MHD_Result post_upload(struct http_req *req, const char *data,
                                   size_t *size)
{
    size_t n = *size;
    size_t max = req->srv->opts.max_body_bytes;

    *size = 0;
    if (req->too_big || req->body.len + n > max) {
        req->too_big = true; /* keep reading, answer 413 at the end */
        return MHD_YES;
    }
    return strbuf_add(&req->body, data, n) == 0 ? MHD_YES : MHD_NO;
}

/* ------------------------------------------------------------------------ */
/* GET and DELETE /mcp                                                      */
/* ------------------------------------------------------------------------ */

static int need_session(struct http_req *req)
{
    const char *sid = hdr(req, "Mcp-Session-Id");
    const char *key = NULL;
    int r = 0;

    if (sid == NULL)
        return reply_error(req, MHD_HTTP_BAD_REQUEST, INTAKE_REFUSE_SERVER,
                           "Bad Request: Mcp-Session-Id header is required");
    r = caller_key(req, &key);
    if (r >= 0)
        return r;
    return use_session(req, sid, key);
}

/*
 * Make req the reader of stream no of its session, from seq + 1 on. A
 * reader still attached (its client is gone, undetected while suspended)
 * is woken and ends: it is no longer the stream's tap.
 */
static struct http_stream *resume_attach(struct http_req *req, uint64_t no,
                                         uint64_t seq)
{
    struct http_session *s = req->sess;
    struct http_stream *st = NULL;

    pthread_mutex_lock(&s->lock);
    for (st = s->streams; st != NULL; st = st->next) {
        if (st->no == no && st->sse)
            break;
    }
    if (st != NULL) {
        stream_wake(st);
        stream_ref(st);
        __atomic_store_n(&req->stream, st, __ATOMIC_RELEASE);
        st->tap = req;
        req->primed = true;
        req->cursor = seq + 1;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

/*
 * GET without Last-Event-ID: the session's standalone stream, for messages
 * that belong to no request (notifications/resources/updated). A new one
 * replaces the previous one, which ends (its client may be gone unnoticed:
 * a suspended connection is not polled). Not resumable; it does not keep
 * the session from expiring.
 */
static enum MHD_Result get_open(struct http_req *req)
{
    struct http_session *s = req->sess;
    struct http_stream *st = NULL;
    struct http_stream *old = NULL;
    struct http_stream *lost = NULL;

    st = stream_new(s, true, NULL, NULL);
    if (st == NULL)
        return MHD_NO;
    pthread_mutex_lock(&s->lock);
    if (s->busy > 0)
        s->busy--; /* no final message is due on it */
    old = s->get_stream;
    if (old != NULL) {
        session_unlist(s, old);
        stream_free_events(old);
        if (old->tap != NULL)
            old->tap->cursor = old->next_seq;
        get_stream_end(s);
    }
    s->get_stream = NULL;
    if (s->terminated) {
        st->done = true;
        session_unlist(s, st);
        lost = st;
    } else {
        stream_ref(st);
        s->get_stream = st;
        st->tap = req;
        req->cursor = 1;
        req->primed = true; /* not resumable: no priming event */
    }
    __atomic_store_n(&req->stream, st, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->lock);
    /* An open GET stream does not keep the session from being reclaimed or
     * expiring: ending the session ends the stream. */
    req_detach(req);
    if (old != NULL) {
        stream_unref(old); /* the list's */
        stream_unref(old); /* the field's */
    }
    stream_unref(lost);
    log_msg(RLMCP_LOG_DEBUG, NULL, "http: session %.8s…: GET stream opened%s",
            s->id, old != NULL ? " (the previous one ends)" : "");
    return queue_sse(req, NULL);
}

/* GET with Last-Event-ID: replay that reply stream from after the id. */
static enum MHD_Result handle_get(struct http_req *req)
{
    const char *accept = hdr(req, MHD_HTTP_HEADER_ACCEPT);
    const char *last = hdr(req, "Last-Event-ID");
    const char *pv = hdr(req, "MCP-Protocol-Version");
    struct http_session *s = NULL;
    struct http_stream *st = NULL;
    uint64_t no = 0;
    uint64_t seq = 0;
    char err[512];
    char text[540];
    int code = 0;
    int r = 0;

    if (!http_accept_ok(accept, false, true))
        return reply_error(req, MHD_HTTP_NOT_ACCEPTABLE, INTAKE_REFUSE_SERVER,
                           "Not Acceptable: GET /mcp opens an SSE stream; "
                           "send Accept: text/event-stream");
    code = intake_check_version(pv, err, sizeof(err));
    if (code != 0) {
        snprintf(text, sizeof(text), "Bad Request: %s", err);
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, NULL, code, text,
                               NULL);
    }
    r = need_session(req);
    if (r >= 0)
        return (enum MHD_Result)r;
    if (last == NULL)
        return get_open(req);
    if (!http_parse_event_id(last, &no, &seq))
        return reply_error(req, MHD_HTTP_BAD_REQUEST, INTAKE_REFUSE_SERVER,
                           "Bad Request: Last-Event-ID '%.40s' is not an "
                           "event id of this server",
                           last);
    s = req->sess;
    st = resume_attach(req, no, seq);
    if (st == NULL)
        return reply_error(req, MHD_HTTP_BAD_REQUEST, INTAKE_REFUSE_SERVER,
                           "Bad Request: nothing to resume after event %.40s: "
                           "that reply was delivered completely or dropped",
                           last);
    log_msg(RLMCP_LOG_INFO, NULL,
            "http: session %.8s…: resuming the reply to request %s after "
            "event %s",
            s->id, st->req_id ? st->req_id : "?", last);
    return queue_sse(req, NULL);
}

static enum MHD_Result handle_delete(struct http_req *req)
{
    int r = need_session(req);

    if (r >= 0)
        return (enum MHD_Result)r;
    session_terminate(req->srv, req->sess, "DELETE");
    return queue_buffer(req, MHD_HTTP_OK, NULL, "", 0, false, NULL);
}

/* ------------------------------------------------------------------------ */
/* Routing                                                                  */
/* ------------------------------------------------------------------------ */

static enum MHD_Result handle_info(struct http_req *req, const char *url)
{
    char buf[512];
    int n = 0;

    if (strcmp(url, "/health") == 0) {
        n = snprintf(buf, sizeof(buf), "{\"status\":\"ok\"}");
    } else {
        cJSON *o = cJSON_CreateObject();
        char *t = NULL;
        cJSON_AddStringToObject(o, "name", req->srv->name);
        cJSON_AddStringToObject(o, "version", req->srv->version);
        cJSON_AddStringToObject(o, "endpoint", "/mcp");
        t = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (t == NULL)
            return MHD_NO;
        return queue_buffer(req, MHD_HTTP_OK, "application/json", t, strlen(t),
                            true, NULL);
    }
    return queue_buffer(req, MHD_HTTP_OK, "application/json", buf, (size_t)n,
                        false, NULL);
}

/* GET /metrics: Prometheus text (metrics.h). */
static enum MHD_Result handle_metrics(struct http_req *req)
{
    struct metrics_gauges g;
    size_t len = 0;
    char *text = NULL;

    pthread_mutex_lock(&req->srv->lock);
    g.sessions = (long)req->srv->n_sessions;
    pthread_mutex_unlock(&req->srv->lock);
    text = metrics_render(&g, &len);
    if (text == NULL)
        return MHD_NO;
    return queue_buffer(req, MHD_HTTP_OK,
                        "text/plain; version=0.0.4; charset=utf-8", text, len,
                        true, NULL);
}

/* CORS preflight for allowed browser origins. */
static enum MHD_Result handle_options(struct http_req *req)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_NO;

    if (resp == NULL)
        return MHD_NO;
    add_common_headers(req->srv, req->conn, resp);
    MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                            "GET, POST, DELETE");
    MHD_add_response_header(
        resp, "Access-Control-Allow-Headers",
        "Content-Type, Accept, Authorization, Mcp-Session-Id, "
        "MCP-Protocol-Version, Last-Event-ID, X-Runloop-Api-Key");
    MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    ret = MHD_queue_response(req->conn, MHD_HTTP_NO_CONTENT, resp);
    MHD_destroy_response(resp);
    req->phase = PHASE_DONE;
    req->status = MHD_HTTP_NO_CONTENT;
    return ret;
}

static enum MHD_Result route_first(struct http_req *req, const char *url,
                                   const char *method)
{
    struct http_server *srv = req->srv;
    bool mcp = strcmp(url, "/mcp") == 0 || strcmp(url, "/mcp/") == 0;
    int r = 0;

    if (atomic_load(&srv->stopping))
        return reply_error(req, MHD_HTTP_SERVICE_UNAVAILABLE,
                           INTAKE_REFUSE_SERVER,
                           "Service Unavailable: the server is shutting down");
    if ((unsigned)atomic_load(&srv->connections) > srv->opts.max_connections)
        return reply_error(req, MHD_HTTP_SERVICE_UNAVAILABLE,
                           INTAKE_REFUSE_SERVER,
                           "Service Unavailable: %u connections are open "
                           "(server.http.max_connections); close idle "
                           "connections or retry later",
                           srv->opts.max_connections);
    if (strcmp(url, "/health") == 0 && strcmp(method, "GET") == 0)
        return handle_info(req, url);
    /* /metrics takes /mcp's endpoint token unless configured public. */
    if (strcmp(url, "/metrics") == 0 && strcmp(method, "GET") == 0 &&
        srv->opts.metrics != HOST_METRICS_OFF) {
        r = check_access(req, srv->opts.metrics == HOST_METRICS_PRIVATE);
        return r >= 0 ? (enum MHD_Result)r : handle_metrics(req);
    }
    r = check_access(req, mcp);
    if (r >= 0)
        return (enum MHD_Result)r;
    if (strcmp(method, "OPTIONS") == 0)
        return handle_options(req);
    if (strcmp(url, "/") == 0 && strcmp(method, "GET") == 0)
        return handle_info(req, url);
    if (!mcp)
        return reply_error(req, MHD_HTTP_NOT_FOUND, INTAKE_REFUSE_SERVER,
                           "Not Found: the MCP endpoint is /mcp");
    if (strcmp(method, "POST") == 0) {
        r = post_precheck(req);
        if (r >= 0)
            return (enum MHD_Result)r;
        req->phase = PHASE_BODY;
        return MHD_YES;
    }
    if (strcmp(method, "GET") == 0)
        return handle_get(req);
    if (strcmp(method, "DELETE") == 0)
        return handle_delete(req);
    return reply_error(req, MHD_HTTP_METHOD_NOT_ALLOWED, INTAKE_REFUSE_SERVER,
                       "Method Not Allowed: /mcp takes POST, GET and DELETE");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct http_req *req = *con_cls;

    (void)version;
    if (req == NULL) {
        req = calloc(1, sizeof(*req));
        if (req == NULL)
            return MHD_NO;
        req->srv = srv;
        req->conn = conn;
        req->t0 = now_s();
        snprintf(req->method, sizeof(req->method), "%s", method);
        snprintf(req->url, sizeof(req->url), "%s", url);
        *con_cls = req;
        pthread_mutex_lock(&srv->reqs_lock);
        DLIST_PUSH(srv->reqs, req, prev, next);
        pthread_mutex_unlock(&srv->reqs_lock);
        /* POST is checked on its headers so that a refused body is never
         * read. Other methods are answered once the request is complete:
         * MHD keeps the connection alive only then. */
        if (strcmp(method, "POST") == 0)
            return route_first(req, url, method);
        req->phase = PHASE_HEADERS;
        return MHD_YES;
    }
    switch (req->phase) {
    case PHASE_HEADERS:
        if (*upload_data_size != 0) {
            *upload_data_size = 0; /* a body where none belongs: ignored */
            return MHD_YES;
        }
        return route_first(req, url, method);
    case PHASE_BODY:
        if (*upload_data_size != 0)
            return post_upload(req, upload_data, upload_data_size);
        return post_body_done(req);
    case PHASE_WAITING:
        /* Resumed: the reply arrived, or the server is stopping. */
        return post_wait_json(req);
    case PHASE_FIRST:
        return post_wait_first(req);
    case PHASE_NEW:
    case PHASE_DONE:
    default:
        *upload_data_size = 0;
        return MHD_YES;
    }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_req *req = *con_cls;
    struct http_stream *st = NULL;
    struct http_stream *unlisted = NULL;
    struct http_stream *get_ref = NULL;

    (void)cls;
    (void)conn;
    if (req == NULL)
        return;
    *con_cls = NULL;
    pthread_mutex_lock(&req->srv->reqs_lock);
    DLIST_UNLINK(req->srv->reqs, req, prev, next);
    if (req->listening)
        pthread_cond_broadcast(&req->srv->listen_gone);
    pthread_mutex_unlock(&req->srv->reqs_lock);
    st = req->stream;
    if (st != NULL) {
        struct http_session *s = st->sess;
        pthread_mutex_lock(&s->lock);
        if (s->get_stream == st) {
            /* The standalone stream: never resumable, gone with its reader. */
            s->get_stream = NULL;
            get_ref = st;
            st->done = true;
            st->tap = NULL;
            if (st->listed) {
                session_unlist(s, st);
                unlisted = st;
            }
            stream_free_events(st);
        } else if (st->tap == req) {
            bool all = st->done && req->cursor >= st->next_seq;
            st->tap = NULL;
            if (st->sse && all && st->listed && !s->terminated &&
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
                /* Written in full, which is not yet read: keep it (bounded)
                 * for a client whose connection broke meanwhile. */
                if (!st->written) {
                    st->written = true;
                    s->n_written++;
                }
                store_trim(s, NULL, &unlisted);
            } else if (!st->sse ||
                       (all && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) ||
                       s->terminated) {
                /* Never resumable, or the session ended: forget it. */
                if (st->listed) {
                    session_unlist(s, st);
                    unlisted = st;
                }
                stream_free_events(st);
            } else if (st->done) {
                log_msg(RLMCP_LOG_INFO, NULL,
                        "http: session %.8s…: the client left before the "
                        "reply to request %s was delivered; kept for GET "
                        "with Last-Event-ID",
                        s->id, st->req_id ? st->req_id : "?");
            }
        } else if (!st->sse && st->listed) {
            session_unlist(s, st);
            unlisted = st;
        }
        pthread_mutex_unlock(&s->lock);
    }
    if (log_get_level() <= RLMCP_LOG_DEBUG) {
        char url[128];
        http_redact_url(req->url, url, sizeof(url));
        log_msg(RLMCP_LOG_DEBUG, NULL, "http: %s %s %u session=%.8s %.2f ms%s",
                req->method, url, req->status, req->sess ? req->sess->id : "-",
                (now_s() - req->t0) * 1e3,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? ""
                                                           : " (client left)");
    }
    stream_unref_list(unlisted);
    stream_unref(get_ref);
    stream_unref(st);
    if (req->sess != NULL && req->sess->stateless)
        session_terminate(req->srv, req->sess, "request done");
    req_detach(req);
    session_unref(req->sess);
    free(req->body.p);
    free(req);
}

static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *srv = cls;

    (void)conn;
    (void)socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&srv->connections, 1);
    } else {
        atomic_fetch_sub(&srv->connections, 1);
        atomic_fetch_add(&srv->released, 1);
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    size_t n = 0;

    (void)cls;
    vsnprintf(line, sizeof(line), fmt, ap);
    n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    log_msg(RLMCP_LOG_DEBUG, NULL, "http: libmicrohttpd: %s", line);
}

/* ------------------------------------------------------------------------ */
/* Start and stop                                                           */
/* ------------------------------------------------------------------------ */

static int resolve_listen(struct http_server *srv, struct sockaddr_storage *ss,
                          char *err, size_t errlen)
{
    struct addrinfo hints = {0};
    struct addrinfo *res = NULL;
    const char *name = srv->host;
    int rc = 0;

    if (http_parse_listen(srv->listen, srv->host, sizeof(srv->host),
                          &srv->port) != 0) {
        snprintf(err, errlen,
                 "server.http.listen '%s' is not HOST:PORT; write e.g. "
                 "127.0.0.1:8000 or [::1]:8000",
                 srv->listen);
        return -1;
    }
    if (strcmp(name, "localhost") == 0)
        name = "127.0.0.1";
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0 || res == NULL) {
        snprintf(err, errlen,
                 "server.http.listen: cannot resolve '%s' (%s); use an IP "
                 "address such as 127.0.0.1",
                 srv->host, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (ss->ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_port = htons(srv->port);
        srv->loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        in6->sin6_port = htons(srv->port);
        srv->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    return 0;
}

static int check_options(struct http_server *srv, char *err, size_t errlen)
{
    struct http_options o = srv->opts;

    o.listen = srv->listen;
    o.auth_token = srv->auth_token;
    if (http_limits_check(&o, srv->loopback, err, errlen) != 0)
        return -1;
    /* On loopback every client has the same address: a per-address limit
     * below the table's would only shrink the table. */
    if (srv->opts.max_sessions_per_client == 0)
        srv->opts.max_sessions_per_client =
            srv->loopback ? srv->opts.max_sessions
                          : (srv->opts.max_sessions + 3) / 4;
    return 0;
}

/* Many idle clients need many descriptors: lift the soft limit. */
static void raise_fd_limit(unsigned want)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur >= (rlim_t)want + 64)
        return;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

static void server_free(struct http_server *srv)
{
    if (srv->origins != NULL) {
        for (size_t i = 0; srv->origins[i] != NULL; i++)
            free(srv->origins[i]);
        free(srv->origins);
    }
    secret_free(srv->auth_token);
    free(srv->listen);
    free(srv->name);
    free(srv->version);
    pthread_mutex_destroy(&srv->lock);
    pthread_mutex_destroy(&srv->reqs_lock);
    pthread_cond_destroy(&srv->reaper_cond);
    pthread_cond_destroy(&srv->listen_gone);
    free(srv);
}

static int copy_options(struct http_server *srv, const struct http_options *o)
{
    size_t n = 0;

    srv->opts = *o;
    if (srv->opts.event_store_events == 0)
        srv->opts.event_store_events = 4096;
    if (srv->opts.event_store_bytes == 0)
        srv->opts.event_store_bytes = 1024 * 1024;
    if (srv->opts.mhd_threads == 0)
        srv->opts.mhd_threads = 2;
    if (srv->opts.session_idle_seconds == 0)
        srv->opts.session_idle_seconds = 1800;
    if (srv->opts.connection_timeout_s == 0)
        srv->opts.connection_timeout_s = 120;
    while (o->allowed_origins != NULL && o->allowed_origins[n] != NULL)
        n++;
    srv->origins = calloc(n + 1, sizeof(char *));
    if (srv->origins == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        srv->origins[i] = strdup(o->allowed_origins[i]);
        if (srv->origins[i] == NULL)
            return -1;
    }
    srv->opts.allowed_origins = NULL;
    srv->auth_token = dup_or_null(o->auth_token);
    if (srv->auth_token != NULL && *srv->auth_token == '\0') {
        free(srv->auth_token);
        srv->auth_token = NULL;
    }
    srv->opts.auth_token = NULL;
    srv->listen = strdup(o->listen ? o->listen : "127.0.0.1:8000");
    srv->name = strdup(o->server_name ? o->server_name : "runloop-mcp");
    srv->version = strdup(o->server_version ? o->server_version : "0");
    if (srv->listen == NULL || srv->name == NULL || srv->version == NULL)
        return -1;
    return 0;
}

struct http_server *http_server_start(struct mcp_dispatcher *d,
                                      const struct http_options *opts,
                                      char *err, size_t errlen)
{
    struct http_server *srv = calloc(1, sizeof(*srv));
    struct sockaddr_storage ss;
    const union MHD_DaemonInfo *info = NULL;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;

    if (srv == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&srv->lock, NULL);
    pthread_mutex_init(&srv->reqs_lock, NULL);
    pthread_cond_init(&srv->reaper_cond, NULL);
    pthread_cond_init(&srv->listen_gone, NULL);
    srv->d = d;
    if (copy_options(srv, opts) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    srv->cred_key = (struct digest_key)DIGEST_KEY_INIT;
    if (digest_key_set(&srv->cred_key, NULL, 0) != 0) {
        snprintf(err, errlen, "cannot read random bytes: %s", strerror(errno));
        goto fail;
    }
    memset(&ss, 0, sizeof(ss));
    if (resolve_listen(srv, &ss, err, errlen) != 0 ||
        check_options(srv, err, errlen) != 0)
        goto fail;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    raise_fd_limit(srv->opts.max_connections);
    srv->mhd = MHD_start_daemon(
        flags, srv->port, NULL, NULL, on_request, srv,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)srv->opts.mhd_threads, MHD_OPTION_CONNECTION_LIMIT,
        srv->opts.max_connections * 2u + 64u, /* split across threads */
        MHD_OPTION_CONNECTION_TIMEOUT, srv->opts.connection_timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (srv->mhd == NULL) {
        snprintf(err, errlen,
                 "cannot listen on %s: the port is in use or the address is "
                 "not on this machine; pick another with --listen HOST:PORT",
                 srv->listen);
        goto fail;
    }
    info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
    if (info != NULL && info->port != 0)
        srv->port = info->port;
    if (pthread_create(&srv->reaper, NULL, reaper_main, srv) == 0)
        srv->reaper_started = true;
    return srv;
fail:
    server_free(srv);
    return NULL;
}

uint16_t http_server_port(const struct http_server *srv)
{
    return srv->port;
}

void http_server_url(const struct http_server *srv, char *buf, size_t len)
{
    bool v6 = strchr(srv->host, ':') != NULL;

    snprintf(buf, len, "http://%s%s%s:%u/mcp", v6 ? "[" : "", srv->host,
             v6 ? "]" : "", (unsigned)srv->port);
}

/*
 * Wake every suspended request so that MHD can close it: stopping the
 * daemon with a suspended connection is not allowed. Walks the requests,
 * not the sessions, because a terminated session may still have readers.
 */
static void resume_all(struct http_server *srv)
{
    pthread_mutex_lock(&srv->reqs_lock);
    for (struct http_req *r = srv->reqs; r != NULL; r = r->next) {
        /* Set by MHD threads; stays alive while r is listed. */
        struct http_stream *st = __atomic_load_n(&r->stream, __ATOMIC_ACQUIRE);
        struct http_session *s = st != NULL ? st->sess : NULL;
        if (s == NULL)
            continue;
        pthread_mutex_lock(&s->lock);
        if (r->suspended) {
            r->suspended = false;
            MHD_resume_connection(r->conn);
        }
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&srv->reqs_lock);
}

/*
 * Listen streams end with their result (2026-07-28's graceful end), and
 * their readers get up to LISTEN_FLUSH_MS to write it before MHD stops.
 */
static void end_listens(struct http_server *srv)
{
    struct timespec until;
    bool any = true;

    if (srv->d == NULL || mcp_listen_end_all(srv->d) == 0)
        return;
    until = deadline_after_ms(CLOCK_REALTIME, LISTEN_FLUSH_MS);
    pthread_mutex_lock(&srv->reqs_lock);
    while (any) {
        any = false;
        for (struct http_req *r = srv->reqs; r != NULL; r = r->next)
            any = any || r->listening;
        if (any && pthread_cond_timedwait(&srv->listen_gone, &srv->reqs_lock,
                                          &until) != 0)
            break;
    }
    pthread_mutex_unlock(&srv->reqs_lock);
}

void http_server_stop(struct http_server *srv)
{
    struct http_session *s = NULL;
    struct http_session *tmp = NULL;

    if (srv == NULL)
        return;
    end_listens(srv);
    atomic_store(&srv->stopping, true);
    if (srv->reaper_started) {
        pthread_mutex_lock(&srv->lock);
        srv->reaper_stop = true;
        pthread_cond_signal(&srv->reaper_cond);
        pthread_mutex_unlock(&srv->lock);
        pthread_join(srv->reaper, NULL);
    }
    resume_all(srv);
    MHD_stop_daemon(srv->mhd);
    for (;;) {
        pthread_mutex_lock(&srv->lock);
        s = srv->sessions;
        if (s != NULL)
            session_ref(s);
        pthread_mutex_unlock(&srv->lock);
        if (s == NULL)
            break;
        session_terminate(srv, s, "server stopping");
        session_unref(s);
    }
    (void)tmp;
    server_free(srv);
}
