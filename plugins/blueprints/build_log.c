/*
 * build_log.c - blueprint build log helpers (see build_log.h).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "build_log.h"

#define PART_MAX 300

static const char *msg_of(const cJSON *e)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");

    return cJSON_IsString(m) ? m->valuestring : "";
}

static const char *level_of(const cJSON *e)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(e, "level");

    return cJSON_IsString(l) ? l->valuestring : "";
}

/* The entries as an array (cJSON_GetArrayItem is linear per call). */
static const cJSON **items_of(const cJSON *logs, size_t *n_out)
{
    size_t n = (size_t)cJSON_GetArraySize(logs);
    const cJSON **v = calloc(n + 1, sizeof(*v));
    const cJSON *it = NULL;
    size_t i = 0;

    *n_out = 0;
    if (v == NULL)
        return NULL;
    cJSON_ArrayForEach(it, logs)
    {
        v[i++] = it;
    }
    *n_out = i;
    return v;
}

char *bp_log_join(const cJSON *logs, size_t from, size_t max)
{
    size_t n = 0;
    const cJSON **v = items_of(logs, &n);
    size_t first = from;
    size_t used = 0;
    size_t i;
    char *out = NULL;
    char *p = NULL;
    char head[64] = "";

    if (v == NULL)
        return NULL;
    if (from >= n) {
        free(v);
        return strdup("");
    }
    /* Walk back from the end while the lines fit. */
    for (i = n; i > from; i--) {
        size_t len = strlen(msg_of(v[i - 1]));
        if (used + len + 1 > max && i < n)
            break;
        used += len + 1;
        first = i - 1;
    }
    if (first > from)
        snprintf(head, sizeof(head), "[%zu earlier lines omitted]\n",
                 first - from);
    out = malloc(strlen(head) + used + 1);
    if (out == NULL) {
        free(v);
        return NULL;
    }
    p = stpcpy(out, head);
    for (i = first; i < n; i++) {
        p = stpcpy(p, msg_of(v[i]));
        if (i + 1 < n)
            *p++ = '\n';
    }
    *p = '\0';
    /* A single line longer than max is cut (at a UTF-8 boundary). */
    if (strlen(out) > max + strlen(head)) {
        size_t cut = max + strlen(head);
        while (cut > 0 && ((unsigned char)out[cut] & 0xC0) == 0x80)
            cut--;
        out[cut] = '\0';
    }
    free(v);
    return out;
}

static bool level_is_error(const char *lvl)
{
    return strcasecmp(lvl, "error") == 0 || strcasecmp(lvl, "err") == 0 ||
           strcasecmp(lvl, "fatal") == 0;
}

static bool msg_is_error(const char *m)
{
    return strcasestr(m, "error") != NULL || strcasestr(m, "failed") != NULL ||
           strcasestr(m, "non-zero") != NULL ||
           strcasestr(m, "exit code") != NULL;
}

/* "[2/5]" somewhere in the line. */
static bool has_step_counter(const char *m)
{
    const char *p = m;

    while ((p = strchr(p, '[')) != NULL) {
        int a = 0, b = 0, used = 0;
        if (sscanf(p, "[%d/%d]%n", &a, &b, &used) == 2 && used > 0)
            return true;
        p++;
    }
    return false;
}

static bool msg_is_step(const char *m)
{
    while (*m == ' ' || *m == '\t' || *m == '#')
        m++;
    return strncasecmp(m, "step", 4) == 0 || strncmp(m, "RUN ", 4) == 0 ||
           has_step_counter(m);
}

/* Copy at most PART_MAX bytes of s, not splitting a UTF-8 character. */
static char *cut_part(const char *s)
{
    size_t n = strlen(s);

    if (n > PART_MAX) {
        n = PART_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return strndup(s, n);
}

static long find_error(const cJSON **v, long n)
{
    long i;

    for (i = n - 1; i >= 0; i--) {
        if (level_is_error(level_of(v[i])))
            return i;
    }
    for (i = n - 1; i >= 0; i--) {
        if (msg_is_error(msg_of(v[i])))
            return i;
    }
    return n - 1;
}

char *bp_log_failing_step(const cJSON *logs)
{
    size_t count = 0;
    const cJSON **v = items_of(logs, &count);
    long n = (long)count;
    long err = 0, step = -1, i;
    char *a = NULL, *b = NULL, *out = NULL;

    if (v == NULL || n <= 0)
        goto out;
    err = find_error(v, n);
    for (i = err; i >= 0 && step < 0; i--) {
        if (msg_is_step(msg_of(v[i])))
            step = i;
    }
    b = cut_part(msg_of(v[err]));
    if (step < 0 || step == err) {
        out = b;
        b = NULL;
        goto out;
    }
    a = cut_part(msg_of(v[step]));
    if (a != NULL && b != NULL && asprintf(&out, "%s: %s", a, b) < 0)
        out = NULL;
out:
    free(v);
    free(a);
    free(b);
    return out;
}

cJSON *bp_log_tail(const char *id, const cJSON *logs, size_t tail)
{
    size_t n = (size_t)cJSON_GetArraySize(logs);
    size_t first = n > tail ? n - tail : 0;
    cJSON *res = cJSON_CreateObject();
    cJSON *lines = cJSON_AddArrayToObject(res, "lines");
    const cJSON *e = NULL;
    size_t i = 0;

    if (lines == NULL) {
        cJSON_Delete(res);
        return NULL;
    }
    cJSON_AddStringToObject(res, "blueprint_id", id);
    cJSON_ArrayForEach(e, logs)
    {
        if (i++ < first)
            continue;
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "timestamp_ms");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "level", level_of(e));
        cJSON_AddStringToObject(o, "message", msg_of(e));
        if (cJSON_IsNumber(ts))
            cJSON_AddNumberToObject(o, "timestamp_ms", ts->valuedouble);
        cJSON_AddItemToArray(lines, o);
    }
    cJSON_AddNumberToObject(res, "total_lines", (double)n);
    cJSON_AddBoolToObject(res, "truncated", first > 0);
    return res;
}
