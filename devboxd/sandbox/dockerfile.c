/* Dockerfile parser for local blueprint builds (see dockerfile.h). */
#define _GNU_SOURCE
#include "dockerfile.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_STEPS 1000
#define MAX_WORDS 64

static const char *const kind_names[] = {"FROM", "RUN", "ENV", "WORKDIR", "USER", "ARG", "COPY"};
static const char *const known_other[] = {
    "ADD", "CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "VOLUME", "STOPSIGNAL", "HEALTHCHECK",
    "SHELL", "ONBUILD", "MAINTAINER", NULL,
};

const char *dockerfile_kind_name(enum df_kind kind)
{
    return kind_names[kind];
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void dockerfile_free(struct df_file *f)
{
    size_t i, j;

    for (i = 0; f->steps != NULL && i < f->n; i++) {
        struct df_step *s = &f->steps[i];

        free(s->text);
        free(s->arg);
        free(s->src);
        free(s->dst);
        for (j = 0; j < s->n_pairs; j++) {
            free(s->pairs[j].key);
            free(s->pairs[j].value);
        }
        free(s->pairs);
    }
    free(f->steps);
    f->steps = NULL;
    f->n = 0;
}

/* Splits s into shell-like words: quotes group, backslash escapes. */
static int split_words(const char *s, char **words, size_t max, size_t *n)
{
    size_t len = strlen(s);
    char *buf = NULL;
    size_t b = 0;
    int in_word = 0;
    char quote = 0;
    size_t i;

    *n = 0;
    buf = malloc(len + 1);
    if (buf == NULL)
        return -1;
    for (i = 0; i <= len; i++) {
        char c = s[i];

        if (c == '\0' || (!quote && isspace((unsigned char)c))) {
            if (quote && c == '\0')
                goto bad;
            if (in_word) {
                if (*n == max)
                    goto bad;
                buf[b] = '\0';
                words[(*n)++] = strdup(buf);
                b = 0;
                in_word = 0;
            }
            continue;
        }
        in_word = 1;
        if (quote) {
            if (c == quote)
                quote = 0;
            else if (c == '\\' && quote == '"' && s[i + 1] != '\0')
                buf[b++] = s[++i];
            else
                buf[b++] = c;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '\\' && s[i + 1] != '\0') {
            buf[b++] = s[++i];
        } else {
            buf[b++] = c;
        }
    }
    free(buf);
    return 0;
bad:
    free(buf);
    while (*n > 0)
        free(words[--(*n)]);
    return -1;
}

static void free_words(char **words, size_t n)
{
    while (n > 0)
        free(words[--n]);
}

static int valid_name(const char *s)
{
    size_t i;

    if (s == NULL || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (i = 1; s[i] != '\0'; i++) {
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return 0;
    }
    return 1;
}

static int add_pair(struct df_step *st, const char *key, size_t keylen, const char *value)
{
    struct df_pair *p = realloc(st->pairs, (st->n_pairs + 1) * sizeof(*p));

    if (p == NULL)
        return -1;
    st->pairs = p;
    p[st->n_pairs].key = strndup(key, keylen);
    p[st->n_pairs].value = value != NULL ? strdup(value) : NULL;
    st->n_pairs++;
    return 0;
}

/* ENV K=V [K2=V2...] or the legacy ENV K V; ARG K[=V]. */
static int parse_pairs(struct df_step *st, const char *rest, int is_arg, char *err,
                       size_t errlen)
{
    char *w[MAX_WORDS];
    size_t n = 0, i;
    int rc = -1;
    const char *what = is_arg ? "ARG" : "ENV";

    if (split_words(rest, w, MAX_WORDS, &n) != 0 || n == 0)
        return fail(err, errlen, "line %d: %s needs NAME=value (check the quotes)", st->line,
                    what);
    if (!is_arg && n >= 2 && strchr(w[0], '=') == NULL) { /* legacy ENV K V */
        const char *v = rest + strspn(rest, " \t");

        v += strlen(w[0]);
        v += strspn(v, " \t");
        if (!valid_name(w[0])) {
            fail(err, errlen, "line %d: ENV name \"%s\" is not a valid variable name",
                 st->line, w[0]);
            goto out;
        }
        rc = add_pair(st, w[0], strlen(w[0]), v);
        goto out;
    }
    for (i = 0; i < n; i++) {
        char *eq = strchr(w[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - w[i]) : strlen(w[i]);
        char key[256];

        snprintf(key, sizeof(key), "%.*s", (int)(klen < 255 ? klen : 255), w[i]);
        if (!valid_name(key) || klen > 255) {
            fail(err, errlen, "line %d: %s name \"%s\" is not a valid variable name "
                 "(letters, digits and _)", st->line, what, key);
            goto out;
        }
        if (eq == NULL && !is_arg) {
            fail(err, errlen, "line %d: ENV %s has no value; write ENV %s=value", st->line,
                 key, key);
            goto out;
        }
        if (add_pair(st, w[i], klen, eq != NULL ? eq + 1 : NULL) != 0)
            goto out;
    }
    rc = 0;
out:
    free_words(w, n);
    return rc;
}

static char *shell_join(const cJSON *arr)
{
    const cJSON *it = NULL;
    size_t cap = 1;
    char *out = NULL;
    size_t o = 0;

    cJSON_ArrayForEach(it, arr)
        cap += strlen(it->valuestring) * 4 + 3;
    out = malloc(cap);
    if (out == NULL)
        return NULL;
    cJSON_ArrayForEach(it, arr) {
        const char *p;

        if (o > 0)
            out[o++] = ' ';
        out[o++] = '\'';
        for (p = it->valuestring; *p; p++) {
            if (*p == '\'') {
                memcpy(out + o, "'\\''", 4);
                o += 4;
            } else {
                out[o++] = *p;
            }
        }
        out[o++] = '\'';
    }
    out[o] = '\0';
    return out;
}

/* RUN in shell form, or exec form ["prog", "arg"...]. */
static int parse_run(struct df_step *st, const char *rest, char *err, size_t errlen)
{
    cJSON *arr = NULL;
    const cJSON *it = NULL;

    /* buildah reads these as flags; here they would be the command. */
    if (strncmp(rest, "--", 2) == 0) {
        size_t len = strcspn(rest, " \t=");

        return fail(err, errlen,
                    "line %d: RUN option %.*s is not supported by the native "
                    "builder (RLMCP_BUILDER=native); remove it, or build with "
                    "buildah",
                    st->line, (int)(len < 64 ? len : 64), rest);
    }
    if (rest[0] != '[') {
        st->arg = strdup(rest);
        return st->arg != NULL ? 0 : -1;
    }
    arr = cJSON_Parse(rest);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        cJSON_Delete(arr);
        return fail(err, errlen, "line %d: RUN [...] must be a JSON array of strings",
                    st->line);
    }
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it)) {
            cJSON_Delete(arr);
            return fail(err, errlen, "line %d: RUN [...] must be a JSON array of strings",
                        st->line);
        }
    }
    st->arg = shell_join(arr);
    cJSON_Delete(arr);
    return st->arg != NULL ? 0 : -1;
}

static int parse_copy(struct df_step *st, const char *rest, char *err, size_t errlen)
{
    char *w[MAX_WORDS];
    size_t n = 0;
    int rc = -1;

    if (split_words(rest, w, MAX_WORDS, &n) != 0)
        return fail(err, errlen, "line %d: COPY has unbalanced quotes", st->line);
    if (n > 0 && strncmp(w[0], "--", 2) == 0) {
        fail(err, errlen, "line %d: COPY option %s is not supported by the local engine; "
             "write COPY <file_mounts path> <destination>", st->line, w[0]);
        goto out;
    }
    if (n != 2) {
        fail(err, errlen, "line %d: COPY takes one source (a file_mounts path) and one "
             "destination, got %zu arguments", st->line, n);
        goto out;
    }
    st->src = strdup(w[0]);
    st->dst = strdup(w[1]);
    rc = 0;
out:
    free_words(w, n);
    return rc;
}

static int parse_single(struct df_step *st, const char *rest, const char *what, char *err,
                        size_t errlen)
{
    char *w[MAX_WORDS];
    size_t n = 0;

    if (split_words(rest, w, MAX_WORDS, &n) != 0 || n != 1) {
        free_words(w, n);
        return fail(err, errlen, "line %d: %s takes exactly one value", st->line, what);
    }
    st->arg = w[0];
    return 0;
}

static int parse_from(struct df_step *st, const char *rest, char *err, size_t errlen)
{
    char *w[MAX_WORDS];
    size_t n = 0;
    int rc = -1;

    if (split_words(rest, w, MAX_WORDS, &n) != 0 || n == 0) {
        fail(err, errlen, "line %d: FROM needs an image", st->line);
        goto out;
    }
    if (strncmp(w[0], "--", 2) == 0) {
        fail(err, errlen, "line %d: FROM option %s is not supported by the local engine",
             st->line, w[0]);
        goto out;
    }
    if (n != 1 && !(n == 3 && strcasecmp(w[1], "AS") == 0)) {
        fail(err, errlen, "line %d: write FROM <image> [AS name]", st->line);
        goto out;
    }
    st->arg = strdup(w[0]);
    rc = 0;
out:
    free_words(w, n);
    return rc;
}

static int lookup_kind(const char *word, enum df_kind *kind)
{
    size_t i;

    for (i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
        if (strcasecmp(word, kind_names[i]) == 0) {
            *kind = (enum df_kind)i;
            return 0;
        }
    }
    return -1;
}

static int parse_instruction(struct df_file *f, const char *text, int line, int *seen_from,
                             char *err, size_t errlen)
{
    char word[32];
    size_t wl = strcspn(text, " \t");
    const char *rest = text + wl;
    struct df_step *st = NULL;
    enum df_kind kind;
    size_t i;
    int rc;

    rest += strspn(rest, " \t");
    snprintf(word, sizeof(word), "%.*s", (int)(wl < 31 ? wl : 31), text);
    if (lookup_kind(word, &kind) != 0) {
        for (i = 0; known_other[i] != NULL; i++) {
            if (strcasecmp(word, known_other[i]) == 0)
                return fail(err, errlen, "line %d: %s is not supported by the local engine "
                            "(supported: FROM, RUN, ENV, WORKDIR, USER, ARG, COPY); remove "
                            "it or do it with RUN", line, known_other[i]);
        }
        return fail(err, errlen, "line %d: unknown instruction \"%s\" (supported: FROM, RUN, "
                    "ENV, WORKDIR, USER, ARG, COPY)", line, word);
    }
    if (rest[0] == '\0')
        return fail(err, errlen, "line %d: %s needs an argument", line, kind_names[kind]);
    if (kind == DF_FROM && *seen_from)
        return fail(err, errlen, "line %d: a second FROM (multi-stage build) is not supported "
                    "by the local engine", line);
    if (kind != DF_FROM && kind != DF_ARG && !*seen_from)
        return fail(err, errlen, "line %d: %s before FROM; start the Dockerfile with FROM",
                    line, kind_names[kind]);
    if (f->n == MAX_STEPS)
        return fail(err, errlen, "line %d: more than %d instructions", line, MAX_STEPS);
    st = &f->steps[f->n];
    memset(st, 0, sizeof(*st));
    st->kind = kind;
    st->line = line;
    st->text = strdup(text);
    f->n++;
    switch (kind) {
    case DF_FROM: rc = parse_from(st, rest, err, errlen); *seen_from = 1; break;
    case DF_RUN: rc = parse_run(st, rest, err, errlen); break;
    case DF_ENV: rc = parse_pairs(st, rest, 0, err, errlen); break;
    case DF_ARG: rc = parse_pairs(st, rest, 1, err, errlen); break;
    case DF_COPY: rc = parse_copy(st, rest, err, errlen); break;
    case DF_WORKDIR: rc = parse_single(st, rest, "WORKDIR", err, errlen); break;
    case DF_USER: rc = parse_single(st, rest, "USER", err, errlen); break;
    default: rc = -1; break;
    }
    return rc;
}

/* Joins continuation lines into one instruction; returns the next line start. */
static const char *next_logical(const char *p, char *buf, size_t cap, int *lines)
{
    size_t b = 0;

    *lines = 0;
    buf[0] = '\0';
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        const char *s = p;
        int cont;

        (*lines)++;
        while (len > 0 && (s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        while (len > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        p = nl != NULL ? nl + 1 : p + strlen(p);
        if (len > 0 && s[0] == '#' && b > 0)
            continue; /* comment inside a continued instruction */
        if (len > 0 && s[0] == '#' && b == 0)
            return p;
        cont = len > 0 && s[len - 1] == '\\';
        if (cont)
            len--;
        while (cont && len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (b + len + 2 >= cap)
            len = cap - b - 2;
        if (b > 0 && len > 0)
            buf[b++] = ' ';
        memcpy(buf + b, s, len);
        b += len;
        buf[b] = '\0';
        if (!cont)
            break;
    }
    return p;
}

int dockerfile_parse(const char *text, struct df_file *out, char *err, size_t errlen)
{
    const char *p = text;
    char *buf = NULL;
    size_t tlen;
    int line = 1;
    int seen_from = 0;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    if (text == NULL || (tlen = strlen(text)) > DOCKERFILE_MAX)
        return fail(err, errlen, "the dockerfile must be text of at most %u bytes",
                    DOCKERFILE_MAX);
    out->steps = calloc(MAX_STEPS, sizeof(*out->steps));
    /* A logical line is never longer than the text it joins. */
    buf = malloc(tlen + 2);
    if (out->steps == NULL || buf == NULL) {
        fail(err, errlen, "out of memory");
        goto out;
    }
    while (*p != '\0') {
        int used = 0;

        p = next_logical(p, buf, tlen + 2, &used);
        if (buf[0] != '\0' && parse_instruction(out, buf, line, &seen_from, err, errlen) != 0)
            goto out;
        line += used;
    }
    if (!seen_from) {
        fail(err, errlen, "the dockerfile has no FROM; start it with FROM "
             "runloop:runloop/starter-x86_64 (or runloop:<blueprint id or name>)");
        goto out;
    }
    rc = 0;
out:
    free(buf);
    if (rc != 0)
        dockerfile_free(out);
    return rc;
}
