/*
 * sse.c - incremental server-sent events parser (see sse.h).
 */
#include "sse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

#define SSE_DEFAULT_MAX (1024u * 1024u)
/* Room for a field name and separator on top of the data bound. */
#define SSE_LINE_SLACK 64u

struct sse_parser {
    sse_event_fn fn;
    void *user;
    size_t max_event;
    int sticky;      /* non-OK status once stopped or failed */
    bool pending_cr; /* last chunk ended in CR: skip a leading LF */
    bool first_line; /* strip a BOM from the first line only */
    long retry_ms;
    size_t events;
    struct strbuf line;
    struct strbuf data;
    struct strbuf event;
    struct strbuf id;
};

static int buf_set(struct strbuf *b, const char *s, size_t n)
{
    b->len = 0;
    return strbuf_add(b, s, n);
}

struct sse_parser *sse_parser_new(size_t max_event, sse_event_fn fn, void *user)
{
    struct sse_parser *p = NULL;

    if (fn == NULL)
        return NULL;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->fn = fn;
    p->user = user;
    p->max_event = max_event ? max_event : SSE_DEFAULT_MAX;
    p->first_line = true;
    p->retry_ms = -1;
    return p;
}

void sse_parser_free(struct sse_parser *p)
{
    if (p == NULL)
        return;
    free(p->line.p);
    free(p->data.p);
    free(p->event.p);
    free(p->id.p);
    free(p);
}

long sse_parser_retry_ms(const struct sse_parser *p)
{
    return p->retry_ms;
}

const char *sse_parser_last_id(const struct sse_parser *p)
{
    return strbuf_str(&p->id);
}

size_t sse_parser_events(const struct sse_parser *p)
{
    return p->events;
}

static int dispatch(struct sse_parser *p)
{
    const char *name = NULL;
    size_t dlen = p->data.len;
    int rc = 0;

    if (dlen == 0) {
        p->event.len = 0;
        return SSE_OK;
    }
    /* The data buffer always ends in the LF added after each data line. */
    dlen--;
    p->data.p[dlen] = '\0';
    name = p->event.len > 0 ? p->event.p : "message";
    p->events++;
    rc = p->fn(p->user, name, strbuf_str(&p->id), p->data.p, dlen);
    p->data.len = 0;
    p->event.len = 0;
    return rc != 0 ? SSE_STOPPED : SSE_OK;
}

static bool all_digits(const char *s, size_t n)
{
    size_t i;

    if (n == 0 || n > 9)
        return false;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
    }
    return true;
}

static int field(struct sse_parser *p, const char *name, size_t nlen,
                 const char *val, size_t vlen)
{
    if (nlen == 4 && memcmp(name, "data", 4) == 0) {
        if (p->data.len + vlen + 1 > p->max_event + 1)
            return SSE_TOO_LARGE;
        if (strbuf_add(&p->data, val, vlen) != 0 ||
            strbuf_add(&p->data, "\n", 1) != 0)
            return SSE_NOMEM;
    } else if (nlen == 5 && memcmp(name, "event", 5) == 0) {
        if (buf_set(&p->event, val, vlen) != 0)
            return SSE_NOMEM;
    } else if (nlen == 2 && memcmp(name, "id", 2) == 0) {
        if (memchr(val, '\0', vlen) == NULL && buf_set(&p->id, val, vlen) != 0)
            return SSE_NOMEM;
    } else if (nlen == 5 && memcmp(name, "retry", 5) == 0) {
        if (all_digits(val, vlen))
            p->retry_ms = strtol(val, NULL, 10);
    }
    /* Unknown fields are ignored, as the spec says. */
    return SSE_OK;
}

static int process_line(struct sse_parser *p)
{
    const char *line = strbuf_str(&p->line);
    size_t len = p->line.len;
    const char *colon = NULL;
    const char *val = NULL;
    size_t nlen = 0;
    size_t vlen = 0;

    if (p->first_line) {
        p->first_line = false;
        if (len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
            line += 3;
            len -= 3;
        }
    }
    if (len == 0)
        return dispatch(p);
    if (line[0] == ':')
        return SSE_OK;
    colon = memchr(line, ':', len);
    if (colon == NULL) {
        nlen = len;
        val = line + len;
        vlen = 0;
    } else {
        nlen = (size_t)(colon - line);
        val = colon + 1;
        vlen = len - nlen - 1;
        if (vlen > 0 && *val == ' ') {
            val++;
            vlen--;
        }
    }
    return field(p, line, nlen, val, vlen);
}

static int end_line(struct sse_parser *p)
{
    int rc = process_line(p);

    p->line.len = 0;
    return rc;
}

static int feed(struct sse_parser *p, const char *buf, size_t len)
{
    size_t i = 0;
    int rc = SSE_OK;

    while (i < len) {
        size_t run = 0;
        char c = buf[i];

        if (p->pending_cr) {
            p->pending_cr = false;
            if (c == '\n') {
                i++;
                continue;
            }
        }
        if (c == '\r' || c == '\n') {
            p->pending_cr = c == '\r';
            i++;
            rc = end_line(p);
            if (rc != SSE_OK)
                return rc;
            continue;
        }
        while (i + run < len && buf[i + run] != '\r' && buf[i + run] != '\n')
            run++;
        if (p->line.len + run > p->max_event + SSE_LINE_SLACK)
            return SSE_TOO_LARGE;
        if (strbuf_add(&p->line, buf + i, run) != 0)
            return SSE_NOMEM;
        i += run;
    }
    return SSE_OK;
}

int sse_parser_feed(struct sse_parser *p, const char *buf, size_t len)
{
    int rc = SSE_OK;

    if (p->sticky != SSE_OK)
        return p->sticky;
    rc = feed(p, buf, len);
    p->sticky = rc;
    return rc;
}
