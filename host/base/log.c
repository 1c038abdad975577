/*
 * log.c - stderr logging, one write per line.
 */
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *const level_names[] = {
    "debug", "info",     "notice", "warning",
    "error", "critical", "alert",  "emergency",
};
#define N_LEVELS (sizeof(level_names) / sizeof(level_names[0]))

static int current_level = RLMCP_LOG_INFO;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static log_sink_fn sink_fn;
static void *sink_user;

void log_set_level(int level)
{
    __atomic_store_n(&current_level, level, __ATOMIC_RELAXED);
}

int log_get_level(void)
{
    return __atomic_load_n(&current_level, __ATOMIC_RELAXED);
}

int log_level_parse(const char *name)
{
    size_t i;

    if (name == NULL)
        return -1;
    for (i = 0; i < N_LEVELS; i++) {
        if (strcasecmp(name, level_names[i]) == 0)
            return (int)i;
    }
    if (strcasecmp(name, "warn") == 0)
        return RLMCP_LOG_WARNING;
    return -1;
}

const char *log_level_name(int level)
{
    if (level < 0 || (size_t)level >= N_LEVELS)
        return "unknown";
    return level_names[level];
}

void log_set_sink(log_sink_fn fn, void *user)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_user = user;
    pthread_mutex_unlock(&sink_lock);
}

/* Control characters would let a message forge extra log lines. */
static void flatten(char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            *s = ' ';
    }
}

void log_vmsg(int level, const char *who, const char *fmt, va_list ap)
{
    char line[4096];
    int prefix = 0;
    int n = 0;
    size_t len = 0;

    if (level < log_get_level())
        return;
    if (who != NULL && who[0] != '\0')
        prefix = snprintf(line, sizeof(line),
                          "runloop-mcp: %s: %s: ", log_level_name(level), who);
    else
        prefix = snprintf(line, sizeof(line),
                          "runloop-mcp: %s: ", log_level_name(level));
    if (prefix < 0 || (size_t)prefix >= sizeof(line))
        prefix = 0;
    n = vsnprintf(line + prefix, sizeof(line) - (size_t)prefix, fmt, ap);
    if (n < 0)
        line[prefix] = '\0';
    flatten(line + prefix);
    len = strlen(line);

    pthread_mutex_lock(&sink_lock);
    if (sink_fn != NULL) {
        sink_fn(sink_user, level, line);
    } else {
        char out[sizeof(line) + 1];
        memcpy(out, line, len);
        out[len] = '\n';
        /* One write so concurrent lines never interleave. */
        if (write(STDERR_FILENO, out, len + 1) < 0) {
            /* nowhere left to report it */
        }
    }
    pthread_mutex_unlock(&sink_lock);
}

void log_msg(int level, const char *who, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, who, fmt, ap);
    va_end(ap);
}
