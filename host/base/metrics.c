/*
 * metrics.c - counters behind GET /metrics (see metrics.h). One mutex for
 * the per-tool and per-code tables (a call ends at most a few thousand
 * times a second); atomics for what every backend attempt touches.
 */
#define _GNU_SOURCE /* open_memstream */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif

#define METRICS_MAX_TOOLS 512
#define METRICS_MAX_CODES 64
#define METRICS_NAME_MAX 64

/* Seconds; a tool call runs from milliseconds (get) to minutes (builds). */
static const double bucket_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                   0.5,   1,    2.5,   5,    10,  30,
                                   60,    120,  300,   600};
#define N_BUCKETS (sizeof(bucket_le) / sizeof(bucket_le[0]))

static const char *const outcomes[] = {"ok",      "error",    "cancelled",
                                       "timeout", "shutdown", "internal"};
#define N_OUTCOMES (sizeof(outcomes) / sizeof(outcomes[0]))

struct tool_stats {
    char name[METRICS_NAME_MAX];
    unsigned long long by_outcome[N_OUTCOMES];
    unsigned long long buckets[N_BUCKETS]; /* not cumulative */
    unsigned long long count;
    double sum;
};

struct code_stats {
    char code[METRICS_NAME_MAX];
    unsigned long long n;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tool_stats *tools;
static size_t n_tools;
static struct code_stats codes[METRICS_MAX_CODES];
static size_t n_codes;
static unsigned long long dropped; /* beyond the table sizes */

static atomic_long in_flight;
static atomic_ullong backend_by_class[6]; /* error, 1xx..5xx */
static atomic_ullong backend_retries;
static int (*circuit_fn)(void *ctx);
static void *circuit_ctx;

void metrics_set_circuit_source(int (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&lock);
    circuit_fn = fn;
    circuit_ctx = ctx;
    pthread_mutex_unlock(&lock);
}

void metrics_call_begin(void)
{
    atomic_fetch_add(&in_flight, 1);
}

/* The tool's row; lock held. NULL when the table is full. */
static struct tool_stats *tool_row(const char *tool)
{
    size_t i = 0;

    for (i = 0; i < n_tools; i++)
        if (strcmp(tools[i].name, tool) == 0)
            return &tools[i];
    if (tools == NULL) {
        tools = calloc(METRICS_MAX_TOOLS, sizeof(*tools));
        if (tools == NULL)
            return NULL;
    }
    if (n_tools == METRICS_MAX_TOOLS)
        return NULL;
    snprintf(tools[n_tools].name, sizeof(tools[n_tools].name), "%s", tool);
    return &tools[n_tools++];
}

static void count_code(const char *code)
{
    size_t i = 0;

    for (i = 0; i < n_codes; i++) {
        if (strcmp(codes[i].code, code) == 0) {
            codes[i].n++;
            return;
        }
    }
    if (n_codes == METRICS_MAX_CODES) {
        dropped++;
        return;
    }
    snprintf(codes[n_codes].code, sizeof(codes[n_codes].code), "%s", code);
    codes[n_codes++].n = 1;
}

void metrics_call_end(const char *tool, const char *outcome, const char *code,
                      double seconds)
{
    struct tool_stats *t = NULL;
    size_t o = 0;
    size_t b = 0;

    atomic_fetch_sub(&in_flight, 1);
    for (o = 0; o < N_OUTCOMES - 1; o++)
        if (strcmp(outcomes[o], outcome) == 0)
            break;
    while (b < N_BUCKETS && seconds > bucket_le[b])
        b++;
    pthread_mutex_lock(&lock);
    t = tool_row(tool != NULL ? tool : "?");
    if (t == NULL) {
        dropped++;
    } else {
        t->by_outcome[o]++;
        if (b < N_BUCKETS)
            t->buckets[b]++;
        t->count++;
        t->sum += seconds;
    }
    if (strcmp(outcome, "ok") != 0)
        count_code(code != NULL && code[0] != '\0' ? code : outcome);
    pthread_mutex_unlock(&lock);
}

void metrics_backend_attempt(long status)
{
    long cls = status / 100;

    atomic_fetch_add(&backend_by_class[cls >= 1 && cls <= 5 ? cls : 0], 1);
}

void metrics_backend_retry(void)
{
    atomic_fetch_add(&backend_retries, 1);
}

/* A label value: backslash, quote and newline escaped. */
static void put_label(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void render_tools(FILE *f)
{
    size_t i = 0;
    size_t k = 0;

    fputs("# HELP rlmcp_tool_calls_total Tool calls that ended, by tool and "
          "outcome.\n# TYPE rlmcp_tool_calls_total counter\n",
          f);
    for (i = 0; i < n_tools; i++) {
        for (k = 0; k < N_OUTCOMES; k++) {
            fputs("rlmcp_tool_calls_total{tool=\"", f);
            put_label(f, tools[i].name);
            fprintf(f, "\",outcome=\"%s\"} %llu\n", outcomes[k],
                    tools[i].by_outcome[k]);
        }
    }
    fputs("# HELP rlmcp_tool_call_duration_seconds Tool call duration, from "
          "start to answer.\n# TYPE rlmcp_tool_call_duration_seconds "
          "histogram\n",
          f);
    for (i = 0; i < n_tools; i++) {
        unsigned long long cum = 0;

        for (k = 0; k < N_BUCKETS; k++) {
            cum += tools[i].buckets[k];
            fputs("rlmcp_tool_call_duration_seconds_bucket{tool=\"", f);
            put_label(f, tools[i].name);
            fprintf(f, "\",le=\"%g\"} %llu\n", bucket_le[k], cum);
        }
        fputs("rlmcp_tool_call_duration_seconds_bucket{tool=\"", f);
        put_label(f, tools[i].name);
        fprintf(f, "\",le=\"+Inf\"} %llu\n", tools[i].count);
        fputs("rlmcp_tool_call_duration_seconds_sum{tool=\"", f);
        put_label(f, tools[i].name);
        fprintf(f, "\"} %.6f\n", tools[i].sum);
        fputs("rlmcp_tool_call_duration_seconds_count{tool=\"", f);
        put_label(f, tools[i].name);
        fprintf(f, "\"} %llu\n", tools[i].count);
    }
    fputs("# HELP rlmcp_tool_errors_total Tool calls that did not succeed, "
          "by error code (or outcome).\n# TYPE rlmcp_tool_errors_total "
          "counter\n",
          f);
    for (i = 0; i < n_codes; i++) {
        fputs("rlmcp_tool_errors_total{code=\"", f);
        put_label(f, codes[i].code);
        fprintf(f, "\"} %llu\n", codes[i].n);
    }
    fprintf(f,
            "# HELP rlmcp_metrics_dropped_total Updates not counted because a "
            "table was full.\n# TYPE rlmcp_metrics_dropped_total counter\n"
            "rlmcp_metrics_dropped_total %llu\n",
            dropped);
}

static void render_backend(FILE *f)
{
    static const char *const cls[] = {"error", "1xx", "2xx",
                                      "3xx",   "4xx", "5xx"};
    size_t i = 0;

    fputs("# HELP rlmcp_backend_requests_total Attempts sent to the Runloop "
          "API or the local engine, by status class (error: no answer).\n"
          "# TYPE rlmcp_backend_requests_total counter\n",
          f);
    for (i = 0; i < sizeof(cls) / sizeof(cls[0]); i++)
        fprintf(f, "rlmcp_backend_requests_total{status=\"%s\"} %llu\n", cls[i],
                atomic_load(&backend_by_class[i]));
    fprintf(f,
            "# HELP rlmcp_backend_retries_total Backend requests retried.\n"
            "# TYPE rlmcp_backend_retries_total counter\n"
            "rlmcp_backend_retries_total %llu\n",
            atomic_load(&backend_retries));
    if (circuit_fn != NULL)
        fprintf(f,
                "# HELP rlmcp_backend_circuit_state The backend's circuit "
                "breaker: 0 closed, 1 open (calls fail at once), 2 half-open "
                "(a probe is out).\n"
                "# TYPE rlmcp_backend_circuit_state gauge\n"
                "rlmcp_backend_circuit_state %d\n",
                circuit_fn(circuit_ctx));
}

char *metrics_render(const struct metrics_gauges *g, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);

    if (f == NULL)
        return NULL;
    fprintf(f,
            "# HELP rlmcp_build_info The server's version.\n"
            "# TYPE rlmcp_build_info gauge\n"
            "rlmcp_build_info{version=\"%s\"} 1\n"
            "# HELP rlmcp_calls_in_flight Tool calls running now.\n"
            "# TYPE rlmcp_calls_in_flight gauge\n"
            "rlmcp_calls_in_flight %ld\n"
            "# HELP rlmcp_log_lines_dropped_total Log lines dropped because "
            "stderr was full (nobody reading it).\n"
            "# TYPE rlmcp_log_lines_dropped_total counter\n"
            "rlmcp_log_lines_dropped_total %llu\n",
            RLMCP_VERSION, atomic_load(&in_flight),
            (unsigned long long)log_dropped_lines());
    if (g != NULL && g->sessions >= 0)
        fprintf(f,
                "# HELP rlmcp_http_sessions MCP sessions open on the HTTP "
                "transport.\n# TYPE rlmcp_http_sessions gauge\n"
                "rlmcp_http_sessions %ld\n",
                g->sessions);
    pthread_mutex_lock(&lock);
    render_tools(f);
    render_backend(f); /* circuit_fn is read under the lock */
    pthread_mutex_unlock(&lock);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    if (len != NULL)
        *len = n;
    return buf;
}

void metrics_reset(void)
{
    size_t i = 0;

    pthread_mutex_lock(&lock);
    free(tools);
    tools = NULL;
    n_tools = 0;
    n_codes = 0;
    dropped = 0;
    pthread_mutex_unlock(&lock);
    atomic_store(&in_flight, 0);
    for (i = 0; i < 6; i++)
        atomic_store(&backend_by_class[i], 0);
    atomic_store(&backend_retries, 0);
}
