/*
 * audit.c - the audit log (see audit.h): JSON lines with size rotation.
 */
#define _GNU_SOURCE /* asprintf */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "digest.h"
#include "log.h"

#define AUDIT_MAX_KEEP 100

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static char *path;
static unsigned long long max_bytes;
static unsigned keep;
static unsigned long long size;
static time_t last_complaint;

static int open_log(void)
{
    struct stat st;
    int f = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

    if (f < 0)
        return -1;
    size = fstat(f, &st) == 0 ? (unsigned long long)st.st_size : 0;
    return f;
}

int audit_open(const char *p, unsigned long long max, unsigned k, char *err,
               size_t errlen)
{
    int rc = -1;

    pthread_mutex_lock(&lock);
    if (fd >= 0) {
        snprintf(err, errlen, "the audit log is already open");
        goto out;
    }
    path = strdup(p);
    if (path == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    max_bytes = max;
    keep = k > AUDIT_MAX_KEEP ? AUDIT_MAX_KEEP : k;
    fd = open_log();
    if (fd < 0) {
        snprintf(err, errlen,
                 "cannot open the audit log %s: %s; fix host.audit_log or "
                 "create its directory",
                 p, strerror(errno));
        free(path);
        path = NULL;
        goto out;
    }
    rc = 0;
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

int audit_enabled(void)
{
    int on = 0;

    pthread_mutex_lock(&lock);
    on = fd >= 0;
    pthread_mutex_unlock(&lock);
    return on;
}

void audit_close(void)
{
    pthread_mutex_lock(&lock);
    if (fd >= 0)
        close(fd);
    fd = -1;
    free(path);
    path = NULL;
    pthread_mutex_unlock(&lock);
}

void audit_key_fingerprint(const char *key, char *out, size_t n)
{
    char hex[65];

    if (key == NULL || key[0] == '\0') {
        snprintf(out, n, "none");
        return;
    }
    digest_sha256_hex(key, strlen(key), hex);
    snprintf(out, n, "sha256:%.12s", hex);
}

/* FILE.k-1 -> FILE.k ..., FILE -> FILE.1; lock held. */
static void rotate(void)
{
    char *from = NULL;
    char *to = NULL;
    unsigned i = 0;

    close(fd);
    fd = -1;
    for (i = keep; i >= 1; i--) {
        if (i == 1)
            from = strdup(path);
        else if (asprintf(&from, "%s.%u", path, i - 1) < 0)
            from = NULL;
        if (asprintf(&to, "%s.%u", path, i) < 0)
            to = NULL;
        if (from != NULL && to != NULL)
            rename(from, to); /* a missing FILE.k is fine */
        free(from);
        free(to);
        from = NULL;
        to = NULL;
    }
    if (keep == 0)
        unlink(path); /* keep nothing: start over */
    fd = open_log();
}

static char *entry_line(const struct audit_entry *e)
{
    char stamp[40];
    char fp[32];
    char digest[65];
    struct timespec ts;
    struct tm tm;
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    char *line = NULL;

    if (o == NULL)
        return NULL;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + strlen(stamp), sizeof(stamp) - strlen(stamp), ".%03ldZ",
             ts.tv_nsec / 1000000L);
    audit_key_fingerprint(e->api_key, fp, sizeof(fp));
    digest_sha256_hex(e->args != NULL ? e->args : "", e->args ? e->args_len : 0,
                      digest);
    cJSON_AddStringToObject(o, "time", stamp);
    cJSON_AddStringToObject(o, "caller", fp);
    cJSON_AddStringToObject(o, "session", e->session ? e->session : "");
    cJSON_AddStringToObject(o, "tool", e->tool ? e->tool : "");
    cJSON_AddStringToObject(o, "args_sha256", digest);
    cJSON_AddStringToObject(o, "outcome", e->outcome ? e->outcome : "");
    if (e->code != NULL && e->code[0] != '\0')
        cJSON_AddStringToObject(o, "code", e->code);
    cJSON_AddNumberToObject(o, "duration_ms",
                            (double)(long long)(e->duration_ms + 0.5));
    if (e->devbox_id != NULL)
        cJSON_AddStringToObject(o, "devbox_id", e->devbox_id);
    else
        cJSON_AddNullToObject(o, "devbox_id");
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text != NULL && asprintf(&line, "%s\n", text) < 0)
        line = NULL;
    free(text);
    return line;
}

void audit_record(const struct audit_entry *e)
{
    char *line = NULL;
    size_t len = 0;
    ssize_t w = 0;
    time_t now = time(NULL);

    if (!audit_enabled())
        return;
    line = entry_line(e);
    if (line == NULL)
        return;
    len = strlen(line);
    pthread_mutex_lock(&lock);
    if (fd >= 0 && max_bytes > 0 && size > 0 && size + len > max_bytes)
        rotate();
    w = fd >= 0 ? write(fd, line, len) : -1;
    if (w == (ssize_t)len) {
        size += len;
    } else if (now - last_complaint >= 60) {
        last_complaint = now;
        log_msg(RLMCP_LOG_ERROR, NULL, "audit log %s: cannot write: %s",
                path ? path : "?", w < 0 ? strerror(errno) : "short write");
    }
    pthread_mutex_unlock(&lock);
    free(line);
}
