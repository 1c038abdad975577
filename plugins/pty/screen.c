/*
 * screen.c - terminal output to text (rules in screen.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "screen.h"

struct cell {
    char b[4];
    unsigned char n;
};

struct scr {
    char *out; /* finished lines */
    size_t out_len, out_cap;
    struct cell *line; /* the current line */
    size_t ll, lcap, cur;
    bool oom;
};

static void out_add(struct scr *s, const char *p, size_t n)
{
    if (s->oom)
        return;
    if (s->out_len + n + 1 > s->out_cap) {
        size_t cap = (s->out_cap + n + 1) * 2;
        char *q = realloc(s->out, cap);
        if (q == NULL) {
            s->oom = true;
            return;
        }
        s->out = q;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
    s->out[s->out_len] = '\0';
}

static bool line_room(struct scr *s, size_t need)
{
    struct cell *q = NULL;
    size_t cap;

    if (need <= s->lcap)
        return true;
    cap = need * 2 + 16;
    q = realloc(s->line, cap * sizeof(*q));
    if (q == NULL) {
        s->oom = true;
        return false;
    }
    s->line = q;
    s->lcap = cap;
    return true;
}

/* Write one character at the cursor (padding with spaces past the end). */
static void put(struct scr *s, const char *b, size_t n)
{
    if (s->oom || !line_room(s, s->cur + 1))
        return;
    while (s->ll < s->cur) {
        s->line[s->ll].b[0] = ' ';
        s->line[s->ll].n = 1;
        s->ll++;
    }
    memcpy(s->line[s->cur].b, b, n);
    s->line[s->cur].n = (unsigned char)n;
    s->cur++;
    if (s->cur > s->ll)
        s->ll = s->cur;
}

static void flush_line(struct scr *s, bool newline)
{
    size_t i;

    for (i = 0; i < s->ll; i++)
        out_add(s, s->line[i].b, s->line[i].n);
    if (newline)
        out_add(s, "\n", 1);
    s->ll = 0;
    s->cur = 0;
}

/* The length of a valid UTF-8 character at p, 0 when invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t want, i;

    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        want = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF)
        want = 3;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4)
        want = 4;
    else
        return 0;
    if (n < want)
        return 0;
    for (i = 1; i < want; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    }
    /* overlong 3/4-byte forms, surrogates, above U+10FFFF */
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0) ||
        (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))
        return 0;
    return want;
}

static void csi_apply(struct scr *s, char final, long n, bool has_n)
{
    size_t i;

    switch (final) {
    case 'K':
        if (!has_n || n == 0) {
            if (s->ll > s->cur)
                s->ll = s->cur;
        } else if (n == 1) {
            for (i = 0; i < s->cur && i < s->ll; i++) {
                s->line[i].b[0] = ' ';
                s->line[i].n = 1;
            }
        } else if (n == 2) {
            s->ll = 0;
        }
        break;
    case 'C':
        s->cur += (size_t)(has_n && n > 0 ? n : 1);
        break;
    case 'D':
        n = has_n && n > 0 ? n : 1;
        s->cur = (size_t)n > s->cur ? 0 : s->cur - (size_t)n;
        break;
    case 'G':
        s->cur = has_n && n > 1 ? (size_t)n - 1 : 0;
        break;
    default:
        break;
    }
    /* Keep a cursor moved far right bounded. */
    if (s->cur > 4096)
        s->cur = 4096;
}

/* A CSI sequence at p (after ESC [); returns the bytes consumed. */
static size_t csi(struct scr *s, const unsigned char *p, size_t n)
{
    size_t i = 0;
    long num = 0;
    bool has_n = false, simple = true;

    while (i < n && p[i] >= 0x30 && p[i] <= 0x3F) {
        if (p[i] >= '0' && p[i] <= '9') {
            if (num < 100000)
                num = num * 10 + (p[i] - '0');
            has_n = true;
        } else {
            simple = false; /* ; ? etc.: not one of ours */
        }
        i++;
    }
    while (i < n && p[i] >= 0x20 && p[i] <= 0x2F) {
        simple = false;
        i++;
    }
    if (i >= n)
        return n; /* cut off: drop */
    if (p[i] >= 0x40 && p[i] <= 0x7E && simple)
        csi_apply(s, (char)p[i], num, has_n);
    return i + 1;
}

/* A string (OSC, DCS...) at p: up to BEL or ESC \ inclusive. */
static size_t string_seq(const unsigned char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (p[i] == 0x07)
            return i + 1;
        if (p[i] == 0x1B && i + 1 < n && p[i + 1] == '\\')
            return i + 2;
    }
    return n;
}

/* An escape sequence at p (p[0] == ESC); returns the bytes consumed. */
static size_t escape(struct scr *s, const unsigned char *p, size_t n)
{
    size_t i = 1;

    if (n < 2)
        return n;
    switch (p[1]) {
    case '[':
        return 2 + csi(s, p + 2, n - 2);
    case ']':
    case 'P':
    case 'X':
    case '^':
    case '_':
        return 2 + string_seq(p + 2, n - 2);
    default:
        break;
    }
    while (i < n && p[i] >= 0x20 && p[i] <= 0x2F)
        i++;
    return i < n ? i + 1 : n;
}

/* One step at p; returns the bytes consumed. */
static size_t step(struct scr *s, const unsigned char *p, size_t n)
{
    size_t u;

    if (p[0] == 0x1B)
        return escape(s, p, n);
    if (p[0] == '\n') {
        flush_line(s, true);
        return 1;
    }
    if (p[0] == '\r') {
        if (n > 1 && p[1] == '\n') {
            flush_line(s, true);
            return 2;
        }
        s->cur = 0;
        return 1;
    }
    if (p[0] == '\b') {
        if (s->cur > 0)
            s->cur--;
        return 1;
    }
    if (p[0] == '\t') {
        put(s, "\t", 1);
        return 1;
    }
    if (p[0] < 0x20 || p[0] == 0x7F)
        return 1;
    if (p[0] < 0x80) {
        put(s, (const char *)p, 1);
        return 1;
    }
    u = utf8_len(p, n);
    if (u == 0) {
        put(s, "\xEF\xBF\xBD", 3);
        return 1;
    }
    put(s, (const char *)p, u);
    return u;
}

char *pty_screen_text(const char *data, size_t len)
{
    struct scr s;
    const unsigned char *p = (const unsigned char *)data;
    size_t i = 0;

    memset(&s, 0, sizeof(s));
    out_add(&s, "", 0);
    while (i < len && !s.oom)
        i += step(&s, p + i, len - i);
    flush_line(&s, false);
    free(s.line);
    if (s.oom) {
        free(s.out);
        return NULL;
    }
    return s.out;
}
