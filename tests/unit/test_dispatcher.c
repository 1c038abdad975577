/*
 * test_dispatcher.c - the MCP dispatcher driven through mcp_handle() with a
 * capturing sink and a registry built with the registry API: every bad
 * input, negotiation, pagination, calls, cancel, timeout, progress,
 * server-to-client requests, resources, prompts, drain, stdio framing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "call.h"
#include "config.h"
#include "deadline.h"
#include "deployment.h"
#include "intake.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "call_state.h" /* call_ref: a call kept past its answer */
#include "mcp_stdio.h"
#include "revision.h"
#include "registry.h"
#include "tasks.h"

/* ---- capturing sink ----------------------------------------------------- */

#define MAX_MSGS 4096

struct capture {
    struct mcp_sink sink;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char *msgs[MAX_MSGS];
    size_t n;
    int null_finals;
    int invalid; /* messages that were not valid JSON */
    int retains;
    int releases;
};

static void cap_send(struct mcp_sink *sink, const char *json, size_t len,
                     bool final)
{
    struct capture *c = (struct capture *)sink;

    pthread_mutex_lock(&c->lock);
    if (json == NULL) {
        assert_true(final);
        c->null_finals++;
    } else {
        cJSON *m = cJSON_ParseWithLength(json, len);

        if (m == NULL || !jsonrpc_utf8_valid(json, len, NULL) ||
            memchr(json, '\n', len) != NULL)
            c->invalid++;
        cJSON_Delete(m);
        if (c->n < MAX_MSGS)
            c->msgs[c->n++] = strndup(json, len);
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void cap_retain(struct mcp_sink *sink)
{
    struct capture *c = (struct capture *)sink;

    pthread_mutex_lock(&c->lock);
    c->retains++;
    pthread_mutex_unlock(&c->lock);
}

static void cap_release(struct mcp_sink *sink)
{
    struct capture *c = (struct capture *)sink;

    pthread_mutex_lock(&c->lock);
    c->releases++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void cap_init(struct capture *c)
{
    memset(c, 0, sizeof(*c));
    c->sink.send = cap_send;
    c->sink.retain = cap_retain;
    c->sink.release = cap_release;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
}

static void cap_clear(struct capture *c)
{
    size_t i;

    pthread_mutex_lock(&c->lock);
    for (i = 0; i < c->n; i++)
        free(c->msgs[i]);
    c->n = 0;
    c->null_finals = 0;
    pthread_mutex_unlock(&c->lock);
}

/* Workers append while the test reads: count under the lock. */
static size_t cap_size(struct capture *c)
{
    size_t n;

    pthread_mutex_lock(&c->lock);
    n = c->n;
    pthread_mutex_unlock(&c->lock);
    return n;
}

static void cap_fini(struct capture *c)
{
    cap_clear(c);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
}

static void deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* ---- simulated clock ---------------------------------------------------- */

/*
 * The dispatcher's clock (deadline_set_clock): time stands still unless a
 * test moves it, so no test sleeps in real time. sim_step() moves it to
 * the earliest waiter's time; with sim_auto(true) it jumps so once the
 * waiters have been quiet (none came or went) for SIM_QUIET_US of real
 * time and no other thread can run (sim_others_busy), so sleeps, timeouts
 * and the timer run in order without waiting. Quiet alone is no proof on
 * a loaded machine or under a sanitizer: a handler on its way to its 2 ms
 * sleep may not run for longer than that, and a jump then hands the
 * calls' deadlines their time.
 *
 * A waiter waits on its condition variable with no time limit: a signal
 * (cancel, answer) wakes it, and so does the clock reaching its time (the
 * jump broadcasts the waiter's condition variable, and the ticker again
 * every SIM_POLL_US while the waiter has not left, should that first
 * broadcast come before the waiter waits). A timed wait in real-time
 * slices instead could lose a signal: glibc's pthread_cond_timedwait
 * answers ETIMEDOUT when the signal lands as the slice ends.
 */
#define SIM_POLL_US 1000
#define SIM_QUIET_US 3000
#define SIM_START_NS (1000ull * 1000000000ull)
#define SIM_SLOTS 256

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* waiters came or went, time moved */
    _Atomic uint64_t now;
    uint64_t untils[SIM_SLOTS];       /* the waiters' times; 0: a free slot */
    pthread_cond_t *conds[SIM_SLOTS]; /* what each waiter waits on */
    unsigned n;
    uint64_t activity;
    bool autorun;
    bool stop;
    pthread_t ticker;
} g_sim = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .changed = PTHREAD_COND_INITIALIZER,
    .now = SIM_START_NS,
};

static void real_after_us(struct timespec *ts, clockid_t clock, long us)
{
    clock_gettime(clock, ts);
    ts->tv_nsec += us * 1000L;
    while (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static uint64_t sim_now_ns(void *user)
{
    (void)user;
    return atomic_load(&g_sim.now);
}

static int sim_slot(uint64_t until, pthread_cond_t *cond)
{
    int i;

    pthread_mutex_lock(&g_sim.lock);
    for (i = 0; i < SIM_SLOTS && g_sim.untils[i] != 0; i++)
        ;
    assert_true(i < SIM_SLOTS);
    g_sim.untils[i] = until;
    g_sim.conds[i] = cond;
    g_sim.n++;
    g_sim.activity++;
    pthread_cond_broadcast(&g_sim.changed);
    pthread_mutex_unlock(&g_sim.lock);
    return i;
}

static void sim_unslot(int i)
{
    pthread_mutex_lock(&g_sim.lock);
    g_sim.untils[i] = 0;
    g_sim.conds[i] = NULL;
    g_sim.n--;
    g_sim.activity++;
    pthread_cond_broadcast(&g_sim.changed);
    pthread_mutex_unlock(&g_sim.lock);
}

/*
 * Wake the waiters whose time has come; whether there were any. A slot's
 * condition variable lives while the slot is taken: its waiter leaves the
 * slot (under g_sim.lock) before it returns to its caller.
 */
static bool sim_wake_due_locked(void)
{
    uint64_t now = atomic_load(&g_sim.now);
    bool any = false;
    int i;

    for (i = 0; i < SIM_SLOTS; i++) {
        if (g_sim.untils[i] != 0 && g_sim.untils[i] <= now) {
            pthread_cond_broadcast(g_sim.conds[i]);
            any = true;
        }
    }
    return any;
}

/*
 * One wait, as pthread_cond_timedwait on the simulated clock: 0 when
 * signalled (or spuriously, which callers allow for), ETIMEDOUT once the
 * clock reached until.
 */
static int sim_wait(void *user, pthread_cond_t *cond, pthread_mutex_t *mutex,
                    uint64_t until)
{
    int slot = 0;
    int rc = 0;

    (void)user;
    if (atomic_load(&g_sim.now) >= until)
        return ETIMEDOUT;
    slot = sim_slot(until, cond);
    rc = pthread_cond_wait(cond, mutex);
    sim_unslot(slot);
    if (atomic_load(&g_sim.now) >= until)
        return ETIMEDOUT;
    return rc;
}

static const struct deadline_clock g_sim_clock = {
    .now_ns = sim_now_ns,
    .wait = sim_wait,
};

/* Let time run (jumps to each waiter's time in turn), or stand still. */
static void sim_auto(bool on)
{
    pthread_mutex_lock(&g_sim.lock);
    g_sim.autorun = on;
    pthread_cond_broadcast(&g_sim.changed);
    pthread_mutex_unlock(&g_sim.lock);
}

/*
 * Wait (real time, bounded) until n threads wait on the clock for a time
 * at most within_ms from now (a sleep, not the timer's far deadline).
 */
static bool sim_await_waiters(unsigned n, uint32_t within_ms)
{
    struct timespec until;
    uint64_t horizon = 0;
    unsigned k = 0;
    int i;

    real_after_us(&until, CLOCK_REALTIME, 10 * 1000 * 1000);
    pthread_mutex_lock(&g_sim.lock);
    for (;;) {
        horizon = atomic_load(&g_sim.now) + (uint64_t)within_ms * 1000000ull;
        for (i = 0, k = 0; i < SIM_SLOTS; i++) {
            if (g_sim.untils[i] != 0 && g_sim.untils[i] <= horizon)
                k++;
        }
        if (k >= n ||
            pthread_cond_timedwait(&g_sim.changed, &g_sim.lock, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return k >= n;
}

/* Move the clock to the earliest waiter's time and wake who waited for it. */
static void sim_jump_locked(void)
{
    uint64_t earliest = 0;
    int i;

    for (i = 0; i < SIM_SLOTS; i++) {
        if (g_sim.untils[i] != 0 &&
            (earliest == 0 || g_sim.untils[i] < earliest))
            earliest = g_sim.untils[i];
    }
    if (earliest > atomic_load(&g_sim.now))
        atomic_store(&g_sim.now, earliest);
    sim_wake_due_locked();
    g_sim.activity++;
    pthread_cond_broadcast(&g_sim.changed);
}

/* Move the clock to the earliest waiter's time (one step). */
static void sim_step(void)
{
    pthread_mutex_lock(&g_sim.lock);
    sim_jump_locked();
    pthread_mutex_unlock(&g_sim.lock);
}

/*
 * Whether a thread of this process other than the caller is running or
 * runnable (state R or D in /proc/self/task/TID/stat): the test sending
 * requests, a worker starting a handler, a waiter just woken. Waiters
 * themselves sleep in pthread_cond_wait.
 */
static bool sim_others_busy(void)
{
    DIR *dir = opendir("/proc/self/task");
    const struct dirent *e = NULL;
    pid_t self = gettid();
    char path[64];
    char stat[512];
    const char *state = NULL;
    bool busy = false;
    ssize_t n;
    pid_t tid;
    int fd;

    if (dir == NULL)
        return false; /* no /proc: quiet alone decides, as it can */
    while (!busy && (e = readdir(dir)) != NULL) {
        tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* it ended meanwhile */
        n = read(fd, stat, sizeof(stat) - 1);
        close(fd);
        if (n <= 0)
            continue;
        stat[n] = '\0';
        /* "tid (comm) S ...": comm may hold spaces and parentheses. */
        state = strrchr(stat, ')');
        busy = state != NULL && (state[2] == 'R' || state[2] == 'D');
    }
    closedir(dir);
    return busy;
}

static void *sim_ticker(void *arg)
{
    struct timespec t;
    uint64_t seen = 0;
    bool busy = false;

    (void)arg;
    pthread_mutex_lock(&g_sim.lock);
    while (!g_sim.stop) {
        /* A waiter whose time came and who has not left: wake it again
         * (the jump's broadcast may have come before it waited). Time
         * moves on only once it left. */
        if (sim_wake_due_locked()) {
            real_after_us(&t, CLOCK_REALTIME, SIM_POLL_US);
            pthread_cond_timedwait(&g_sim.changed, &g_sim.lock, &t);
            continue;
        }
        if (!g_sim.autorun || g_sim.n == 0) {
            pthread_cond_wait(&g_sim.changed, &g_sim.lock);
            continue;
        }
        seen = g_sim.activity;
        real_after_us(&t, CLOCK_REALTIME, SIM_QUIET_US);
        while (!g_sim.stop && g_sim.activity == seen &&
               pthread_cond_timedwait(&g_sim.changed, &g_sim.lock, &t) == 0)
            ;
        if (g_sim.stop || !g_sim.autorun || g_sim.n == 0 ||
            g_sim.activity != seen)
            continue;
        /* Read unlocked: a thread blocked on g_sim.lock is on its way to
         * a slot, not idle. */
        pthread_mutex_unlock(&g_sim.lock);
        busy = sim_others_busy();
        pthread_mutex_lock(&g_sim.lock);
        if (!busy && !g_sim.stop && g_sim.autorun && g_sim.n > 0 &&
            g_sim.activity == seen)
            sim_jump_locked();
    }
    pthread_mutex_unlock(&g_sim.lock);
    return NULL;
}

/* A handler's pause that is no host call: a wait on the clock alone. */
static void sim_sleep(uint32_t ms)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c;
    pthread_condattr_t attr;
    uint64_t until = deadline_now_ns() + (uint64_t)ms * 1000000ull;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_lock(&m);
    while (deadline_cond_wait(&c, &m, until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&m);
    pthread_cond_destroy(&c);
}

typedef bool (*match_fn)(const cJSON *msg, const void *arg);

/* The first captured message matching; a parsed copy, or NULL at timeout. */
static cJSON *cap_wait(struct capture *c, match_fn match, const void *arg,
                       int ms)
{
    struct timespec until;
    cJSON *found = NULL;
    size_t i;

    deadline_after(&until, ms);
    pthread_mutex_lock(&c->lock);
    for (;;) {
        for (i = 0; i < c->n && found == NULL; i++) {
            cJSON *m = cJSON_Parse(c->msgs[i]);

            assert_non_null(m); /* everything sent must be valid JSON */
            if (match(m, arg))
                found = m;
            else
                cJSON_Delete(m);
        }
        if (found != NULL ||
            pthread_cond_timedwait(&c->cond, &c->lock, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

static bool is_response_to(const cJSON *m, const void *arg)
{
    const cJSON *id = cJSON_GetObjectItem(m, "id");
    int want = *(const int *)arg;

    return cJSON_GetObjectItem(m, "method") == NULL && cJSON_IsNumber(id) &&
           id->valueint == want;
}

static bool is_null_id_error(const cJSON *m, const void *arg)
{
    return cJSON_IsNull(cJSON_GetObjectItem(m, "id"));
}

static bool has_method(const cJSON *m, const void *arg)
{
    const cJSON *meth = cJSON_GetObjectItem(m, "method");

    return cJSON_IsString(meth) && strcmp(meth->valuestring, arg) == 0;
}

static size_t cap_count(struct capture *c, const char *method);

/* Wait (real time, bounded) until n messages of method were captured. */
static bool cap_wait_count(struct capture *c, const char *method, size_t n)
{
    int waited = 0;

    while (cap_count(c, method) < n && waited < 10000) {
        usleep(1000);
        waited++;
    }
    return cap_count(c, method) >= n;
}

static size_t cap_count(struct capture *c, const char *method)
{
    size_t i;
    size_t n = 0;

    pthread_mutex_lock(&c->lock);
    for (i = 0; i < c->n; i++) {
        cJSON *m = cJSON_Parse(c->msgs[i]);

        if (has_method(m, method))
            n++;
        cJSON_Delete(m);
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ---- fixture tools ------------------------------------------------------ */

/*
 * cmocka asserts must not run on worker threads: handlers count failed
 * checks here, and every test checks the count is zero.
 */
static atomic_int g_handler_failures;
static atomic_int g_backwards_refused;
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "handler check failed: %s (line %d)\n", #cond,     \
                    __LINE__);                                                 \
            atomic_fetch_add(&g_handler_failures, 1);                          \
        }                                                                      \
    } while (0)

static int h_echo(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *text = cJSON_GetObjectItem(a, "text");
    int rc = call_result_text(call, cJSON_IsString(text) ? text->valuestring
                                                         : "(none)");

    cJSON_Delete(a);
    return rc;
}

/* Echo the raw arguments it got (for alias and defaulting checks). */
static int h_args(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char *copy = strndup(args, len);
    int rc = call_result_text(call, copy);

    free(copy);
    return rc;
}

static int int_arg(const char *args, size_t len, const char *name, int dflt)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *v = cJSON_GetObjectItem(a, name);
    int r = cJSON_IsNumber(v) ? v->valueint : dflt;

    cJSON_Delete(a);
    return r;
}

static int h_sleep(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    int ms = int_arg(args, len, "ms", 100);
    char buf[64];

    if (call_sleep_ms(call, (uint32_t)ms) == RLMCP_ECANCELLED)
        return RLMCP_ECANCELLED;
    snprintf(buf, sizeof(buf), "slept %d", ms);
    return call_result_text(call, buf);
}

static int h_progress(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    int steps = int_arg(args, len, "steps", 3);
    int i;

    for (i = 1; i <= steps; i++) {
        call_progress(call, i, steps, "step");
        /* Going backwards is refused (a no-op without a token). */
        if (call_progress(call, i - 0.5, steps, NULL) == RLMCP_EINVAL)
            atomic_fetch_add(&g_backwards_refused, 1);
        if (call_sleep_ms(call, 30) != RLMCP_OK)
            return RLMCP_ECANCELLED;
    }
    return call_result_text(call, "done");
}

/* A message cut in the middle of a character (e.g. an output chunk). */
static int h_progress_cut(rlmcp_call *call, const char *args, size_t len,
                          void *ud)
{
    CHECK(call_progress(call, 1, 2, "half \xe2\x82") == RLMCP_OK);
    CHECK(call_progress(call, 2, 2, "bad \xff byte") == RLMCP_OK);
    return call_result_text(call, "cut done");
}

/* Output chunks in a burst, then quiet (no host call that would flush),
 * then one more: no chunk may be lost, and the burst must go out while
 * the handler is quiet. */
static int h_progress_join(rlmcp_call *call, const char *args, size_t len,
                           void *ud)
{
    CHECK(call_progress(call, 1, -1, "a") == RLMCP_OK);
    CHECK(call_progress(call, 2, -1, "b") == RLMCP_OK);
    CHECK(call_progress(call, 3, -1, "c") == RLMCP_OK);
    sim_sleep(300);
    CHECK(call_progress(call, 4, -1, "d") == RLMCP_OK);
    return call_result_text(call, "joined");
}

/* Keeps a reference to its call, as a straggling worker would. */
static rlmcp_call *g_kept_call;

static int h_keep(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    call_ref(call);
    g_kept_call = call;
    return call_result_text(call, "kept");
}

static int h_burst(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    int i;

    for (i = 1; i <= 1000; i++)
        CHECK(call_progress(call, i, -1, NULL) == RLMCP_OK);
    return call_result_text(call, "burst done");
}

/* Counts overlapping runs: max_running tells whether calls overlapped. */
struct overlap {
    atomic_int running;
    atomic_int max_running;
};
static struct overlap g_serial_overlap;
static struct overlap g_parallel_overlap;

static int h_overlap(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    struct overlap *o = ud;
    int now = atomic_fetch_add(&o->running, 1) + 1;
    int max = atomic_load(&o->max_running);

    while (now > max &&
           !atomic_compare_exchange_weak(&o->max_running, &max, now))
        ;
    call_sleep_ms(call, 100);
    atomic_fetch_sub(&o->running, 1);
    return call_result_text(call, "counted");
}

static int h_fail(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    call_result_text(call, "partial output that must not leak");
    return RLMCP_EINTERNAL;
}

static int h_bizerr(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    call_result_json(call, "{\"x\":1}", 7);
    return call_result_error(call, "not_found",
                             "Check the id. Or call list_devboxes.",
                             "devbox %s does not exist", "dbx_1");
}

/* A failure with something left to see: result_json after result_error
 * joins the error's structuredContent (its own "error" does not). */
static int h_bizerr_partial(rlmcp_call *call, const char *args, size_t len,
                            void *ud)
{
    static const char extra[] =
        "{\"result\":{\"stdout\":\"so far\"},\"error\":\"not mine\"}";

    call_result_error(call, "timeout", "Raise timeout_seconds.",
                      "the command did not finish");
    call_result_text(call, "{\"result\":{\"stdout\":\"so far\"}}");
    return call_result_json(call, extra, sizeof(extra) - 1);
}

static int h_structured(rlmcp_call *call, const char *args, size_t len,
                        void *ud)
{
    int mode = int_arg(args, len, "mode", 0);

    if (mode == 1)
        return call_result_text(call, "forgot the structured result");
    return call_result_json(call, "{\"n\":7}", 7);
}

static int h_never(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    /* Ignores the first cancellation for a while: the timer answers. */
    while (!call_is_cancelled(call))
        call_sleep_ms(call, 1000);
    return RLMCP_ECANCELLED;
}

static int h_slow_stop(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    /* Like never, but its clean-up takes a while after the timeout. */
    while (!call_is_cancelled(call))
        call_sleep_ms(call, 1000);
    sim_sleep(500);
    return RLMCP_ECANCELLED;
}

static int h_ask(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char *result = NULL;
    int rc = call_client_request(call, "sampling/createMessage",
                                 "{\"messages\":[],\"maxTokens\":10}", 5000,
                                 &result);
    char buf[512];

    snprintf(buf, sizeof(buf), "rc=%d result=%s", rc,
             result != NULL ? result : "null");
    free(result);
    return call_result_text(call, buf);
}

static int h_log(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    call_log(call, RLMCP_LOG_DEBUG, "debug line");
    call_log(call, RLMCP_LOG_INFO, "info line");
    call_log(call, RLMCP_LOG_ERROR, "error line %d", 42);
    return call_result_text(call, "logged");
}

static int h_content(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    static const char img[] =
        "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}";

    CHECK(call_result_content(call, "[1]", 3) == RLMCP_EINVAL);
    CHECK(call_result_content(call, "{\"no\":1}", 8) == RLMCP_EINVAL);
    CHECK(call_result_json(call, "\"str\"", 5) == RLMCP_EINVAL);
    CHECK(call_resource_contents(call, NULL, NULL, "x", 1, false) ==
          RLMCP_ESTATE);
    CHECK(call_prompt_message(call, "user", "{\"type\":\"text\"}") ==
          RLMCP_ESTATE);
    CHECK(call_result_content(call, img, strlen(img)) == RLMCP_OK);
    /* Invalid UTF-8 from a plugin is repaired, never sent raw. */
    return call_result_text(call, "bad \xff byte");
}

static int r_read(rlmcp_call *call, const char *uri, void *ud)
{
    static const unsigned char bin[] = {0, 1, 2, 250};

    if (strstr(uri, "missing") != NULL)
        return RLMCP_ENOTFOUND;
    if (strstr(uri, "binary") != NULL)
        return call_resource_contents(call, NULL, "application/octet-stream",
                                      bin, sizeof(bin), true);
    return call_resource_contents(call, NULL, "text/plain", uri, strlen(uri),
                                  false);
}

/* A resource that changes at every read; ".../err" fails too_large. */
static atomic_int g_counter_reads;

static int r_counter(rlmcp_call *call, const char *uri, void *ud)
{
    char buf[32];
    int n = atomic_fetch_add(&g_counter_reads, 1);

    if (strstr(uri, "/err") != NULL)
        return call_result_error(call, "too_large", "read less",
                                 "%s is too large", uri) == RLMCP_OK
                   ? RLMCP_OK
                   : RLMCP_EINTERNAL;
    snprintf(buf, sizeof(buf), "n=%d", n);
    CHECK(call_result_json(call, "{\"k\":1}", 7) == RLMCP_OK);
    return call_resource_contents(call, NULL, "text/plain", buf, strlen(buf),
                                  false);
}

static int p_get(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *who = cJSON_GetObjectItem(a, "who");
    char buf[256];

    snprintf(buf, sizeof(buf), "{\"type\":\"text\",\"text\":\"hello %s\"}",
             cJSON_IsString(who) ? who->valuestring : "?");
    cJSON_Delete(a);
    CHECK(call_prompt_message(call, "system", buf) == RLMCP_EINVAL);
    return call_prompt_message(call, "user", buf);
}

/* ---- registry ----------------------------------------------------------- */

static struct registry *g_reg;

static void add_tool_ud(const char *name, rlmcp_tool_fn fn, const char *schema,
                        const char *out_schema, uint32_t flags,
                        uint32_t timeout, void *ud)
{
    struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
    char err[512] = "";

    def.user_data = ud;
    def.name = name;
    def.description = "test tool";
    def.input_schema_json = schema;
    def.output_schema_json = out_schema;
    def.flags = flags;
    def.timeout_ms = timeout;
    def.handler = fn;
    assert_int_equal(
        registry_add_tool(g_reg, NULL, "testplug", &def, err, sizeof(err)),
        RLMCP_OK);
}

static void add_tool(const char *name, rlmcp_tool_fn fn, const char *schema,
                     const char *out_schema, uint32_t flags, uint32_t timeout)
{
    add_tool_ud(name, fn, schema, out_schema, flags, timeout, NULL);
}

static void add_resources(void)
{
    struct rlmcp_resource_def r = RLMCP_RESOURCE_DEF_INIT;
    struct rlmcp_prompt_def p = RLMCP_PROMPT_DEF_INIT;
    char err[512] = "";

    r.uri = "test://static";
    r.name = "static";
    r.mime_type = "text/plain";
    r.read = r_read;
    assert_int_equal(registry_add_resource(g_reg, NULL, &r, err, sizeof(err)),
                     RLMCP_OK);
    r.uri = "test://binary";
    r.name = "binary";
    assert_int_equal(registry_add_resource(g_reg, NULL, &r, err, sizeof(err)),
                     RLMCP_OK);
    r.uri = NULL;
    r.uri_template = "test://item/{id}/data";
    r.name = "item";
    assert_int_equal(registry_add_resource(g_reg, NULL, &r, err, sizeof(err)),
                     RLMCP_OK);
    r.uri_template = "test://count/{+rest}";
    r.name = "counter";
    r.flags = RLMCP_RESOURCE_SUBSCRIBABLE;
    r.read = r_counter;
    assert_int_equal(registry_add_resource(g_reg, NULL, &r, err, sizeof(err)),
                     RLMCP_OK);
    p.name = "greet";
    p.description = "greets";
    p.arguments_json = "[{\"name\":\"who\",\"required\":true}]";
    p.get = p_get;
    assert_int_equal(registry_add_prompt(g_reg, NULL, &p, err, sizeof(err)),
                     RLMCP_OK);
}

#define OBJ "{\"type\":\"object\"}"
#define MS_SCHEMA                                                              \
    "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}"

static int group_setup(void **state)
{
    struct host_tools_config sel;
    struct config_alias alias;
    struct config_param_alias palias;
    char err[512] = "";
    char name[32];
    int i;

    log_set_level(RLMCP_LOG_CRITICAL); /* keep the test output readable */
    deadline_set_clock(&g_sim_clock);
    assert_int_equal(pthread_create(&g_sim.ticker, NULL, sim_ticker, NULL), 0);
    g_reg = registry_new();
    assert_non_null(g_reg);
    add_tool("echo", h_echo,
             "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
             "\"string\"}},\"required\":[\"text\"]}",
             NULL, 0, 0);
    add_tool("args", h_args,
             "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":"
             "\"integer\"}}}",
             NULL, 0, 0);
    add_tool("sleep", h_sleep, MS_SCHEMA, NULL, 0, 0);
    add_tool_ud("serial_overlap", h_overlap, OBJ, NULL, RLMCP_TOOL_SERIAL, 0,
                &g_serial_overlap);
    add_tool_ud("parallel_overlap", h_overlap, OBJ, NULL, 0, 0,
                &g_parallel_overlap);
    add_tool("progress", h_progress, OBJ, NULL, 0, 0);
    add_tool("burst", h_burst, OBJ, NULL, 0, 0);
    add_tool("progress_cut", h_progress_cut, OBJ, NULL, 0, 0);
    add_tool("progress_join", h_progress_join, OBJ, NULL, 0, 0);
    add_tool("keep", h_keep, OBJ, NULL, 0, 0);
    add_tool("fail", h_fail, OBJ, NULL, 0, 0);
    add_tool("bizerr", h_bizerr, OBJ, NULL, 0, 0);
    add_tool("bizerr_partial", h_bizerr_partial, OBJ,
             "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
             "\"integer\"}},\"required\":[\"n\"]}",
             0, 0);
    /* Closed to other properties: "error" fits, "result" does not. */
    add_tool("bizerr_closed", h_bizerr_partial, OBJ,
             "{\"type\":\"object\",\"additionalProperties\":false,"
             "\"properties\":{\"n\":{\"type\":\"integer\"}},"
             "\"required\":[\"n\"]}",
             0, 0);
    /* A schema the host cannot widen: no error object passes it. */
    add_tool("bizerr_strict", h_bizerr, OBJ,
             "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
             "\"integer\"},\"m\":{\"type\":\"integer\"}},\"oneOf\":["
             "{\"required\":[\"n\"]},{\"required\":[\"m\"]}]}",
             0, 0);
    add_tool("structured", h_structured, OBJ,
             "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
             "\"integer\"}},\"required\":[\"n\"]}",
             0, 0);
    add_tool("never", h_never, OBJ, NULL, 0, 200);
    add_tool("slow_stop", h_slow_stop, OBJ, NULL, 0, 200);
    add_tool("ask", h_ask, OBJ, NULL, 0, 0);
    add_tool("log", h_log, OBJ, NULL, 0, 0);
    add_tool("content", h_content, OBJ, NULL, 0, 0);
    for (i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "zz_filler_%d", i);
        add_tool(name, h_echo, OBJ, NULL, 0, 0);
    }
    add_resources();

    /* Expose args's "seconds" parameter as "timeout_seconds". */
    memset(&sel, 0, sizeof(sel));
    memset(&alias, 0, sizeof(alias));
    memset(&palias, 0, sizeof(palias));
    palias.from = "seconds";
    palias.to = "timeout_seconds";
    alias.from = "args";
    alias.to = "args";
    alias.params = &palias;
    alias.n_params = 1;
    sel.aliases = &alias;
    sel.n_aliases = 1;
    assert_int_equal(registry_select(g_reg, &sel, "test.yaml", false, 30000,
                                     err, sizeof(err)),
                     0);
    *state = NULL;
    return 0;
}

static int group_teardown(void **state)
{
    pthread_mutex_lock(&g_sim.lock);
    g_sim.stop = true;
    pthread_cond_broadcast(&g_sim.changed);
    pthread_mutex_unlock(&g_sim.lock);
    pthread_join(g_sim.ticker, NULL);
    deadline_set_clock(NULL);
    registry_free(g_reg);
    return 0;
}

/* ---- per-test fixture --------------------------------------------------- */

struct fx {
    struct mcp_dispatcher *d;
    struct mcp_session *s;
    struct capture cap;
};

static struct fx *fx_new(size_t page_size)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct mcp_options o;

    memset(&o, 0, sizeof(o));
    o.server_name = "test";
    o.server_version = "9.9";
    o.instructions = "be nice";
    o.workers = 4;
    o.page_size = page_size;
    sim_auto(false); /* each test moves time itself */
    f->d = mcp_create(&o, g_reg);
    assert_non_null(f->d);
    f->s = mcp_session_new(f->d);
    assert_non_null(f->s);
    cap_init(&f->cap);
    return f;
}

static void fx_free(struct fx *f)
{
    sim_auto(true); /* whatever still waits ends as it would in time */
    mcp_session_free(f->s);
    mcp_destroy(f->d);
    sim_auto(false);
    assert_int_equal(atomic_load(&g_handler_failures), 0);
    assert_int_equal(f->cap.invalid, 0);
    /* Every retain of the sink was released. */
    assert_int_equal(f->cap.retains, f->cap.releases);
    cap_fini(&f->cap);
    free(f);
}

static bool handle(struct fx *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool handle(struct fx *f, const char *fmt, ...)
{
    struct mcp_request_ctx ctx = {.api_key = NULL};
    va_list ap;
    char *msg = NULL;
    bool r;

    va_start(ap, fmt);
    assert_true(vasprintf(&msg, fmt, ap) >= 0);
    va_end(ap);
    r = mcp_handle(f->d, f->s, msg, strlen(msg), &f->cap.sink, &ctx);
    free(msg);
    return r;
}

static cJSON *response(struct fx *f, int id)
{
    cJSON *m = cap_wait(&f->cap, is_response_to, &id, 10000);

    assert_non_null(m);
    return m;
}

/* The answer to request id is a result (not an error). */
static void expect_result(struct fx *f, int id)
{
    cJSON *m = response(f, id);

    assert_non_null(cJSON_GetObjectItem(m, "result"));
    cJSON_Delete(m);
}

static void init_session(struct fx *f, const char *caps)
{
    assert_true(handle(f,
                       "{\"jsonrpc\":\"2.0\",\"id\":1000,\"method\":"
                       "\"initialize\",\"params\":{\"protocolVersion\":"
                       "\"2025-11-25\",\"capabilities\":%s,\"clientInfo\":{"
                       "\"name\":\"t\",\"version\":\"1\"}}}",
                       caps));
    expect_result(f, 1000);
    assert_false(handle(f, "{\"jsonrpc\":\"2.0\",\"method\":"
                           "\"notifications/initialized\"}"));
    cap_clear(&f->cap);
}

static int error_code(const cJSON *m)
{
    const cJSON *e = cJSON_GetObjectItem(m, "error");

    assert_non_null(e);
    return cJSON_GetObjectItem(e, "code")->valueint;
}

static const char *error_message(const cJSON *m)
{
    return cJSON_GetObjectItem(cJSON_GetObjectItem(m, "error"), "message")
        ->valuestring;
}

static const cJSON *result_of(const cJSON *m)
{
    const cJSON *r = cJSON_GetObjectItem(m, "result");

    assert_non_null(r);
    return r;
}

static const char *first_text(const cJSON *m)
{
    const cJSON *content = cJSON_GetObjectItem(result_of(m), "content");
    const cJSON *t =
        cJSON_GetObjectItem(cJSON_GetArrayItem(content, 0), "text");

    assert_true(cJSON_IsString(t));
    return t->valuestring;
}

static bool is_error_result(const cJSON *m)
{
    return cJSON_IsTrue(cJSON_GetObjectItem(result_of(m), "isError"));
}

/* The only message so far is an error with id null and this code. */
static void expect_null_id_error(struct fx *f, int code, const char *text)
{
    cJSON *m = cap_wait(&f->cap, is_null_id_error, NULL, 1000);

    assert_non_null(m);
    assert_int_equal(error_code(m), code);
    assert_non_null(strstr(error_message(m), text));
    cJSON_Delete(m);
    cap_clear(&f->cap);
}

/* Still serving: a ping is answered. */
static void expect_ping(struct fx *f, int id)
{
    cJSON *m = NULL;

    assert_true(handle(f,
                       "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
                       "\"ping\"}",
                       id));
    m = response(f, id);
    assert_int_equal(cJSON_GetArraySize(result_of(m)), 0);
    cJSON_Delete(m);
    cap_clear(&f->cap);
}

/* ---- tests -------------------------------------------------------------- */

static void test_bad_envelopes(void **state)
{
    struct fx *f = fx_new(0);
    char deep[30000];
    size_t i;

    assert_true(handle(f, "{not json"));
    expect_null_id_error(f, -32700, "invalid JSON");
    assert_true(handle(f, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                          "\"ping\"}]"));
    expect_null_id_error(f, -32600, "batches are not supported");
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":"
                          "\"ping\"}"));
    expect_null_id_error(f, -32600, "must not be null");
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}"));
    expect_null_id_error(f, -32600, "no \"id\"");
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":"
                          "\"ping\"}"));
    expect_null_id_error(f, -32600, "string or an integer");
    assert_true(handle(f, "{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":"
                          "\"ping\"}"));
    {
        int id = 5;
        cJSON *m = cap_wait(&f->cap, is_response_to, &id, 1000);

        /* The id was readable, so the error carries it. */
        assert_non_null(m);
        assert_int_equal(error_code(m), -32600);
        assert_non_null(strstr(error_message(m), "\"2.0\""));
        cJSON_Delete(m);
        cap_clear(&f->cap);
    }
    assert_true(handle(f, "{\"id\":6,\"method\":\"ping\"}"));
    {
        cJSON *m = response(f, 6);

        assert_int_equal(error_code(m), -32600);
        cJSON_Delete(m);
        cap_clear(&f->cap);
    }
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":42}"));
    {
        cJSON *m = response(f, 7);

        assert_int_equal(error_code(m), -32600);
        assert_non_null(strstr(error_message(m), "\"method\""));
        cJSON_Delete(m);
        cap_clear(&f->cap);
    }
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":8}"));
    {
        cJSON *m = response(f, 8);

        assert_int_equal(error_code(m), -32600);
        cJSON_Delete(m);
        cap_clear(&f->cap);
    }
    assert_true(handle(f, "\"just a string\""));
    expect_null_id_error(f, -32600, "object");
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}"
                          " trailing"));
    expect_null_id_error(f, -32700, "after the JSON value");

    /* 10,000-deep nesting is refused before cJSON recurses into it. */
    for (i = 0; i < 10000; i++)
        deep[i] = '[';
    for (i = 0; i < 10000; i++)
        deep[10000 + i] = ']';
    deep[20000] = '\0';
    assert_true(mcp_handle(f->d, f->s, deep, 20000, &f->cap.sink, NULL));
    expect_null_id_error(f, -32700, "deeper than");

    /* Invalid UTF-8 anywhere, even inside a string. */
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":"
                          "\"p\xc3\x28ing\"}"));
    expect_null_id_error(f, -32700, "UTF-8");
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":"
                          "\"\xed\xa0\x80\"}")); /* a surrogate */
    expect_null_id_error(f, -32700, "UTF-8");

    /* A bad notification gets no answer at all. */
    assert_false(handle(f, "{\"jsonrpc\":\"2.0\",\"method\":"
                           "\"notifications/x\",\"params\":[1]}"));
    assert_int_equal(f->cap.n, 0);
    expect_ping(f, 12);
    fx_free(f);
}

static void test_before_initialize(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;

    /* ping is allowed before initialize. */
    expect_ping(f, 1);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                          "\"tools/list\"}"));
    m = response(f, 2);
    assert_int_equal(error_code(m), -32600);
    assert_non_null(strstr(error_message(m), "initialize first"));
    cJSON_Delete(m);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                          "\"tools/call\",\"params\":{\"name\":\"echo\"}}"));
    m = response(f, 3);
    assert_int_equal(error_code(m), -32600);
    cJSON_Delete(m);
    assert_false(mcp_session_initialized(f->s));
    assert_null(mcp_session_protocol_version(f->s));
    fx_free(f);
}

static void check_negotiation(const char *asked, const char *expected)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    const cJSON *r = NULL;
    const cJSON *caps = NULL;

    assert_true(handle(f,
                       "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":"
                       "\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                       "\"capabilities\":{},\"clientInfo\":{\"name\":\"c\","
                       "\"version\":\"1\"}}}",
                       asked));
    assert_int_equal(f->cap.n, 1);
    m = cJSON_Parse(f->cap.msgs[0]);
    assert_string_equal(cJSON_GetObjectItem(m, "id")->valuestring, "init");
    r = result_of(m);
    assert_string_equal(cJSON_GetObjectItem(r, "protocolVersion")->valuestring,
                        expected);
    assert_string_equal(mcp_session_protocol_version(f->s), expected);
    caps = cJSON_GetObjectItem(r, "capabilities");
    /* A reload (SIGHUP) may change the tools. */
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(caps, "tools"), "listChanged")));
    assert_non_null(cJSON_GetObjectItem(caps, "logging"));
    assert_non_null(cJSON_GetObjectItem(caps, "completions"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(caps, "resources"), "subscribe")));
    assert_non_null(cJSON_GetObjectItem(caps, "prompts"));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "serverInfo"), "name")
            ->valuestring,
        "test");
    assert_string_equal(cJSON_GetObjectItem(r, "instructions")->valuestring,
                        "be nice");
    cJSON_Delete(m);
    cap_clear(&f->cap);

    /* A second initialize on the session is refused. */
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                          "\"initialize\",\"params\":{\"protocolVersion\":"
                          "\"2025-11-25\"}}"));
    m = response(f, 2);
    assert_int_equal(error_code(m), -32600);
    assert_non_null(strstr(error_message(m), "already initialized"));
    cJSON_Delete(m);
    fx_free(f);
}

static void test_initialize(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;

    check_negotiation("2025-11-25", "2025-11-25");
    check_negotiation("2025-06-18", "2025-06-18");
    check_negotiation("2025-03-26", "2025-03-26");
    check_negotiation("2024-11-05", "2025-11-25");
    check_negotiation("bogus", "2025-11-25");

    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                          "\"initialize\"}"));
    m = response(f, 1);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    assert_true(handle(f,
                       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                       "\"initialize\",\"params\":{\"protocolVersion\":7}}"));
    m = response(f, 2);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "protocolVersion"));
    cJSON_Delete(m);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                          "\"initialize\",\"params\":[]}"));
    m = response(f, 3);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    assert_true(mcp_protocol_version_supported("2025-06-18"));
    assert_false(mcp_protocol_version_supported("2024-11-05"));
    fx_free(f);
}

static void test_unknown_method_and_params(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;

    init_session(f, "{}");
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                          "\"tools/destroy\"}"));
    m = response(f, 1);
    assert_int_equal(error_code(m), -32601);
    assert_non_null(strstr(error_message(m), "tools/destroy"));
    cJSON_Delete(m);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                          "\"tools/call\",\"params\":{\"name\":3}}"));
    m = response(f, 2);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                          "\"tools/call\",\"params\":\"x\"}"));
    m = response(f, 3);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":"
                          "\"logging/setLevel\",\"params\":{\"level\":"
                          "\"loud\"}}"));
    m = response(f, 4);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "debug"));
    cJSON_Delete(m);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
                          "\"completion/complete\",\"params\":{}}"));
    m = response(f, 5);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":"
                          "\"completion/complete\",\"params\":{\"ref\":{"
                          "\"type\":\"ref/prompt\",\"name\":\"greet\"},"
                          "\"argument\":{\"name\":\"who\",\"value\":\"a\"}}}"));
    m = response(f, 6);
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(
            cJSON_GetObjectItem(result_of(m), "completion"), "values")),
        0);
    cJSON_Delete(m);
    fx_free(f);
}

static void test_tools_list_pages(void **state)
{
    struct fx *f = fx_new(4);
    char cursor[64] = "";
    char prev[64] = "";
    size_t total = 0;
    int id = 1;
    cJSON *m = NULL;

    init_session(f, "{}");
    for (;;) {
        const cJSON *r = NULL;
        const cJSON *t = NULL;
        const cJSON *next = NULL;

        if (cursor[0] == '\0')
            handle(f,
                   "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
                   "\"tools/list\"}",
                   id);
        else
            handle(f,
                   "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
                   "\"tools/list\",\"params\":{\"cursor\":\"%s\"}}",
                   id, cursor);
        m = response(f, id++);
        r = result_of(m);
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(r, "tools"))
        {
            const char *name = cJSON_GetObjectItem(t, "name")->valuestring;

            /* Sorted across pages; every tool has a schema. */
            assert_true(strcmp(prev, name) < 0);
            snprintf(prev, sizeof(prev), "%s", name);
            assert_non_null(cJSON_GetObjectItem(t, "inputSchema"));
            assert_non_null(cJSON_GetObjectItem(t, "description"));
            total++;
        }
        assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(r, "tools")) <= 4);
        next = cJSON_GetObjectItem(r, "nextCursor");
        if (next == NULL) {
            cJSON_Delete(m);
            break;
        }
        snprintf(cursor, sizeof(cursor), "%s", next->valuestring);
        cJSON_Delete(m);
    }
    assert_int_equal(total, registry_tool_count(g_reg));
    assert_true(total > 4);

    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":90,\"method\":\"tools/list\","
              "\"params\":{\"cursor\":\"garbage\"}}");
    m = response(f, 90);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "cursor"));
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":91,\"method\":\"tools/list\","
              "\"params\":{\"cursor\":\"c3\"}}"); /* not a page start */
    m = response(f, 91);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":92,\"method\":\"tools/list\","
              "\"params\":{\"cursor\":\"c4000\"}}");
    m = response(f, 92);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":93,\"method\":\"tools/list\","
              "\"params\":{\"cursor\":7}}");
    m = response(f, 93);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    fx_free(f);
}

static cJSON *call_tool(struct fx *f, int id, const char *name,
                        const char *args)
{
    if (args != NULL)
        handle(f,
               "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
               id, name, args);
    else
        handle(f,
               "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"%s\"}}",
               id, name);
    return response(f, id);
}

/* The isError text {"error":{code,message,remedy}} of a result, which
 * its structuredContent carries too (unless the tool's outputSchema cannot
 * admit it: structured false). */
static cJSON *tool_error_sc(const cJSON *m, bool structured)
{
    const cJSON *sc = NULL;
    cJSON *e = NULL;

    assert_true(is_error_result(m));
    sc = cJSON_GetObjectItem(result_of(m), "structuredContent");
    e = cJSON_Parse(first_text(m));
    assert_non_null(e);
    assert_non_null(cJSON_GetObjectItem(e, "error"));
    if (!structured) {
        assert_null(sc);
        return e;
    }
    assert_non_null(sc);
    assert_true(cJSON_Compare(cJSON_GetObjectItem(sc, "error"),
                              cJSON_GetObjectItem(e, "error"), true));
    return e;
}

static cJSON *tool_error(const cJSON *m)
{
    return tool_error_sc(m, true);
}

static const char *err_field(const cJSON *e, const char *name)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_tools_call(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    cJSON *e = NULL;

    init_session(f, "{}");
    m = call_tool(f, 1, "echo", "{\"text\":\"hi\"}");
    assert_string_equal(first_text(m), "hi");
    assert_false(is_error_result(m));
    cJSON_Delete(m);

    m = call_tool(f, 2, "nope", "{}");
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "unknown tool 'nope'"));
    assert_non_null(strstr(error_message(m), "tools/list"));
    cJSON_Delete(m);

    /* Missing arguments are {}: "args" echoes what the handler got. */
    m = call_tool(f, 3, "args", NULL);
    assert_string_equal(first_text(m), "{}");
    cJSON_Delete(m);
    m = call_tool(f, 4, "args", "null");
    assert_string_equal(first_text(m), "{}");
    cJSON_Delete(m);

    /* Arguments that are no object: a tool error (SEP-1303). */
    m = call_tool(f, 5, "echo", "\"text\"");
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "invalid_argument");
    assert_non_null(err_field(e, "remedy"));
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* Wrong-typed and missing arguments name the field. */
    m = call_tool(f, 6, "echo", "{\"text\":5}");
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "invalid_argument");
    assert_non_null(strstr(err_field(e, "message"), "arguments.text"));
    cJSON_Delete(e);
    cJSON_Delete(m);
    m = call_tool(f, 7, "echo", "{}");
    e = tool_error(m);
    assert_non_null(strstr(err_field(e, "message"), "text"));
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* The exposed alias is validated, then mapped back for the plugin. */
    m = call_tool(f, 8, "args", "{\"timeout_seconds\":3}");
    assert_string_equal(first_text(m), "{\"seconds\":3}");
    cJSON_Delete(m);
    m = call_tool(f, 9, "args", "{\"timeout_seconds\":\"3\"}");
    e = tool_error(m);
    assert_non_null(strstr(err_field(e, "message"), "timeout_seconds"));
    cJSON_Delete(e);
    cJSON_Delete(m);
    fx_free(f);
}

static void test_results(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    cJSON *e = NULL;
    const cJSON *r = NULL;
    const cJSON *content = NULL;

    init_session(f, "{}");
    /* structuredContent, mirrored as text when no content was added. */
    m = call_tool(f, 1, "structured", "{}");
    r = result_of(m);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "structuredContent"), "n")
            ->valueint,
        7);
    assert_string_equal(first_text(m), "{\"n\":7}");
    assert_false(is_error_result(m));
    cJSON_Delete(m);

    /* An output schema without a structured result: internal error. */
    m = call_tool(f, 2, "structured", "{\"mode\":1}");
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "internal");
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* A business error drops the structuredContent set before it (the
     * error object replaces it) and keeps code/remedy. */
    m = call_tool(f, 3, "bizerr", "{}");
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "not_found");
    assert_string_equal(err_field(e, "message"), "devbox dbx_1 does not exist");
    /* list_devboxes is a tool this host does not expose: not named. */
    assert_string_equal(err_field(e, "remedy"), "Check the id.");
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(result_of(m), "content")), 1);
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* What a tool sets after its error joins the error's structured
     * content, also under an outputSchema it does not match (the listed
     * schema admits errors); the text blocks stay as the tool made them. */
    m = call_tool(f, 31, "bizerr_partial", "{}");
    e = tool_error(m);
    r = cJSON_GetObjectItem(result_of(m), "structuredContent");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "stdout")
            ->valuestring,
        "so far");
    assert_string_equal(err_field(e, "code"), "timeout");
    assert_int_equal(cJSON_GetArraySize(r), 2);
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(result_of(m), "content")), 2);
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* The extras do not fit a closed schema: the error alone; the text
     * blocks keep the rest. */
    m = call_tool(f, 33, "bizerr_closed", "{}");
    e = tool_error(m);
    r = cJSON_GetObjectItem(result_of(m), "structuredContent");
    assert_int_equal(cJSON_GetArraySize(r), 1);
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(result_of(m), "content")), 2);
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* An outputSchema that refuses every error object: text only, so a
     * client validating error results does not reject the answer. */
    m = call_tool(f, 32, "bizerr_strict", "{}");
    e = tool_error_sc(m, false);
    assert_string_equal(err_field(e, "code"), "not_found");
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* A negative return: generic internal error, no plugin text leaks. */
    m = call_tool(f, 4, "fail", "{}");
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "internal");
    assert_null(strstr(f->cap.msgs[0], "must not leak"));
    cJSON_Delete(e);
    cJSON_Delete(m);

    /* Content blocks pass through; invalid UTF-8 is repaired. */
    m = call_tool(f, 5, "content", "{}");
    content = cJSON_GetObjectItem(result_of(m), "content");
    assert_int_equal(cJSON_GetArraySize(content), 2);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(content, 0), "type")
            ->valuestring,
        "image");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(content, 1), "text")
            ->valuestring,
        "bad \xef\xbf\xbd byte");
    cJSON_Delete(m);
    fx_free(f);
}

static void test_cancel(void **state)
{
    struct fx *f = fx_new(0);
    int id = 1;
    cJSON *m = NULL;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":20000}}}");
    assert_int_equal(mcp_inflight(f->d), 1);
    /* ping is answered while the call runs. */
    expect_ping(f, 2);
    assert_false(handle(f, "{\"jsonrpc\":\"2.0\",\"method\":"
                           "\"notifications/cancelled\",\"params\":{"
                           "\"requestId\":1,\"reason\":\"user\"}}"));
    /* No response; the sink got its final NULL, and the call ends fast. */
    pthread_mutex_lock(&f->cap.lock);
    assert_int_equal(f->cap.null_finals, 1);
    pthread_mutex_unlock(&f->cap.lock);
    {
        int waited = 0;

        while (mcp_inflight(f->d) > 0 && waited < 5000) {
            usleep(10000);
            waited += 10;
        }
    }
    assert_int_equal(mcp_inflight(f->d), 0);
    /* A call answers before it leaves the in-flight count: none came. */
    m = cap_wait(&f->cap, is_response_to, &id, 0);
    assert_null(m);

    /* Cancel for an unknown id: ignored, nothing sent. */
    assert_false(handle(f, "{\"jsonrpc\":\"2.0\",\"method\":"
                           "\"notifications/cancelled\",\"params\":{"
                           "\"requestId\":\"nobody\"}}"));
    assert_false(handle(f, "{\"jsonrpc\":\"2.0\",\"method\":"
                           "\"notifications/cancelled\"}"));
    assert_int_equal(f->cap.n, 0);
    expect_ping(f, 3);
    fx_free(f);
}

static void test_timeout(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    cJSON *e = NULL;

    init_session(f, "{}");
    sim_auto(true);
    m = call_tool(f, 1, "never", "{}");
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "timeout");
    assert_non_null(strstr(err_field(e, "message"), "200 ms"));
    assert_non_null(strstr(err_field(e, "message"), "never"));
    cJSON_Delete(e);
    cJSON_Delete(m);
    fx_free(f);
}

/*
 * Once a request is answered its id may be used again, even while its
 * timed-out handler is still cleaning up.
 */
static void test_id_reuse_after_answer(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    cJSON *e = NULL;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"slow_stop\"}}");
    /* The handler sleeps, the timer waits for its timeout: up to it. */
    assert_true(sim_await_waiters(2, 1000));
    sim_step();
    m = response(f, 1);
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "timeout");
    cJSON_Delete(e);
    cJSON_Delete(m);
    cap_clear(&f->cap);
    assert_int_equal(mcp_inflight(f->d), 1); /* still cleaning up */
    m = call_tool(f, 1, "echo", "{\"text\":\"again\"}");
    assert_non_null(m);
    assert_null(cJSON_GetObjectItem(m, "error"));
    assert_non_null(cJSON_GetObjectItem(m, "result"));
    cJSON_Delete(m);
    fx_free(f);
}

static bool is_progress(const cJSON *m, const void *arg)
{
    return has_method(m, "notifications/progress");
}

static void test_progress(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    double last = 0;
    size_t i;
    size_t n_progress = 0;
    size_t result_at = 0;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"progress\",\"arguments\":{\"steps\":4},"
              "\"_meta\":{\"progressToken\":\"tok-1\"}}}");
    sim_auto(true);
    m = response(f, 1);
    assert_string_equal(first_text(m), "done");
    cJSON_Delete(m);
    for (i = 0; i < f->cap.n; i++) {
        cJSON *msg = cJSON_Parse(f->cap.msgs[i]);

        if (is_progress(msg, NULL)) {
            const cJSON *p = cJSON_GetObjectItem(msg, "params");
            double v = cJSON_GetObjectItem(p, "progress")->valuedouble;

            assert_string_equal(
                cJSON_GetObjectItem(p, "progressToken")->valuestring, "tok-1");
            assert_int_equal(cJSON_GetObjectItem(p, "total")->valueint, 4);
            assert_true(v > last);
            last = v;
            n_progress++;
            assert_int_equal(result_at, 0); /* never after the result */
        } else {
            result_at = i + 1;
        }
        cJSON_Delete(msg);
    }
    assert_int_equal(n_progress, 4);
    assert_true(last == 4);
    assert_int_equal(atomic_load(&g_backwards_refused), 4);
    cap_clear(&f->cap);

    /* No progressToken: no progress notifications. */
    m = call_tool(f, 2, "progress", "{\"steps\":2}");
    cJSON_Delete(m);
    assert_int_equal(cap_count(&f->cap, "notifications/progress"), 0);
    cap_clear(&f->cap);

    /* A burst of 1000 is coalesced, and the last value still arrives. */
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"burst\",\"_meta\":{\"progressToken\":"
              "77}}}");
    m = response(f, 3);
    cJSON_Delete(m);
    n_progress = cap_count(&f->cap, "notifications/progress");
    assert_true(n_progress >= 1 && n_progress < 100);
    m = cJSON_Parse(f->cap.msgs[f->cap.n - 2]);
    assert_true(is_progress(m, NULL));
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(m, "params"), "progress")
            ->valueint,
        1000);
    cJSON_Delete(m);
    fx_free(f);
}

/* Progress messages with invalid UTF-8 are repaired, never sent raw. */
static void test_progress_utf8(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    size_t i;
    size_t n_progress = 0;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"progress_cut\",\"_meta\":{"
              "\"progressToken\":\"t\"}}}");
    m = response(f, 1);
    assert_string_equal(first_text(m), "cut done");
    cJSON_Delete(m);
    assert_int_equal(f->cap.invalid, 0);
    for (i = 0; i < f->cap.n; i++) {
        cJSON *msg = cJSON_Parse(f->cap.msgs[i]);
        const cJSON *text = NULL;

        if (is_progress(msg, NULL)) {
            text = cJSON_GetObjectItem(cJSON_GetObjectItem(msg, "params"),
                                       "message");
            assert_true(cJSON_IsString(text));
            assert_true(strncmp(text->valuestring, "half ", 5) == 0 ||
                        strncmp(text->valuestring, "bad ", 4) == 0);
            n_progress++;
        }
        cJSON_Delete(msg);
    }
    assert_int_equal(n_progress, 2);
    fx_free(f);
}

/* Coalesced progress joins its messages, and the timer sends a held-back
 * one when its interval ends: "a" at once, "bc" while the handler is
 * quiet, then "d" (not "a", "d": chunks lost; not "a", "bcd": late). */
static void test_progress_join(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    char got[64] = "";
    size_t i;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"progress_join\",\"_meta\":{"
              "\"progressToken\":\"t\"}}}");
    /* The handler is quiet, the timer waits for the held-back update's
     * interval (shorter): to its end, then until "bc" went out. */
    assert_true(sim_await_waiters(2, 300));
    sim_step();
    assert_true(cap_wait_count(&f->cap, "notifications/progress", 2));
    sim_auto(true);
    m = response(f, 1);
    assert_string_equal(first_text(m), "joined");
    cJSON_Delete(m);
    for (i = 0; i < f->cap.n; i++) {
        cJSON *msg = cJSON_Parse(f->cap.msgs[i]);
        const cJSON *text = NULL;

        if (is_progress(msg, NULL)) {
            text = cJSON_GetObjectItem(cJSON_GetObjectItem(msg, "params"),
                                       "message");
            assert_true(cJSON_IsString(text));
            strncat(got, text->valuestring, sizeof(got) - strlen(got) - 2);
            strcat(got, "|");
        }
        cJSON_Delete(msg);
    }
    assert_string_equal(got, "a|bc|d|");
    fx_free(f);
}

static void test_concurrent_calls(void **state)
{
    struct fx *f = fx_new(0);
    static const int ms[] = {600, 400, 200, 50};
    int order[4];
    size_t n = 0;
    size_t i;

    init_session(f, "{}");
    for (i = 0; i < 4; i++)
        handle(f,
               "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":%d}}}",
               i + 1, ms[i]);
    /* ping while all four run. */
    assert_true(sim_await_waiters(4, 600));
    expect_ping(f, 99);
    /* Time moves to each sleep's end in turn; each answer is waited for
     * before the next, so the order is the sleeps'. */
    for (i = 0; i < 4; i++) {
        int id = 4 - (int)i;
        cJSON *m = NULL;

        sim_step();
        m = cap_wait(&f->cap, is_response_to, &id, 10000);
        assert_non_null(m);
        cJSON_Delete(m);
    }
    /* Out of order: the shortest first. */
    for (i = 0; i < f->cap.n && n < 4; i++) {
        cJSON *m = cJSON_Parse(f->cap.msgs[i]);

        order[n++] = cJSON_GetObjectItem(m, "id")->valueint;
        cJSON_Delete(m);
    }
    assert_int_equal(order[0], 4);
    assert_int_equal(order[3], 1);
    cap_clear(&f->cap);

    /* A request id in use is refused; the first call is unaffected. */
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":300}}}");
    assert_true(sim_await_waiters(1, 300));
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}}}");
    {
        cJSON *m = response(f, 7);

        assert_int_equal(error_code(m), -32600);
        assert_non_null(strstr(error_message(m), "already used"));
        cJSON_Delete(m);
        cap_clear(&f->cap);
        sim_step();
        m = response(f, 7);
        assert_string_equal(first_text(m), "slept 300");
        cJSON_Delete(m);
    }
    fx_free(f);
}

/* Four calls of tool; waiting is how many sleep at once before time
 * moves (the pool has four workers). */
static void run_overlapping(struct fx *f, const char *tool, unsigned waiting)
{
    int i;

    sim_auto(false);
    for (i = 1; i <= 4; i++)
        handle(f,
               "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"%s\"}}",
               i, tool);
    assert_true(sim_await_waiters(waiting, 100));
    sim_auto(true);
    for (i = 1; i <= 4; i++)
        cJSON_Delete(response(f, i));
    cap_clear(&f->cap);
}

static void test_serial(void **state)
{
    struct fx *f = fx_new(0);

    init_session(f, "{}");
    /* Four calls of a SERIAL tool never overlap ... */
    run_overlapping(f, "serial_overlap", 1);
    assert_int_equal(atomic_load(&g_serial_overlap.max_running), 1);
    /* ... while the same handler without the flag does. */
    run_overlapping(f, "parallel_overlap", 4);
    assert_true(atomic_load(&g_parallel_overlap.max_running) > 1);
    fx_free(f);
}

static bool is_sampling(const cJSON *m, const void *arg)
{
    return has_method(m, "sampling/createMessage");
}

static void test_client_request(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    cJSON *req = NULL;
    char *id = NULL;

    /* Without the sampling capability the tool gets ENOTSUP at once. */
    init_session(f, "{}");
    m = call_tool(f, 1, "ask", "{}");
    assert_non_null(strstr(first_text(m), "rc=-9"));
    cJSON_Delete(m);
    fx_free(f);

    f = fx_new(0);
    init_session(f, "{\"sampling\":{}}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"ask\"}}");
    req = cap_wait(&f->cap, is_sampling, NULL, 5000);
    assert_non_null(req);
    id = cJSON_PrintUnformatted(cJSON_GetObjectItem(req, "id"));
    /* An answer to an unknown id is ignored; the right one is taken. */
    assert_false(
        handle(f, "{\"jsonrpc\":\"2.0\",\"id\":\"zzz\",\"result\":{}}"));
    assert_false(handle(f,
                        "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{"
                        "\"role\":\"assistant\",\"content\":{\"type\":"
                        "\"text\",\"text\":\"42\"}}}",
                        id));
    m = response(f, 2);
    assert_non_null(strstr(first_text(m), "rc=0"));
    assert_non_null(strstr(first_text(m), "\"42\""));
    cJSON_Delete(m);
    cJSON_Delete(req);
    free(id);
    cap_clear(&f->cap);

    /* An error answer comes back as RLMCP_EINVAL with the error object. */
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"ask\"}}");
    req = cap_wait(&f->cap, is_sampling, NULL, 5000);
    assert_non_null(req);
    id = cJSON_PrintUnformatted(cJSON_GetObjectItem(req, "id"));
    handle(f,
           "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-1,"
           "\"message\":\"user said no\"}}",
           id);
    m = response(f, 3);
    assert_non_null(strstr(first_text(m), "rc=-1"));
    assert_non_null(strstr(first_text(m), "user said no"));
    cJSON_Delete(m);
    cJSON_Delete(req);
    free(id);
    cap_clear(&f->cap);

    /* Cancelling the call wakes the waiting request. */
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"ask\"}}");
    req = cap_wait(&f->cap, is_sampling, NULL, 5000);
    assert_non_null(req);
    handle(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
              "\"params\":{\"requestId\":4}}");
    cJSON_Delete(req);
    fx_free(f);
}

static bool is_log(const cJSON *m, const void *arg)
{
    return has_method(m, "notifications/message");
}

static void test_logging(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    size_t i;
    int n_info = 0;
    int n_error = 0;
    int n_debug = 0;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\","
              "\"params\":{\"level\":\"warning\"}}");
    m = response(f, 1);
    assert_int_equal(cJSON_GetArraySize(result_of(m)), 0);
    cJSON_Delete(m);
    cJSON_Delete(call_tool(f, 2, "log", "{}"));
    for (i = 0; i < f->cap.n; i++) {
        cJSON *msg = cJSON_Parse(f->cap.msgs[i]);

        if (is_log(msg, NULL)) {
            const cJSON *p = cJSON_GetObjectItem(msg, "params");
            const char *level = cJSON_GetObjectItem(p, "level")->valuestring;

            n_error += strcmp(level, "error") == 0;
            n_info += strcmp(level, "info") == 0;
            assert_string_equal(cJSON_GetObjectItem(p, "data")->valuestring,
                                "error line 42");
            assert_string_equal(cJSON_GetObjectItem(p, "logger")->valuestring,
                                "testplug");
        }
        cJSON_Delete(msg);
    }
    assert_int_equal(n_error, 1);
    assert_int_equal(n_info, 0);
    cap_clear(&f->cap);

    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\","
              "\"params\":{\"level\":\"debug\"}}");
    cJSON_Delete(response(f, 3));
    cJSON_Delete(call_tool(f, 4, "log", "{}"));
    for (i = 0; i < f->cap.n; i++) {
        cJSON *msg = cJSON_Parse(f->cap.msgs[i]);

        if (is_log(msg, NULL))
            n_debug++;
        cJSON_Delete(msg);
    }
    assert_int_equal(n_debug, 3);
    fx_free(f);
}

static void test_resources(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    const cJSON *c = NULL;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}");
    m = response(f, 1);
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(result_of(m), "resources")), 2);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
              "\"resources/templates/list\"}");
    m = response(f, 2);
    c = cJSON_GetArrayItem(
        cJSON_GetObjectItem(result_of(m), "resourceTemplates"), 0);
    assert_string_equal(cJSON_GetObjectItem(c, "uriTemplate")->valuestring,
                        "test://item/{id}/data");
    cJSON_Delete(m);

    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\","
              "\"params\":{\"uri\":\"test://item/123/data\"}}");
    m = response(f, 3);
    c = cJSON_GetArrayItem(cJSON_GetObjectItem(result_of(m), "contents"), 0);
    assert_string_equal(cJSON_GetObjectItem(c, "text")->valuestring,
                        "test://item/123/data");
    assert_string_equal(cJSON_GetObjectItem(c, "uri")->valuestring,
                        "test://item/123/data");
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/read\","
              "\"params\":{\"uri\":\"test://binary\"}}");
    m = response(f, 4);
    c = cJSON_GetArrayItem(cJSON_GetObjectItem(result_of(m), "contents"), 0);
    assert_string_equal(cJSON_GetObjectItem(c, "blob")->valuestring,
                        "AAEC+g==");
    cJSON_Delete(m);

    /* Unknown URIs: -32002 from the lookup and from the handler. */
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\","
              "\"params\":{\"uri\":\"test://nothing\"}}");
    m = response(f, 5);
    assert_int_equal(error_code(m), -32002);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/read\","
              "\"params\":{\"uri\":\"test://item/missing/data\"}}");
    m = response(f, 6);
    assert_int_equal(error_code(m), -32002);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/read\","
              "\"params\":{\"uri\":\"test://item/a/b/data\"}}");
    m = response(f, 7);
    assert_int_equal(error_code(m), -32002); /* {id} does not span '/' */
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/read\"}");
    m = response(f, 8);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);

    handle(f,
           "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
           "\"resources/subscribe\",\"params\":{\"uri\":\"test://static\"}}");
    expect_result(f, 9);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":"
              "\"resources/subscribe\",\"params\":{\"uri\":\"x://y\"}}");
    m = response(f, 10);
    assert_int_equal(error_code(m), -32002);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":"
              "\"resources/unsubscribe\",\"params\":{\"uri\":"
              "\"test://static\"}}");
    expect_result(f, 11);
    fx_free(f);
}

static bool is_updated(const cJSON *m, const void *arg)
{
    const cJSON *p = cJSON_GetObjectItem(m, "params");
    const cJSON *uri = cJSON_GetObjectItem(p, "uri");

    return has_method(m, "notifications/resources/updated") &&
           cJSON_IsString(uri) && strcmp(uri->valuestring, arg) == 0;
}

/* Subscribable resources are re-read; a change is announced; errors and
 * _meta from the handler reach the client. */
static void test_subscriptions(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    const cJSON *e = NULL;

    mcp_session_set_notify(f->s, &f->cap.sink);
    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\","
              "\"params\":{\"uri\":\"test://count/a/b\"}}");
    m = response(f, 2);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(result_of(m), "_meta"), "k")
            ->valueint,
        1);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\","
              "\"params\":{\"uri\":\"test://count/1/err\"}}");
    m = response(f, 3);
    assert_int_equal(error_code(m), -32602);
    e = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "error"), "data");
    assert_string_equal(cJSON_GetObjectItem(e, "code")->valuestring,
                        "too_large");
    assert_string_equal(cJSON_GetObjectItem(e, "remedy")->valuestring,
                        "read less");
    assert_string_equal(cJSON_GetObjectItem(e, "uri")->valuestring,
                        "test://count/1/err");
    cJSON_Delete(m);

    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":"
              "\"resources/subscribe\",\"params\":{\"uri\":"
              "\"test://count/7/x\"}}");
    expect_result(f, 4);
    sim_auto(true); /* the watch reads again after its interval */
    m = cap_wait(&f->cap, is_updated, "test://count/7/x", 20000);
    assert_non_null(m);
    cJSON_Delete(m);
    /* Nothing for a URI nobody subscribed to. */
    assert_null(cap_wait(&f->cap, is_updated, "test://count/8/x", 0));
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
              "\"resources/unsubscribe\",\"params\":{\"uri\":"
              "\"test://count/7/x\"}}");
    expect_result(f, 5);
    /* Still watched at the end: the destroy path stops and frees it. */
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":"
              "\"resources/subscribe\",\"params\":{\"uri\":"
              "\"test://count/9/x\"}}");
    m = response(f, 6);
    cJSON_Delete(m);
    fx_free(f);
}

/* A tools/list answer names tool: whether it does. */
static bool lists_tool(const cJSON *m, const char *tool)
{
    const cJSON *t = NULL;

    cJSON_ArrayForEach(t, cJSON_GetObjectItem(result_of(m), "tools"))
    {
        if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring, tool) == 0)
            return true;
    }
    return false;
}

/*
 * A reload: the new deployment serves the requests that come after it,
 * a call started before finishes on the old one, and the session hears
 * notifications/tools/list_changed.
 */
static void test_replace_deployment(void **state)
{
    struct fx *f = fx_new(0);
    struct registry *reg = registry_new();
    struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
    struct deployment *dep = NULL;
    struct deployment *old = NULL;
    char err[256] = "";
    cJSON *m = NULL;

    def.name = "only_new";
    def.description = "test tool";
    def.input_schema_json = OBJ;
    def.handler = h_echo;
    assert_int_equal(
        registry_add_tool(reg, NULL, "testplug", &def, err, sizeof(err)), 0);
    assert_int_equal(
        registry_select(reg, NULL, "new.yaml", false, 1000, err, sizeof(err)),
        0);
    dep = deployment_new(reg, NULL, 0);
    assert_non_null(dep);
    mcp_session_set_notify(f->s, &f->cap.sink);
    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":300}}}");
    assert_int_equal(mcp_replace_deployment(f->d, dep, &old), 0);
    deployment_unref(dep); /* the dispatcher holds it now */
    assert_non_null(old);
    assert_int_equal(mcp_notify_tools_changed(f->d), 1);
    m = cap_wait(&f->cap, has_method, "notifications/tools/list_changed",
                 10000);
    assert_non_null(m);
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
    m = response(f, 3);
    assert_true(lists_tool(m, "only_new"));
    assert_false(lists_tool(m, "sleep"));
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"sleep\",\"arguments\":{}}}");
    assert_int_equal(error_code(m = response(f, 4)), -32602);
    cJSON_Delete(m);
    /* The call from before the reload finishes on the old deployment. */
    sim_auto(true);
    m = response(f, 2);
    assert_string_equal(
        cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(result_of(m), "content"), 0),
            "text")
            ->valuestring,
        "slept 300");
    cJSON_Delete(m);
    deployment_unref(old);
    fx_free(f);
    registry_free(reg);
}

struct swapper {
    struct mcp_dispatcher *d;
    struct registry *regs[2];
    atomic_bool stop;
    int swaps;
};

/* Replace the deployment over and over, alternating two registries. */
static void *swap_main(void *arg)
{
    struct swapper *w = arg;
    struct deployment *old = NULL;

    while (!atomic_load(&w->stop) || w->swaps < 20) {
        struct deployment *dep = deployment_new(w->regs[w->swaps % 2], NULL, 0);

        assert_non_null(dep);
        assert_int_equal(mcp_replace_deployment(w->d, dep, &old), 0);
        deployment_unref(dep);
        deployment_unref(old); /* calls on it keep it alive */
        /* Now and then: the capture holds MAX_MSGS messages. */
        if (w->swaps % 1000 == 0)
            mcp_notify_tools_changed(w->d);
        w->swaps++;
    }
    return NULL;
}

/* Deployments replaced while calls come in: each call answered, once. */
static void test_replace_under_load(void **state)
{
    struct fx *f = fx_new(0);
    struct swapper w;
    struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
    pthread_t t;
    char err[256] = "";
    char text[32];
    cJSON *m = NULL;
    int i = 0;

    memset(&w, 0, sizeof(w));
    w.d = f->d;
    w.regs[0] = g_reg;
    w.regs[1] = registry_new();
    def.description = "test tool";
    def.input_schema_json = OBJ;
    def.name = "echo";
    def.handler = h_echo;
    assert_int_equal(
        registry_add_tool(w.regs[1], NULL, "testplug", &def, err, sizeof(err)),
        0);
    def.name = "sleep";
    def.handler = h_sleep;
    assert_int_equal(
        registry_add_tool(w.regs[1], NULL, "testplug", &def, err, sizeof(err)),
        0);
    assert_int_equal(registry_select(w.regs[1], NULL, "new.yaml", false, 5000,
                                     err, sizeof(err)),
                     0);
    mcp_session_set_notify(f->s, &f->cap.sink);
    init_session(f, "{}");
    sim_auto(true); /* the sleeps of 2 ms end */
    atomic_init(&w.stop, false);
    assert_int_equal(pthread_create(&t, NULL, swap_main, &w), 0);
    for (i = 2; i < 202; i++) {
        if (i % 2 == 0)
            handle(f,
                   "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":"
                   "\"n%d\"}}}",
                   i, i);
        else
            handle(f,
                   "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":2}}}",
                   i);
    }
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    for (i = 2; i < 202; i++) {
        m = response(f, i);
        assert_null(cJSON_GetObjectItem(m, "error"));
        snprintf(text, sizeof(text), i % 2 == 0 ? "n%d" : "slept 2", i);
        assert_string_equal(
            cJSON_GetObjectItem(
                cJSON_GetArrayItem(cJSON_GetObjectItem(result_of(m), "content"),
                                   0),
                "text")
                ->valuestring,
            text);
        cJSON_Delete(m);
    }
    /* Exactly one answer per call (init_session cleared the capture). */
    assert_int_equal(cap_size(&f->cap) -
                         cap_count(&f->cap, "notifications/tools/list_changed"),
                     200);
    fx_free(f);
    registry_free(w.regs[1]);
}

static void test_prompts(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    const cJSON *msg = NULL;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/list\"}");
    m = response(f, 1);
    msg = cJSON_GetArrayItem(cJSON_GetObjectItem(result_of(m), "prompts"), 0);
    assert_string_equal(cJSON_GetObjectItem(msg, "name")->valuestring, "greet");
    assert_non_null(cJSON_GetObjectItem(msg, "arguments"));
    cJSON_Delete(m);
    handle(f,
           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/get\","
           "\"params\":{\"name\":\"greet\",\"arguments\":{\"who\":\"ann\"}}}");
    m = response(f, 2);
    msg = cJSON_GetArrayItem(cJSON_GetObjectItem(result_of(m), "messages"), 0);
    assert_string_equal(cJSON_GetObjectItem(msg, "role")->valuestring, "user");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(msg, "content"), "text")
            ->valuestring,
        "hello ann");
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/get\","
              "\"params\":{\"name\":\"greet\"}}");
    m = response(f, 3);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "'who'"));
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"prompts/get\","
              "\"params\":{\"name\":\"nope\"}}");
    m = response(f, 4);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "prompts/list"));
    cJSON_Delete(m);
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"prompts/get\","
              "\"params\":{\"name\":\"greet\",\"arguments\":{\"who\":1}}}");
    m = response(f, 5);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    fx_free(f);
}

static void test_drain(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    cJSON *e = NULL;

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":30000}}}");
    mcp_drain(f->d, 5000);
    assert_int_equal(mcp_inflight(f->d), 0);
    m = response(f, 1);
    e = tool_error(m);
    assert_string_equal(err_field(e, "code"), "unavailable");
    cJSON_Delete(e);
    cJSON_Delete(m);
    cap_clear(&f->cap);
    /* New calls are refused once draining; ping still works. */
    m = call_tool(f, 2, "echo", "{\"text\":\"x\"}");
    assert_int_equal(error_code(m), -32603);
    cJSON_Delete(m);
    cap_clear(&f->cap);
    expect_ping(f, 3);
    fx_free(f);
}

/*
 * A session may not queue requests without bound: past the limit a call is
 * refused at once with a busy error, and the session keeps serving.
 */
static void test_session_call_limit(void **state)
{
    struct fx *f = fx_new(0);
    cJSON *m = NULL;
    unsigned i;

    init_session(f, "{}");
    for (i = 0; i < MCP_MAX_SESSION_CALLS; i++)
        handle(f,
               "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":"
               "30000}}}",
               100 + i);
    m = call_tool(f, 1, "echo", "{\"text\":\"x\"}");
    assert_int_equal(error_code(m), -32000);
    assert_non_null(strstr(error_message(m), "too many requests in progress"));
    cJSON_Delete(m);
    cap_clear(&f->cap);
    expect_ping(f, 2);
    mcp_drain(f->d, 10000);
    assert_int_equal(mcp_inflight(f->d), 0);
    fx_free(f);
}

static void test_session_free_cancels(void **state)
{
    struct fx *f = fx_new(0);

    init_session(f, "{}");
    handle(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
              "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":30000}}}");
    mcp_session_free(f->s);
    f->s = mcp_session_new(f->d);
    {
        int waited = 0;

        while (mcp_inflight(f->d) > 0 && waited < 5000) {
            usleep(10000);
            waited += 10;
        }
    }
    assert_int_equal(mcp_inflight(f->d), 0);
    assert_int_equal(f->cap.null_finals, 1);
    fx_free(f);
}

/*
 * Mutated valid messages (fixed seed): nothing crashes, every message sent
 * back is valid JSON-RPC, and the server still answers afterwards.
 */
static void test_mutations(void **state)
{
    static const char *const seeds[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
        "\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"},\"_meta\":{"
        "\"progressToken\":5}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/"
        "list\",\"params\":{"
        "\"cursor\":\"c4\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/"
        "read\",\"params\":{"
        "\"uri\":\"test://item/1/data\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/get\",\"params\":{"
        "\"name\":\"greet\",\"arguments\":{\"who\":\"a\"}}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
        "cancelled\",\"params\":{"
        "\"requestId\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"rlmcp-1\",\"result\":{\"a\":[1,2]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"logging/"
        "setLevel\",\"params\":{"
        "\"level\":\"debug\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"completion/"
        "complete\",\"params\":{"
        "\"ref\":{\"type\":\"ref/prompt\",\"name\":\"greet\"},\"argument\":{"
        "\"name\":\"who\",\"value\":\"\"}}}",
    };
    static const char junk[] = "{}[]\",:\\0-e.\xff\xc3\x80 ";
    struct fx *f = fx_new(0);
    unsigned seed = 12345;
    char buf[512];
    size_t i;
    int n;

    init_session(f, "{\"sampling\":{}}");
    for (n = 0; n < 5000; n++) {
        const char *base =
            seeds[rand_r(&seed) % (sizeof(seeds) / sizeof(*seeds))];
        size_t len = strlen(base);
        int edits = 1 + rand_r(&seed) % 4;

        memcpy(buf, base, len);
        while (edits-- > 0 && len > 1) {
            size_t at = (size_t)rand_r(&seed) % len;

            switch (rand_r(&seed) % 3) {
            case 0: /* replace */
                buf[at] = junk[rand_r(&seed) % (sizeof(junk) - 1)];
                break;
            case 1: /* delete */
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            default: /* insert */
                if (len + 1 < sizeof(buf)) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = junk[rand_r(&seed) % (sizeof(junk) - 1)];
                    len++;
                }
            }
        }
        mcp_handle(f->d, f->s, buf, len, &f->cap.sink, NULL);
        if (cap_size(&f->cap) > MAX_MSGS / 2)
            cap_clear(&f->cap); /* cap_send checked each one already */
    }
    {
        int waited = 0;

        while (mcp_inflight(f->d) > 0 && waited < 10000) {
            usleep(10000);
            waited += 10;
        }
    }
    pthread_mutex_lock(&f->cap.lock);
    for (i = 0; i < f->cap.n; i++) {
        cJSON *m = cJSON_Parse(f->cap.msgs[i]);

        assert_non_null(m);
        assert_string_equal(cJSON_GetObjectItem(m, "jsonrpc")->valuestring,
                            "2.0");
        cJSON_Delete(m);
    }
    pthread_mutex_unlock(&f->cap.lock);
    cap_clear(&f->cap);
    expect_ping(f, 424242);
    fx_free(f);
}

/* ---- stdio framing ------------------------------------------------------ */

struct stdio_run {
    struct mcp_dispatcher *d;
    int in_fd;
    int out_fd;
    int rc;
};

static void *stdio_thread(void *arg)
{
    struct stdio_run *r = arg;

    r->rc = stdio_serve_fds(r->d, r->in_fd, r->out_fd);
    close(r->out_fd);
    return NULL;
}

static void write_str(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, s, len);

        assert_true(w > 0);
        s += w;
        len -= (size_t)w;
    }
}

static void test_stdio_framing(void **state)
{
    struct mcp_options o;
    struct stdio_run run;
    pthread_t th;
    int in_pipe[2];
    int out_pipe[2];
    char *big = NULL;
    char out[65536];
    size_t got = 0;
    ssize_t n;
    const size_t big_len = 5000;

    memset(&o, 0, sizeof(o));
    o.max_message_bytes = 1024;
    run.d = mcp_create(&o, g_reg);
    assert_non_null(run.d);
    assert_int_equal(pipe(in_pipe), 0);
    assert_int_equal(pipe(out_pipe), 0);
    run.in_fd = in_pipe[0];
    run.out_fd = out_pipe[1];
    assert_int_equal(pthread_create(&th, NULL, stdio_thread, &run), 0);

    write_str(in_pipe[1],
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
              "\"ping\"}\r\n\n   \n",
              47);
    /* An oversized line, split across writes, then a normal request. */
    big = malloc(big_len);
    memset(big, 'x', big_len);
    write_str(in_pipe[1], big, big_len);
    write_str(in_pipe[1], big, big_len);
    write_str(in_pipe[1], "\n", 1);
    free(big);
    /* A last message without a newline before EOF still counts. */
    write_str(in_pipe[1], "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
              40);
    close(in_pipe[1]);
    while ((n = read(out_pipe[0], out + got, sizeof(out) - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    pthread_join(th, NULL);
    close(in_pipe[0]);
    close(out_pipe[0]);
    assert_int_equal(run.rc, 0);
    assert_string_equal(
        out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
             "\"message\":\"message exceeds the 1024-byte limit and was "
             "discarded; send smaller messages (for big data use files in the "
             "devbox)\"}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n");
    mcp_destroy(run.d);
}

/* ---- subscriptions/listen (2026-07-28) ---------------------------------- */

#define LISTEN_META                                                            \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","   \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"t\",\"version\":"      \
    "\"1\"},\"io.modelcontextprotocol/clientCapabilities\":{}}"

static void listen_req(struct fx *f, struct mcp_session *s, struct capture *c,
                       int id, const char *notifications)
{
    struct mcp_request_ctx ctx = {.api_key = NULL, .revision = "2026-07-28"};
    char *msg = NULL;

    assert_true(asprintf(&msg,
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
                         "\"subscriptions/listen\",\"params\":{%s%s%s}}",
                         id, notifications ? "\"notifications\":" : "",
                         notifications ? notifications : "",
                         notifications ? "," LISTEN_META : LISTEN_META) >= 0);
    assert_true(mcp_handle(f->d, s, msg, strlen(msg), &c->sink, &ctx));
    free(msg);
}

static int sub_id(const cJSON *m)
{
    const cJSON *meta = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(m, "params") != NULL
                                ? cJSON_GetObjectItem(m, "params")
                                : cJSON_GetObjectItem(m, "result"),
                            "_meta"),
        "io.modelcontextprotocol/subscriptionId");

    assert_true(cJSON_IsNumber(meta));
    return meta->valueint;
}

static void test_listen(void **state)
{
    struct fx *f = fx_new(0);
    struct mcp_session *sa = mcp_session_new(f->d);
    struct mcp_session *sb = mcp_session_new(f->d);
    struct mcp_session *sc = mcp_session_new(f->d);
    struct capture a, b, c;
    cJSON *m = NULL;
    int id = 0;

    (void)state;
    cap_init(&a);
    cap_init(&b);
    cap_init(&c);
    listen_req(f, sa, &a, 1, "{\"toolsListChanged\":true}");
    listen_req(f, sb, &b, 2, "{\"promptsListChanged\":true}");
    m = cap_wait(&a, has_method, "notifications/subscriptions/acknowledged",
                 10000);
    assert_non_null(m);
    assert_int_equal(sub_id(m), 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(m, "params"), "notifications"),
        "toolsListChanged")));
    cJSON_Delete(m);
    m = cap_wait(&b, has_method, "notifications/subscriptions/acknowledged",
                 10000);
    assert_non_null(m);
    /* A reload may change the prompts: honoured, echoed. */
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(m, "params"), "notifications"),
        "promptsListChanged")));
    cJSON_Delete(m);

    /* A reload's notification: tagged, and only where it was asked for. */
    mcp_notify_tools_changed(f->d);
    m = cap_wait(&a, has_method, "notifications/tools/list_changed", 10000);
    assert_non_null(m);
    assert_int_equal(sub_id(m), 1);
    cJSON_Delete(m);
    assert_int_equal(cap_count(&b, "notifications/tools/list_changed"), 0);
    mcp_notify_list_changed(f->d, "prompts");
    m = cap_wait(&b, has_method, "notifications/prompts/list_changed", 10000);
    assert_non_null(m);
    assert_int_equal(sub_id(m), 2);
    cJSON_Delete(m);
    assert_int_equal(cap_count(&a, "notifications/prompts/list_changed"), 0);

    /* Bad filters name the field; no stream is opened. */
    listen_req(f, sc, &c, 3, NULL);
    id = 3;
    m = cap_wait(&c, is_response_to, &id, 10000);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "params.notifications"));
    cJSON_Delete(m);
    listen_req(f, sc, &c, 4, "{\"resourceSubscriptions\":[1]}");
    id = 4;
    m = cap_wait(&c, is_response_to, &id, 10000);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "resourceSubscriptions"));
    cJSON_Delete(m);

    /* notifications/cancelled naming it ends a stream without an answer. */
    {
        struct mcp_request_ctx ctx = {.revision = "2026-07-28"};
        const char *cancel = "{\"jsonrpc\":\"2.0\",\"method\":"
                             "\"notifications/cancelled\",\"params\":{"
                             "\"requestId\":1}}";

        assert_false(
            mcp_handle(f->d, sa, cancel, strlen(cancel), &a.sink, &ctx));
    }
    assert_int_equal(a.null_finals, 1);
    assert_int_equal(a.retains, a.releases);
    mcp_notify_tools_changed(f->d);
    assert_int_equal(cap_count(&a, "notifications/tools/list_changed"), 1);

    /* Shutdown ends the others with their result; no new ones after. */
    mcp_drain(f->d, 1000);
    id = 2;
    m = cap_wait(&b, is_response_to, &id, 10000);
    assert_non_null(m);
    assert_string_equal(
        cJSON_GetObjectItem(result_of(m), "resultType")->valuestring,
        "complete");
    assert_int_equal(sub_id(m), 2);
    cJSON_Delete(m);
    assert_int_equal(b.retains, b.releases);
    listen_req(f, sc, &c, 5, "{\"toolsListChanged\":true}");
    id = 5;
    m = cap_wait(&c, is_response_to, &id, 10000);
    assert_int_equal(error_code(m), -32000);
    assert_non_null(strstr(error_message(m), "shutting down"));
    cJSON_Delete(m);

    mcp_session_free(sa);
    mcp_session_free(sb);
    mcp_session_free(sc);
    assert_int_equal(c.retains, c.releases);
    cap_fini(&a);
    cap_fini(&b);
    cap_fini(&c);
    fx_free(f);
}

/*
 * The stdio sink lives while a call holds it: the call's last release comes
 * after it left the in-flight count, so the transport must not free the
 * sink when that count reads 0 (ASan saw the release touch freed memory).
 */
static void test_stdio_sink_outlives(void **state)
{
    static const char input[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
        "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
        "\"params\":{\"name\":\"keep\",\"arguments\":{}}}\n";
    struct mcp_options o;
    struct stdio_run run;
    pthread_t th;
    int in_pipe[2];
    int out_pipe[2];
    char out[65536];
    size_t got = 0;
    ssize_t n;

    memset(&o, 0, sizeof(o));
    g_kept_call = NULL;
    run.d = mcp_create(&o, g_reg);
    assert_non_null(run.d);
    assert_int_equal(pipe(in_pipe), 0);
    assert_int_equal(pipe(out_pipe), 0);
    run.in_fd = in_pipe[0];
    run.out_fd = out_pipe[1];
    assert_int_equal(pthread_create(&th, NULL, stdio_thread, &run), 0);
    write_str(in_pipe[1], input, strlen(input));
    close(in_pipe[1]);
    while ((n = read(out_pipe[0], out + got, sizeof(out) - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    pthread_join(th, NULL);
    close(in_pipe[0]);
    close(out_pipe[0]);
    assert_int_equal(run.rc, 0);
    assert_non_null(strstr(out, "kept"));
    assert_non_null(g_kept_call);
    /* The transport is gone; the last reference releases the sink. */
    call_unref(g_kept_call);
    g_kept_call = NULL;
    mcp_destroy(run.d);
}

/* ---- tasks: what a plugin's task ops answer, as the client sees it ----- */

static char g_task_answers[256]; /* what the update op received */

/* The handle's "mode" member. */
static char *job_mode(const char *args, size_t len)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *m = cJSON_GetObjectItem(a, "mode");
    char *v = strdup(cJSON_IsString(m) ? m->valuestring : "");

    cJSON_Delete(a);
    return v;
}

static int job_json(rlmcp_call *call, const char *json)
{
    return call_result_json(call, json, strlen(json));
}

static int job_start(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char *mode = job_mode(args, len);
    char handle[160];
    int rc;

    (void)ud;
    snprintf(handle, sizeof(handle), "{\"mode\":\"%s\"}", mode);
    rc = job_json(call, handle);
    free(mode);
    return rc;
}

static int job_get(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char *mode = job_mode(args, len);
    int rc = RLMCP_OK;

    (void)ud;
    if (strcmp(mode, "running") == 0)
        rc = job_json(call, "{\"status\":\"running\"}");
    else if (strcmp(mode, "gone") == 0)
        rc = call_result_error(call, "not_found", NULL, "the work is gone");
    else if (strcmp(mode, "down") == 0)
        rc = call_result_error(call, "unavailable", NULL, "backend down");
    else if (strcmp(mode, "toolerr") == 0)
        rc = call_result_error(call, "invalid_argument", NULL, "bad input");
    else if (strcmp(mode, "broke") == 0)
        rc = job_json(call, "{\"status\":\"failed\",\"message\":\"it broke\"}");
    else if (strcmp(mode, "ask") == 0)
        rc = job_json(call, "{\"status\":\"input_required\",\"input_requests\":"
                            "{\"k\":{\"method\":\"elicitation/create\","
                            "\"params\":{\"message\":\"q\",\"_meta\":{"
                            "\"rlmcp/input-key\":\"k\"}}}}}");
    else if (strcmp(mode, "bug") == 0)
        rc = RLMCP_EINTERNAL;
    else if (strcmp(mode, "building") == 0 || strcmp(mode, "stuck") == 0)
        rc = job_json(call, "{\"status\":\"building\"}"); /* no "id" */
    else if (strcmp(mode, "provisioning") == 0 ||
             strcmp(mode, "in_progress") == 0)
        rc = job_json(call, strcmp(mode, "in_progress") == 0
                                ? "{\"status\":\"in_progress\"}"
                                : "{\"status\":\"provisioning\"}");
    else if (strcmp(mode, "done_bad") == 0)
        rc = job_json(call, "{\"status\":\"build_complete\"}");
    else if (strcmp(mode, "done_ok") == 0)
        rc = job_json(call, "{\"id\":\"x\",\"status\":\"build_complete\"}");
    else
        rc = call_result_text(call, "ok");
    free(mode);
    return rc;
}

static int job_cancel(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char *mode = job_mode(args, len);
    int rc;

    (void)ud;
    if (strcmp(mode, "stuck") == 0)
        rc = call_result_error(call, "conflict", "wait for it",
                               "the work cannot be stopped");
    else if (strcmp(mode, "broke") == 0)
        rc = job_json(call, "{\"status\":\"failed\",\"already_done\":true}");
    else
        rc = job_json(call, "{\"status\":\"killed\"}");
    free(mode);
    return rc;
}

static int job_update(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    cJSON *in = cJSON_GetObjectItem(a, "input_responses");
    char *text = cJSON_PrintUnformatted(in);
    int rc;

    (void)ud;
    snprintf(g_task_answers, sizeof(g_task_answers), "%s", text ? text : "");
    if (cJSON_GetObjectItem(in, "k") == NULL)
        rc = call_result_error(call, "invalid_argument", NULL, "k unanswered");
    else
        rc = job_json(call, "{}");
    free(text);
    cJSON_Delete(a);
    return rc;
}

static const struct rlmcp_task_def job_ops = {
    .struct_size = sizeof(struct rlmcp_task_def),
    .start = job_start,
    .get = job_get,
    .wait = job_get,
    .cancel = job_cancel,
    .update = job_update,
};

static const struct rlmcp_task_def only_ops = {
    .struct_size = sizeof(struct rlmcp_task_def),
    .start = job_start,
    .get = job_get,
    .wait = job_get,
    .cancel = job_cancel,
    .flags = RLMCP_TASK_REQUIRED,
};

#define TASK_META                                                              \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","   \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":{"         \
    "\"io.modelcontextprotocol/tasks\":{}}}}"

/* A 2026-07-28 request on a session of its own; its answer. */
static cJSON *rev_call(struct fx *f, int id, const char *method,
                       const char *params)
{
    struct mcp_request_ctx ctx = {.revision = "2026-07-28"};
    struct mcp_session *s = mcp_session_new(f->d);
    char *msg = NULL;
    cJSON *m = NULL;

    assert_true(asprintf(&msg,
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\","
                         "\"params\":{%s%s" TASK_META "}}",
                         id, method, params,
                         params[0] != '\0' ? "," : "") >= 0);
    mcp_handle(f->d, s, msg, strlen(msg), &f->cap.sink, &ctx);
    m = response(f, id);
    free(msg);
    mcp_session_free(s);
    return m;
}

/* Start a task of tool in mode; its id (caller frees). */
static char *task_of_tool(struct fx *f, int id, const char *tool,
                          const char *mode)
{
    char params[160];
    cJSON *m = NULL;
    char *task = NULL;

    snprintf(params, sizeof(params),
             "\"name\":\"%s\",\"arguments\":{\"mode\":\"%s\"}", tool, mode);
    m = rev_call(f, id, "tools/call", params);
    assert_string_equal(
        cJSON_GetObjectItem(result_of(m), "resultType")->valuestring, "task");
    task = strdup(cJSON_GetObjectItem(result_of(m), "taskId")->valuestring);
    cJSON_Delete(m);
    return task;
}

static char *task_of(struct fx *f, int id, const char *mode)
{
    return task_of_tool(f, id, "job", mode);
}

static cJSON *task_get_of(struct fx *f, int id, const char *tool,
                          const char *mode)
{
    char *task = task_of_tool(f, id, tool, mode);
    char params[2600];

    snprintf(params, sizeof(params), "\"taskId\":\"%s\"", task);
    free(task);
    return rev_call(f, id + 1, "tasks/get", params);
}

static cJSON *task_get(struct fx *f, int id, const char *mode)
{
    char *task = task_of(f, id, mode);
    char params[2600];

    snprintf(params, sizeof(params), "\"taskId\":\"%s\"", task);
    free(task);
    return rev_call(f, id + 1, "tasks/get", params);
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItem(o, a);

    if (b != NULL)
        v = cJSON_GetObjectItem(v, b);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_tasks(void **state)
{
    struct fx *f = fx_new(0);
    struct registry *reg = registry_new();
    struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
    struct deployment *dep = NULL, *old = NULL;
    char err[256] = "";
    char params[2600];
    char *task = NULL;
    const cJSON *r = NULL;
    cJSON *m = NULL;

    (void)state;
    assert_int_equal(tasks_set_key(NULL, 0), 0);
    def.name = "job";
    def.description = "test tool";
    def.input_schema_json = OBJ;
    def.handler = h_echo;
    def.task = &job_ops;
    assert_int_equal(
        registry_add_tool(reg, NULL, "testplug", &def, err, sizeof(err)), 0);
    def.name = "only_task";
    def.task = &only_ops;
    assert_int_equal(
        registry_add_tool(reg, NULL, "testplug", &def, err, sizeof(err)), 0);
    assert_int_equal(
        registry_select(reg, NULL, "t.yaml", false, 1000, err, sizeof(err)), 0);
    dep = deployment_new(reg, NULL, 0);
    assert_int_equal(mcp_replace_deployment(f->d, dep, &old), 0);
    deployment_unref(old);
    deployment_unref(dep);

    /* Working, done, a tool error, a gone or broken work. */
    m = task_get(f, 1, "running");
    assert_string_equal(str_at(result_of(m), "status", NULL), "working");
    assert_null(cJSON_GetObjectItem(result_of(m), "result"));
    cJSON_Delete(m);
    m = task_get(f, 3, "done");
    r = result_of(m);
    assert_string_equal(str_at(r, "status", NULL), "completed");
    assert_string_equal(str_at(r, "result", "resultType"), "complete");
    cJSON_Delete(m);
    m = task_get(f, 5, "toolerr");
    r = result_of(m);
    assert_string_equal(str_at(r, "status", NULL), "completed");
    assert_true(cJSON_IsTrue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "isError")));
    cJSON_Delete(m);
    m = task_get(f, 7, "gone");
    r = result_of(m);
    assert_string_equal(str_at(r, "status", NULL), "failed");
    assert_string_equal(str_at(r, "error", "message"), "the work is gone");
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"), "code")->valueint,
        -32603);
    assert_null(cJSON_GetObjectItem(r, "result"));
    cJSON_Delete(m);
    m = task_get(f, 9, "broke");
    assert_string_equal(str_at(result_of(m), "error", "message"), "it broke");
    assert_string_equal(str_at(result_of(m), "statusMessage", NULL),
                        "it broke");
    cJSON_Delete(m);
    /* A state that cannot be read now is an error, never a status. */
    m = task_get(f, 11, "down");
    assert_int_equal(error_code(m), -32603);
    assert_non_null(strstr(error_message(m), "could not be read now"));
    cJSON_Delete(m);
    m = task_get(f, 13, "bug");
    assert_int_equal(error_code(m), -32603);
    cJSON_Delete(m);

    /* Waiting for input: the requests without the plugin's key. */
    m = task_get(f, 15, "ask");
    r = result_of(m);
    assert_string_equal(str_at(r, "status", NULL), "input_required");
    r = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "inputRequests"), "k");
    assert_string_equal(str_at(r, "method", NULL), "elicitation/create");
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "params"), "_meta"));
    cJSON_Delete(m);

    /* tasks/update: answers reach the op; its refusal is -32602. */
    task = task_of(f, 17, "ask");
    snprintf(params, sizeof(params),
             "\"taskId\":\"%s\",\"inputResponses\":{\"k\":{\"action\":"
             "\"accept\"}}",
             task);
    m = rev_call(f, 18, "tasks/update", params);
    assert_int_equal(cJSON_GetArraySize(result_of(m)), 0);
    assert_string_equal(g_task_answers, "{\"k\":{\"action\":\"accept\"}}");
    cJSON_Delete(m);
    snprintf(params, sizeof(params),
             "\"taskId\":\"%s\",\"inputResponses\":{\"x\":{}}", task);
    m = rev_call(f, 19, "tasks/update", params);
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    snprintf(params, sizeof(params), "\"taskId\":\"%s\",\"inputResponses\":[]",
             task);
    m = rev_call(f, 20, "tasks/update", params);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "inputResponses"));
    cJSON_Delete(m);
    free(task);

    /* A task-only tool called without a task. */
    init_session(f, "{}");
    assert_true(handle(f, "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":"
                          "\"tools/call\",\"params\":{\"name\":"
                          "\"only_task\",\"arguments\":{}}}"));
    m = response(f, 21);
    assert_int_equal(error_code(m), -32601);
    assert_non_null(strstr(error_message(m), "params.task"));
    cJSON_Delete(m);
    fx_free(f);
    registry_free(reg);
}

/* A 2025-11-25 tasks/cancel of task (on the fixture's session). */
static cJSON *cancel_2025(struct fx *f, int id, const char *task)
{
    assert_true(handle(f,
                       "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
                       "\"tasks/cancel\",\"params\":{\"taskId\":\"%s\"}}",
                       id, task));
    return response(f, id);
}

/*
 * Builds and snapshots: the backend's working statuses, the output schema
 * checked on a completed result only, a cancel the work refuses.
 */
static void test_task_states(void **state)
{
    struct fx *f = fx_new(0);
    struct registry *reg = registry_new();
    struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
    struct deployment *dep = NULL, *old = NULL;
    static const char *const working[] = {"building", "provisioning",
                                          "in_progress"};
    char err[256] = "";
    char params[2600];
    char *task = NULL;
    const cJSON *r = NULL;
    cJSON *m = NULL;
    size_t i;

    (void)state;
    assert_int_equal(tasks_set_key(NULL, 0), 0);
    def.name = "job";
    def.description = "test tool";
    def.input_schema_json = OBJ;
    def.handler = h_echo;
    def.task = &job_ops;
    assert_int_equal(
        registry_add_tool(reg, NULL, "testplug", &def, err, sizeof(err)), 0);
    def.name = "shaped";
    def.output_schema_json =
        "{\"type\":\"object\",\"required\":[\"id\",\"status\"]}";
    assert_int_equal(
        registry_add_tool(reg, NULL, "testplug", &def, err, sizeof(err)), 0);
    assert_int_equal(
        registry_select(reg, NULL, "t.yaml", false, 1000, err, sizeof(err)), 0);
    dep = deployment_new(reg, NULL, 0);
    assert_int_equal(mcp_replace_deployment(f->d, dep, &old), 0);
    deployment_unref(old);
    deployment_unref(dep);

    /* The backend's statuses of work going on are working. */
    for (i = 0; i < sizeof(working) / sizeof(*working); i++) {
        m = task_get(f, 1 + 2 * (int)i, working[i]);
        assert_string_equal(str_at(result_of(m), "status", NULL), "working");
        cJSON_Delete(m);
    }
    /* A status read need not match the outputSchema (it has no id)... */
    m = task_get_of(f, 11, "shaped", "building");
    assert_string_equal(str_at(result_of(m), "status", NULL), "working");
    cJSON_Delete(m);
    /* ...the completed result must. */
    m = task_get_of(f, 13, "shaped", "done_bad");
    assert_int_equal(error_code(m), -32603);
    assert_non_null(strstr(error_message(m), "outputSchema"));
    cJSON_Delete(m);
    m = task_get_of(f, 15, "shaped", "done_ok");
    r = result_of(m);
    assert_string_equal(str_at(r, "status", NULL), "completed");
    assert_string_equal(str_at(r, "result", "resultType"), "complete");
    cJSON_Delete(m);

    /* Work that cannot be stopped: 2026-07-28 acks, 2025-11-25 refuses. */
    task = task_of(f, 17, "stuck");
    snprintf(params, sizeof(params), "\"taskId\":\"%s\"", task);
    m = rev_call(f, 21, "tasks/cancel", params);
    assert_int_equal(cJSON_GetArraySize(result_of(m)), 0);
    cJSON_Delete(m);
    init_session(f, "{}");
    m = cancel_2025(f, 18, task);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "cannot be cancelled: the work "
                                             "cannot be stopped wait for it"));
    cJSON_Delete(m);
    free(task);
    /* A cancel that finds the work failed before: it had ended. */
    task = task_of(f, 19, "broke");
    m = cancel_2025(f, 20, task);
    assert_int_equal(error_code(m), -32602);
    assert_non_null(strstr(error_message(m), "already ended"));
    cJSON_Delete(m);
    free(task);
    fx_free(f);
    registry_free(reg);
}

/* intake_read/intake_check: what stdio and HTTP ask of a message. */
static struct intake read_msg(const char *text, const struct intake_headers *h,
                              enum intake_session s, cJSON **msg)
{
    struct intake in;

    *msg = cJSON_Parse(text);
    assert_non_null(*msg);
    intake_read(*msg, h, s, &in);
    return in;
}

static void test_intake(void **state)
{
    const char *listen = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                         "\"subscriptions/listen\",\"params\":{\"_meta\":{"
                         "\"io.modelcontextprotocol/protocolVersion\":"
                         "\"2026-07-28\"}}}";
    const char *old_meta = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                           "\"tools/list\",\"params\":{\"_meta\":{"
                           "\"io.modelcontextprotocol/protocolVersion\":"
                           "\"2025-11-25\","
                           "\"io.modelcontextprotocol/clientCapabilities\":{}"
                           "}}}";
    struct intake_headers bad = {.version = "2024-01-01"};
    const char *listen_caps =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
        "\"subscriptions/listen\",\"params\":{\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    struct intake_headers h26 = {.version = MCP_REV_STATELESS,
                                 .method = "subscriptions/listen"};
    struct intake_headers h_other = {.version = MCP_REV_STATELESS,
                                     .method = "tools/list"};
    struct intake in;
    cJSON *msg = NULL;
    cJSON *data = NULL;
    char err[512];

    (void)state;
    /* A 2026-07-28 listen without a session: stateless, streams, counted. */
    in = read_msg(listen, NULL, INTAKE_NO_SESSION, &msg);
    assert_true(in.stateless);
    assert_true(in.listen);
    assert_true(in.streams);
    assert_string_equal(in.method, "subscriptions/listen");
    /* Its _meta lacks the client's capabilities. */
    assert_int_equal(intake_check(msg, &h26, &in, err, sizeof(err), &data),
                     JSONRPC_INVALID_PARAMS);
    cJSON_Delete(msg);
    in = read_msg(listen_caps, NULL, INTAKE_NO_SESSION, &msg);
    assert_int_equal(intake_check(msg, &h26, &in, err, sizeof(err), &data), 0);
    assert_int_equal(intake_check(msg, &h_other, &in, err, sizeof(err), &data),
                     MCP_HEADER_MISMATCH);
    cJSON_Delete(msg);
    /* The same body on a named session is the session's. */
    in = read_msg(listen, NULL, INTAKE_SESSION_NAMED, &msg);
    assert_false(in.stateless);
    assert_false(in.listen);
    cJSON_Delete(msg);
    /* An older version in _meta: stateless before initialize (then refused
     * by its version), the open session's after it. */
    in = read_msg(old_meta, NULL, INTAKE_NO_SESSION, &msg);
    assert_true(in.stateless);
    assert_int_equal(intake_check(msg, NULL, &in, err, sizeof(err), &data),
                     MCP_UNSUPPORTED_VERSION);
    assert_non_null(cJSON_GetObjectItem(data, "supported"));
    cJSON_Delete(data);
    cJSON_Delete(msg);
    in = read_msg(old_meta, NULL, INTAKE_SESSION_OPEN, &msg);
    assert_false(in.stateless);
    assert_false(in.streams);
    cJSON_Delete(msg);
    /* tasks/result streams on a session; tools/call on both. */
    in = read_msg("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/result\"}",
                  NULL, INTAKE_SESSION_NAMED, &msg);
    assert_true(in.streams);
    cJSON_Delete(msg);
    in = read_msg("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\"}",
                  NULL, INTAKE_SESSION_NAMED, &msg);
    assert_true(in.streams);
    /* A session-based message with an unknown MCP-Protocol-Version. */
    assert_int_equal(intake_check(msg, &bad, &in, err, sizeof(err), &data),
                     JSONRPC_SERVER_ERROR);
    assert_non_null(strstr(err, "'2024-01-01'; this server speaks 2025-11-25, "
                                "2025-06-18 and 2025-03-26 after initialize"));
    cJSON_Delete(msg);
    /* A notification: initialize and cancel flags, no stream. */
    in =
        read_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}",
                 NULL, INTAKE_SESSION_OPEN, &msg);
    assert_true(in.cancel);
    assert_false(in.streams);
    assert_null(in.id);
    cJSON_Delete(msg);
    in = read_msg("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\"}",
                  NULL, INTAKE_NO_SESSION, &msg);
    assert_true(in.initialize);
    assert_false(in.stateless);
    cJSON_Delete(msg);
    /* Listen admission per client. */
    assert_int_equal(
        intake_listen_admit(INTAKE_LISTENS_PER_CLIENT - 1, err, sizeof(err)),
        0);
    assert_int_equal(
        intake_listen_admit(INTAKE_LISTENS_PER_CLIENT, err, sizeof(err)),
        JSONRPC_SERVER_ERROR);
    assert_non_null(strstr(err, "subscriptions/listen streams open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_envelopes),
        cmocka_unit_test(test_before_initialize),
        cmocka_unit_test(test_initialize),
        cmocka_unit_test(test_unknown_method_and_params),
        cmocka_unit_test(test_tools_list_pages),
        cmocka_unit_test(test_tools_call),
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_id_reuse_after_answer),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_progress_utf8),
        cmocka_unit_test(test_progress_join),
        cmocka_unit_test(test_concurrent_calls),
        cmocka_unit_test(test_serial),
        cmocka_unit_test(test_client_request),
        cmocka_unit_test(test_logging),
        cmocka_unit_test(test_resources),
        cmocka_unit_test(test_subscriptions),
        cmocka_unit_test(test_replace_deployment),
        cmocka_unit_test(test_replace_under_load),
        cmocka_unit_test(test_prompts),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_session_call_limit),
        cmocka_unit_test(test_session_free_cancels),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_stdio_framing),
        cmocka_unit_test(test_stdio_sink_outlives),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_intake),
        cmocka_unit_test(test_tasks),
        cmocka_unit_test(test_task_states),
    };

    /* TEST_FILTER=test_progress runs one test (a glob). */
    if (getenv("TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
