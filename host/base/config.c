/*
 * config.c - the deployment file: libyaml document -> struct host_config.
 *
 * The whole file is loaded as a libyaml document first, so every node keeps
 * its position for error messages, then each section is walked with a
 * fixed list of allowed keys. Values never appear in messages for secret
 * keys; enum and type errors quote only non-secret values.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "rlmcp/plugin.h"
#include "secret.h"
#include "strbuf.h"
#include "suggest.h"

#define DEFAULT_LISTEN "127.0.0.1:8000"

struct ctx {
    const char *file;
    yaml_document_t doc;
    char *err;
    size_t errlen;
    bool failed;
    size_t json_nodes; /* converted so far: aliases must not explode */
    /* While a plugin's config: converts: where each value was written. */
    struct host_plugin_config *marks_to;
    size_t marks_cap; /* allocated in marks_to->config_marks */
    char mpath[512];
    size_t mplen;
};

/* YAML aliases can make a small file expand exponentially. */
#define MAX_JSON_NODES 100000

/* ---- errors ----------------------------------------------------------- */

static void fail_at(struct ctx *c, unsigned line, unsigned col, const char *fmt,
                    ...) RLMCP_PRINTF(4, 5);
static void fail_at(struct ctx *c, unsigned line, unsigned col, const char *fmt,
                    ...)
{
    va_list ap;
    int n = 0;

    if (c->failed || c->err == NULL || c->errlen == 0) {
        c->failed = true;
        return;
    }
    c->failed = true;
    n = snprintf(c->err, c->errlen, "%s:%u:%u: ", c->file, line, col);
    if (n < 0 || (size_t)n >= c->errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

#define FAIL(c, node, ...)                                                     \
    fail_at((c), (unsigned)(node)->start_mark.line + 1,                        \
            (unsigned)(node)->start_mark.column + 1, __VA_ARGS__)

static struct config_pos pos_of(const yaml_node_t *n)
{
    struct config_pos p = {(unsigned)n->start_mark.line + 1,
                           (unsigned)n->start_mark.column + 1};
    return p;
}

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

/* ---- suggestions ------------------------------------------------------- */

const char *config_suggest(const char *word, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_d = 3;
    size_t i = 0;

    if (word == NULL || candidates == NULL)
        return NULL;
    for (i = 0; candidates[i] != NULL; i++) {
        size_t d = suggest_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}

static void join_names(const char *const *names, char *out, size_t outlen)
{
    size_t used = 0;
    size_t i = 0;

    out[0] = '\0';
    for (i = 0; names[i] != NULL; i++) {
        int n = snprintf(out + used, outlen - used, "%s%s", i ? ", " : "",
                         names[i]);
        if (n < 0 || (size_t)n >= outlen - used)
            return;
        used += (size_t)n;
    }
}

/* ---- scalars ----------------------------------------------------------- */

static bool is_env_name_char(char ch, bool first)
{
    if (ch == '_' || isalpha((unsigned char)ch))
        return true;
    return !first && isdigit((unsigned char)ch);
}

/*
 * One ${...} reference starting at s (pointing at '$'). Appends its value
 * to b and returns the number of input bytes used, or 0 on error.
 */
static size_t expand_ref(struct ctx *c, const yaml_node_t *n, const char *s,
                         struct strbuf *b)
{
    const char *name = s + 2;
    const char *p = name;
    const char *end = NULL;
    const char *val = NULL;
    char var[256];
    size_t nlen = 0;

    while (*p != '\0' && is_env_name_char(*p, p == name))
        p++;
    nlen = (size_t)(p - name);
    end = strchr(p, '}');
    if (end == NULL) {
        FAIL(c, n,
             "unterminated '${' in a value; close it with '}' or write '$$' "
             "for a literal '$'");
        return 0;
    }
    if (nlen == 0 || nlen >= sizeof(var)) {
        FAIL(c, n,
             "bad environment reference '%.*s'; write ${NAME}, "
             "${NAME:-default} or ${NAME:?message}",
             (int)(end - s + 1), s);
        return 0;
    }
    memcpy(var, name, nlen);
    var[nlen] = '\0';
    val = getenv(var);
    if (p == end) {
        /* ${NAME}: unset expands to nothing, as in a shell. */
        if (val != NULL && strbuf_add(b, val, strlen(val)) < 0)
            return 0;
    } else if (p[0] == ':' && (p[1] == '-' || p[1] == '?')) {
        bool empty = val == NULL || val[0] == '\0';
        const char *alt = p + 2;
        size_t alen = (size_t)(end - alt);
        if (!empty) {
            if (strbuf_add(b, val, strlen(val)) < 0)
                return 0;
        } else if (p[1] == '-') {
            if (strbuf_add(b, alt, alen) < 0)
                return 0;
        } else {
            FAIL(c, n, "environment variable %s is not set: %.*s", var,
                 (int)alen, alen ? alt : "set it before starting runloop-mcp");
            return 0;
        }
    } else {
        FAIL(c, n,
             "bad environment reference '%.*s'; write ${NAME}, "
             "${NAME:-default} or ${NAME:?message}",
             (int)(end - s + 1), s);
        return 0;
    }
    return (size_t)(end - s) + 1;
}

/* The scalar's text with ${VAR} expanded; malloc'd, NULL on error. */
static char *scalar_expand(struct ctx *c, const yaml_node_t *n)
{
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    struct strbuf b = {0};
    size_t i = 0;

    if (strbuf_add(&b, "", 0) < 0)
        goto oom;
    if (memchr(s, '\0', len) != NULL) {
        FAIL(c, n, "a value contains a NUL character; remove it");
        goto out;
    }
    while (i < len) {
        if (s[i] == '$' && i + 1 < len && s[i + 1] == '$') {
            if (strbuf_add(&b, "$", 1) < 0)
                goto oom;
            i += 2;
        } else if (s[i] == '$' && i + 1 < len && s[i + 1] == '{') {
            size_t used = expand_ref(c, n, s + i, &b);
            if (used == 0)
                goto out;
            i += used;
        } else {
            if (strbuf_add(&b, s + i, 1) < 0)
                goto oom;
            i++;
        }
    }
    return b.p;
oom:
    FAIL(c, n, "out of memory");
out:
    free(b.p);
    return NULL;
}

static bool is_plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE &&
           n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static bool plain_is_null(const yaml_node_t *n, const char *v)
{
    return is_plain(n) &&
           (v[0] == '\0' || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0);
}

static const char *key_text(const yaml_node_t *k)
{
    return k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value
                                       : "?";
}

/* A scalar's expanded text (malloc'd), or NULL after "'what' must be
 * <expected>, not <kind>" or an expansion error. */
static char *scalar_text(struct ctx *c, const yaml_node_t *n, const char *what,
                         const char *expected)
{
    if (n->type != YAML_SCALAR_NODE) {
        FAIL(c, n, "'%s' must be %s, not %s", what, expected, node_kind(n));
        return NULL;
    }
    return scalar_expand(c, n);
}

/* Require a scalar; *out is the expanded text or NULL for a YAML null. */
static int get_string(struct ctx *c, const yaml_node_t *n, const char *what,
                      char **out)
{
    char *v = scalar_text(c, n, what, "a string");

    if (v == NULL)
        return -1;
    if (plain_is_null(n, v)) {
        free(v);
        v = NULL;
    }
    free(*out);
    *out = v;
    return 0;
}

static int parse_bool_text(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", NULL};
    static const char *const no[] = {"false", "no", "off", NULL};
    size_t i = 0;

    for (i = 0; yes[i] != NULL; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

static int get_bool(struct ctx *c, const yaml_node_t *n, const char *what,
                    bool *out)
{
    char *v = scalar_text(c, n, what, "true or false");
    int rc = -1;

    if (v == NULL)
        return -1;
    if (parse_bool_text(v, out) < 0) {
        FAIL(c, n, "'%s' must be true or false, not '%s'", what, v);
        goto out;
    }
    rc = 0;
out:
    free(v);
    return rc;
}

static int get_uint(struct ctx *c, const yaml_node_t *n, const char *what,
                    unsigned long long min, unsigned long long max,
                    unsigned long long *out)
{
    char *v = scalar_text(c, n, what, "a whole number");
    char *end = NULL;
    unsigned long long x = 0;
    int rc = -1;

    if (v == NULL)
        return -1;
    errno = 0;
    if (!isdigit((unsigned char)v[0]))
        goto bad;
    x = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0')
        goto bad;
    if (x < min || x > max) {
        FAIL(c, n, "'%s' is %llu; it must be between %llu and %llu", what, x,
             min, max);
        goto out;
    }
    *out = x;
    rc = 0;
    goto out;
bad:
    FAIL(c, n, "'%s' must be a whole number (e.g. %llu), not '%s'", what,
         min > 1 ? min : 1, v);
out:
    free(v);
    return rc;
}

/* names: NULL-terminated; *out gets the index. */
static int get_enum(struct ctx *c, const yaml_node_t *n, const char *what,
                    const char *const *names, int *out)
{
    char *v = NULL;
    char allowed[256];
    const char *hint = NULL;
    int rc = -1;
    int i = 0;

    join_names(names, allowed, sizeof(allowed));
    if (n->type != YAML_SCALAR_NODE) {
        FAIL(c, n, "'%s' must be one of: %s; not %s", what, allowed,
             node_kind(n));
        return -1;
    }
    v = scalar_expand(c, n);
    if (v == NULL)
        return -1;
    for (i = 0; names[i] != NULL; i++) {
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            rc = 0;
            goto out;
        }
    }
    hint = config_suggest(v, names);
    if (hint != NULL)
        FAIL(c, n, "'%s' is '%s'; did you mean '%s'? (allowed: %s)", what, v,
             hint, allowed);
    else
        FAIL(c, n, "'%s' is '%s'; it must be one of: %s", what, v, allowed);
out:
    free(v);
    return rc;
}

/* ---- mappings ---------------------------------------------------------- */

static yaml_node_t *node_at(struct ctx *c, int id)
{
    return yaml_document_get_node(&c->doc, id);
}

/* Checks a mapping: string keys, no duplicates. */
static int check_mapping(struct ctx *c, const yaml_node_t *n,
                         const char *section)
{
    yaml_node_pair_t *a = NULL;
    yaml_node_pair_t *b = NULL;

    if (n->type != YAML_MAPPING_NODE) {
        FAIL(c, n, "'%s' must be a mapping (key: value lines), not %s", section,
             node_kind(n));
        return -1;
    }
    for (a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
        yaml_node_t *ka = node_at(c, a->key);
        if (ka->type != YAML_SCALAR_NODE) {
            FAIL(c, ka, "keys in '%s' must be plain words, not %s", section,
                 node_kind(ka));
            return -1;
        }
        for (b = n->data.mapping.pairs.start; b < a; b++) {
            yaml_node_t *kb = node_at(c, b->key);
            if (strcmp(key_text(ka), key_text(kb)) == 0) {
                FAIL(c, ka,
                     "duplicate key '%s' in '%s' (first at line %u); keep one",
                     key_text(ka), section, (unsigned)kb->start_mark.line + 1);
                return -1;
            }
        }
    }
    return 0;
}

/* Index of key in allowed, or -1 after an "unknown key" error. */
static int key_index(struct ctx *c, const yaml_node_t *k, const char *section,
                     const char *const *allowed)
{
    char list[512];
    const char *hint = NULL;
    int i = 0;

    for (i = 0; allowed[i] != NULL; i++) {
        if (strcmp(key_text(k), allowed[i]) == 0)
            return i;
    }
    join_names(allowed, list, sizeof(list));
    hint = config_suggest(key_text(k), allowed);
    if (hint != NULL)
        FAIL(c, k, "unknown key '%s' in '%s'; did you mean '%s'? (allowed: %s)",
             key_text(k), section, hint, list);
    else
        FAIL(c, k, "unknown key '%s' in '%s' (allowed: %s)", key_text(k),
             section, list);
    return -1;
}

#define FOR_PAIRS(c, map, k, v)                                                \
    for (yaml_node_pair_t *p_ = (map)->data.mapping.pairs.start;               \
         p_ < (map)->data.mapping.pairs.top &&                                 \
         ((k) = node_at((c), p_->key), (v) = node_at((c), p_->value), 1);      \
         p_++)

/* ---- YAML -> JSON (plugin config, raw http section) -------------------- */

/* p past one or more digits, or NULL when p has none. */
static const char *skip_digits(const char *p)
{
    if (!isdigit((unsigned char)*p))
        return NULL;
    while (isdigit((unsigned char)*p))
        p++;
    return p;
}

static bool looks_numeric(const char *v)
{
    const char *p = v;

    if (*p == '-' || *p == '+')
        p++;
    p = skip_digits(p);
    if (p != NULL && *p == '.')
        p = skip_digits(p + 1);
    if (p != NULL && (*p == 'e' || *p == 'E')) {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        p = skip_digits(p);
    }
    return p != NULL && *p == '\0';
}

static cJSON *scalar_to_json(struct ctx *c, const yaml_node_t *n)
{
    char *v = scalar_expand(c, n);
    cJSON *j = NULL;
    bool bv = false;

    if (v == NULL)
        return NULL;
    if (!is_plain(n))
        j = cJSON_CreateString(v);
    else if (plain_is_null(n, v))
        j = cJSON_CreateNull();
    else if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0 ||
             strcmp(v, "True") == 0 || strcmp(v, "False") == 0) {
        parse_bool_text(v, &bv);
        j = cJSON_CreateBool(bv);
    } else if (looks_numeric(v))
        j = cJSON_CreateNumber(strtod(v, NULL));
    else
        j = cJSON_CreateString(v);
    free(v);
    if (j == NULL)
        FAIL(c, n, "out of memory");
    return j;
}

/* Record n's position under the current path (a path too long to keep
 * is not recorded: its errors point at the nearest recorded parent). */
static int mark_add(struct ctx *c, const yaml_node_t *n)
{
    struct host_plugin_config *p = c->marks_to;
    struct config_mark *v = NULL;

    if (p == NULL || c->mplen >= sizeof(c->mpath) - 1)
        return 0;
    if (p->n_config_marks == c->marks_cap) {
        size_t cap = c->marks_cap ? c->marks_cap * 2 : 16;

        v = realloc(p->config_marks, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        p->config_marks = v;
        c->marks_cap = cap;
    }
    v = p->config_marks;
    v[p->n_config_marks].path = strdup(c->mpath);
    if (v[p->n_config_marks].path == NULL)
        return -1;
    v[p->n_config_marks++].pos = pos_of(n);
    return 0;
}

/* Append ".key" or "[i]" to the mark path; returns the length to restore. */
static size_t mark_push(struct ctx *c, const char *key, size_t index)
{
    size_t old = c->mplen;
    int n = 0;

    if (c->marks_to == NULL)
        return old;
    if (key != NULL)
        n = snprintf(c->mpath + old, sizeof(c->mpath) - old, ".%s", key);
    else
        n = snprintf(c->mpath + old, sizeof(c->mpath) - old, "[%zu]", index);
    c->mplen = n < 0 ? sizeof(c->mpath) - 1 : old + (size_t)n;
    if (c->mplen > sizeof(c->mpath) - 1)
        c->mplen = sizeof(c->mpath) - 1;
    return old;
}

static void mark_pop(struct ctx *c, size_t old)
{
    if (c->marks_to == NULL)
        return;
    c->mplen = old;
    c->mpath[old] = '\0';
}

/* "PATH: unknown property 'KEY' ..." is about PATH.KEY, which has a mark. */
static const struct config_mark *
mark_of_unknown(const struct host_plugin_config *p, const char *msg)
{
    const char *colon =
        msg != NULL ? strstr(msg, ": unknown property '") : NULL;
    const char *key = NULL;
    const char *end = NULL;
    size_t i = 0;

    if (colon == NULL)
        return NULL;
    key = colon + strlen(": unknown property '");
    end = strchr(key, '\'');
    for (i = 0; end != NULL && i < p->n_config_marks; i++) {
        const char *path = p->config_marks[i].path;
        size_t plen = (size_t)(colon - msg);
        size_t klen = (size_t)(end - key);

        if (strlen(path) == plen + 1 + klen && strncmp(path, msg, plen) == 0 &&
            path[plen] == '.' && strncmp(path + plen + 1, key, klen) == 0)
            return &p->config_marks[i];
    }
    return NULL;
}

struct config_pos config_mark_find(const struct host_plugin_config *p,
                                   const char *msg)
{
    const struct config_mark *unknown = mark_of_unknown(p, msg);
    struct config_pos best = p->pos;
    size_t best_len = 0;
    size_t i = 0;

    if (unknown != NULL)
        return unknown->pos;
    for (i = 0; msg != NULL && i < p->n_config_marks; i++) {
        const char *path = p->config_marks[i].path;
        size_t n = strlen(path);

        if (n > best_len && strncmp(msg, path, n) == 0 &&
            strchr(":.[", msg[n]) != NULL && msg[n] != '\0') {
            best = p->config_marks[i].pos;
            best_len = n;
        }
    }
    return best;
}

static cJSON *node_to_json(struct ctx *c, const yaml_node_t *n, int depth,
                           const char *section)
{
    size_t mark = 0;
    size_t index = 0;

    cJSON *j = NULL;
    yaml_node_t *k = NULL;
    yaml_node_t *v = NULL;

    if (depth > 64) {
        FAIL(c, n, "'%s' is nested more than 64 levels deep; flatten it",
             section);
        return NULL;
    }
    if (++c->json_nodes > MAX_JSON_NODES) {
        FAIL(c, n,
             "'%s' expands to more than %d values (YAML aliases?); make it "
             "smaller",
             section, MAX_JSON_NODES);
        return NULL;
    }
    if (mark_add(c, n) < 0)
        goto oom;
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return scalar_to_json(c, n);
    case YAML_SEQUENCE_NODE:
        j = cJSON_CreateArray();
        if (j == NULL)
            goto oom;
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top; it++) {
            cJSON *e = NULL;

            mark = mark_push(c, NULL, index++);
            e = node_to_json(c, node_at(c, *it), depth + 1, section);
            mark_pop(c, mark);
            if (e == NULL)
                goto err;
            cJSON_AddItemToArray(j, e);
        }
        return j;
    case YAML_MAPPING_NODE:
        if (check_mapping(c, n, section) < 0)
            return NULL;
        j = cJSON_CreateObject();
        if (j == NULL)
            goto oom;
        FOR_PAIRS(c, n, k, v)
        {
            cJSON *e = NULL;

            mark = mark_push(c, key_text(k), 0);
            e = node_to_json(c, v, depth + 1, section);
            mark_pop(c, mark);
            if (e == NULL)
                goto err;
            cJSON_AddItemToObject(j, key_text(k), e);
        }
        return j;
    default:
        FAIL(c, n, "empty value in '%s'", section);
        return NULL;
    }
oom:
    FAIL(c, n, "out of memory");
err:
    cJSON_Delete(j);
    return NULL;
}

static char *node_to_json_text(struct ctx *c, const yaml_node_t *n,
                               const char *section)
{
    cJSON *j = node_to_json(c, n, 0, section);
    char *s = NULL;

    if (j == NULL)
        return NULL;
    s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (s == NULL)
        FAIL(c, n, "out of memory");
    return s;
}

/* ---- lists of strings -------------------------------------------------- */

static int get_name_list(struct ctx *c, const yaml_node_t *n, const char *what,
                         struct config_name **out, size_t *n_out)
{
    size_t cap = 0;
    size_t i = 0;
    struct config_name *list = NULL;

    if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0 &&
        is_plain(n)) {
        *out = NULL;
        *n_out = 0;
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE) {
        FAIL(c, n, "'%s' must be a list, e.g. [a, b], not %s", what,
             node_kind(n));
        return -1;
    }
    cap = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    list = calloc(cap ? cap : 1, sizeof(*list));
    if (list == NULL) {
        FAIL(c, n, "out of memory");
        return -1;
    }
    for (i = 0; i < cap; i++) {
        yaml_node_t *e = node_at(c, n->data.sequence.items.start[i]);
        char *s = NULL;
        if (e->type != YAML_SCALAR_NODE) {
            FAIL(c, e, "entries of '%s' must be names, not %s", what,
                 node_kind(e));
            goto err;
        }
        if (get_string(c, e, what, &s) < 0)
            goto err;
        if (s == NULL) {
            FAIL(c, e, "empty entry in '%s'; remove it or write a name", what);
            goto err;
        }
        list[i].name = s;
        list[i].pos = pos_of(e);
    }
    *out = list;
    *n_out = cap;
    return 0;
err:
    for (i = 0; i < cap; i++)
        free(list[i].name);
    free(list);
    return -1;
}

/* A list of strings as a NULL-terminated array (replacing *out). */
static int get_string_array(struct ctx *c, const yaml_node_t *n,
                            const char *what, char ***out, size_t *n_out)
{
    struct config_name *list = NULL;
    size_t count = 0;
    size_t i = 0;
    char **arr = NULL;

    if (get_name_list(c, n, what, &list, &count) < 0)
        return -1;
    arr = calloc(count + 1, sizeof(char *));
    if (arr == NULL) {
        for (i = 0; i < count; i++)
            free(list[i].name);
        free(list);
        FAIL(c, n, "out of memory");
        return -1;
    }
    for (i = 0; i < count; i++)
        arr[i] = list[i].name;
    free(list);
    for (i = 0; i < *n_out; i++)
        free((*out)[i]);
    free(*out);
    *out = arr;
    *n_out = count;
    return 0;
}

/* ---- sections ---------------------------------------------------------- */

static bool valid_listen(const char *s)
{
    const char *colon = strrchr(s, ':');
    char *end = NULL;
    unsigned long port = 0;

    if (colon == NULL || colon == s)
        return false;
    if (s[0] == '[' && colon[-1] != ']')
        return false;
    errno = 0;
    port = strtoul(colon + 1, &end, 10);
    return colon[1] != '\0' && *end == '\0' && errno == 0 && port <= 65535;
}

/* How a section's key is read into the section's struct. */
enum field_kind {
    FIELD_STRING,  /* char *; a YAML null is NULL */
    FIELD_UNSET,   /* char *; empty is NULL too (secrets, "${VAR:-}") */
    FIELD_BOOL,    /* bool */
    FIELD_UINT,    /* unsigned, in [min, max] */
    FIELD_SIZE,    /* size_t, in [min, max] */
    FIELD_ULL,     /* unsigned long long, in [min, max] */
    FIELD_ENUM,    /* an enum: the index of the value in names */
    FIELD_STRINGS, /* char ** (NULL-terminated), its count at count_off */
    FIELD_NAMES,   /* struct config_name *, its count at count_off */
    FIELD_PARSE,   /* parse() reads it */
};

/* The enums of the sections are stored as int (FIELD_ENUM). */
_Static_assert(sizeof(enum host_transport) == sizeof(int) &&
                   sizeof(enum host_on_plugin_error) == sizeof(int) &&
                   sizeof(enum host_backend) == sizeof(int) &&
                   sizeof(enum host_metrics) == sizeof(int),
               "config enums are int-sized");

/* One key of a section; a table of them ends with a NULL key. */
struct field {
    const char *key;
    enum field_kind kind;
    size_t off;       /* the value in the section's struct */
    size_t count_off; /* FIELD_STRINGS, FIELD_NAMES: its count */
    unsigned long long min, max;
    const char *const *names; /* FIELD_ENUM */
    /* FIELD_PARSE: read v into base + off; -1 after the error. */
    int (*parse)(struct ctx *c, const yaml_node_t *v, void *at);
    /* Then, when set: what else the value must be; -1 after the error. */
    int (*check)(struct ctx *c, const yaml_node_t *v, void *base);
};

#define MAX_FIELDS 16
/* A row's start: the key, how it is read, its member of struct
 * host_<section>_config. */
#define KEY(section, k, kd, member)                                            \
    .key = k, .kind = kd,                                                      \
    .off = offsetof(struct host_##section##_config, member)

static void store_uint(enum field_kind kind, void *at, unsigned long long x)
{
    if (kind == FIELD_UINT)
        *(unsigned *)at = (unsigned)x;
    else if (kind == FIELD_SIZE)
        *(size_t *)at = (size_t)x;
    else
        *(unsigned long long *)at = x;
}

static int read_string(struct ctx *c, const struct field *f,
                       const yaml_node_t *v, const char *what, char **at)
{
    if (get_string(c, v, what, at) < 0)
        return -1;
    if (f->kind == FIELD_UNSET && *at != NULL && (*at)[0] == '\0') {
        free(*at);
        *at = NULL;
    }
    return 0;
}

/* The value v of key f (in section) into base. */
static int read_field(struct ctx *c, const char *section, const struct field *f,
                      const yaml_node_t *v, void *base)
{
    char *at = (char *)base + f->off;
    size_t *count = (size_t *)((char *)base + f->count_off);
    char what[128];
    unsigned long long x = 0;
    int e = 0;
    int rc = -1;

    snprintf(what, sizeof(what), "%s.%s", section, f->key);
    switch (f->kind) {
    case FIELD_STRING:
    case FIELD_UNSET:
        rc = read_string(c, f, v, what, (char **)at);
        break;
    case FIELD_BOOL:
        rc = get_bool(c, v, what, (bool *)at);
        break;
    case FIELD_UINT:
    case FIELD_SIZE:
    case FIELD_ULL:
        rc = get_uint(c, v, what, f->min, f->max, &x);
        if (rc == 0)
            store_uint(f->kind, at, x);
        break;
    case FIELD_ENUM:
        rc = get_enum(c, v, what, f->names, &e);
        if (rc == 0)
            *(int *)at = e;
        break;
    case FIELD_STRINGS:
        rc = get_string_array(c, v, what, (char ***)at, count);
        break;
    case FIELD_NAMES:
        rc = get_name_list(c, v, what, (struct config_name **)at, count);
        break;
    case FIELD_PARSE:
        rc = f->parse(c, v, at);
        break;
    }
    if (rc == 0 && f->check != NULL)
        rc = f->check(c, v, base);
    return rc;
}

/* Section n (a mapping) by its table of keys into base. */
static int parse_fields(struct ctx *c, const yaml_node_t *n,
                        const char *section, const struct field *fields,
                        void *base)
{
    const char *keys[MAX_FIELDS + 1];
    yaml_node_t *k = NULL;
    yaml_node_t *v = NULL;
    size_t i = 0;
    int at = 0;

    for (i = 0; i < MAX_FIELDS && fields[i].key != NULL; i++)
        keys[i] = fields[i].key;
    keys[i] = NULL;
    if (check_mapping(c, n, section) < 0)
        return -1;
    FOR_PAIRS(c, n, k, v)
    {
        at = key_index(c, k, section, keys);
        if (at < 0 || read_field(c, section, &fields[at], v, base) < 0)
            return -1;
    }
    return 0;
}

static int check_listen(struct ctx *c, const yaml_node_t *v, void *base)
{
    const struct host_http_config *h = base;

    if (h->listen == NULL || !valid_listen(h->listen)) {
        FAIL(c, v,
             "'server.http.listen' must be HOST:PORT, e.g. "
             "127.0.0.1:8000");
        return -1;
    }
    return 0;
}

static int check_state_secret(struct ctx *c, const yaml_node_t *v, void *base)
{
    const struct host_http_config *h = base;

    /* A secret: get_string never quotes the value. */
    if (h->state_secret == NULL || strlen(h->state_secret) < 32) {
        FAIL(c, v,
             "'server.http.state_secret' must be at least 32 "
             "characters (e.g. the output of 'openssl rand -hex "
             "32'); every replica behind one balancer needs the "
             "same value");
        return -1;
    }
    return 0;
}

/*
 * Remember the environment variable auth_token refers to, so that
 * --check-config run without the secret (an image build, CI) can say the
 * token is needed at start instead of refusing a setting that holds.
 */
static int note_token_env(struct ctx *c, const yaml_node_t *v, void *base)
{
    struct host_http_config *h = base;
    const char *s = (const char *)v->data.scalar.value;
    const char *ref = NULL;
    size_t n = 0;

    (void)c;
    free(h->auth_token_env);
    h->auth_token_env = NULL;
    if (v->type != YAML_SCALAR_NODE)
        return 0;
    ref = strstr(s, "${");
    if (ref == NULL)
        return 0;
    ref += 2;
    while (ref[n] != '\0' && is_env_name_char(ref[n], n == 0))
        n++;
    if (n == 0)
        return 0;
    h->auth_token_env = strndup(ref, n);
    return 0;
}

/* Secrets (auth_token, state_secret) are FIELD_UNSET or checked without
 * quoting the value: get_string never quotes it. */
static const struct field http_fields[] = {
    {KEY(http, "listen", FIELD_STRING, listen), .check = check_listen},
    {KEY(http, "allowed_origins", FIELD_STRINGS, allowed_origins),
     .count_off = offsetof(struct host_http_config, n_allowed_origins)},
    {KEY(http, "auth_token", FIELD_UNSET, auth_token), .check = note_token_env},
    {KEY(http, "allow_query_key", FIELD_BOOL, allow_query_key)},
    {KEY(http, "max_body_bytes", FIELD_SIZE, max_body_bytes), .min = 1024,
     .max = 1ULL << 32},
    {KEY(http, "max_sessions", FIELD_UINT, max_sessions), .min = 1,
     .max = 1000000},
    {KEY(http, "session_idle_seconds", FIELD_UINT, session_idle_seconds),
     .min = 1, .max = 86400 * 30},
    {KEY(http, "max_connections", FIELD_UINT, max_connections), .min = 1,
     .max = 1000000},
    {KEY(http, "state_secret", FIELD_STRING, state_secret),
     .check = check_state_secret},
    {KEY(http, "metrics", FIELD_ENUM, metrics),
     .names = (const char *const[]){"private", "public", "off", NULL}},
    {KEY(http, "max_sessions_per_client", FIELD_UINT, max_sessions_per_client),
     .min = 1, .max = 1000000},
    {.key = NULL},
};

static int parse_http(struct ctx *c, const yaml_node_t *n, void *at)
{
    struct host_http_config *h = at;

    h->present = true;
    if (parse_fields(c, n, "server.http", http_fields, h) < 0)
        return -1;
    h->raw_json = node_to_json_text(c, n, "server.http");
    return h->raw_json == NULL ? -1 : 0;
}

static int check_server_name(struct ctx *c, const yaml_node_t *v, void *base)
{
    const struct host_server_config *s = base;

    if (s->name == NULL) {
        FAIL(c, v, "'server.name' is empty; write a name or remove the key");
        return -1;
    }
    return 0;
}

static const struct field server_fields[] = {
    {KEY(server, "name", FIELD_STRING, name), .check = check_server_name},
    {KEY(server, "transport", FIELD_ENUM, transport),
     .names = (const char *const[]){"stdio", "http", NULL}},
    {KEY(server, "http", FIELD_PARSE, http), .parse = parse_http},
    {KEY(server, "instructions", FIELD_STRING, instructions)},
    {.key = NULL},
};

static int keep_plugin_dir_pos(struct ctx *c, const yaml_node_t *v, void *base)
{
    struct host_host_config *h = base;

    h->plugin_dir_pos = pos_of(v);
    return 0;
}

static const struct field host_fields[] = {
    {KEY(host, "plugin_dir", FIELD_STRING, plugin_dir),
     .check = keep_plugin_dir_pos},
    {KEY(host, "on_plugin_error", FIELD_ENUM, on_plugin_error),
     .names = (const char *const[]){"fail", "skip", NULL}},
    {KEY(host, "call_timeout_ms", FIELD_UINT, call_timeout_ms), .min = 100,
     .max = 86400000ULL},
    {KEY(host, "workers", FIELD_UINT, workers), .min = 1, .max = 256},
    {KEY(host, "log_level", FIELD_ENUM, log_level),
     .names =
         (const char *const[]){"debug", "info", "notice", "warning", "error",
                               "critical", "alert", "emergency", NULL}},
    /* "${RLMCP_AUDIT_LOG:-}" unset: no audit log. */
    {KEY(host, "audit_log", FIELD_UNSET, audit_log)},
    {KEY(host, "audit_max_bytes", FIELD_ULL, audit_max_bytes), .min = 0,
     .max = 1ULL << 40},
    {KEY(host, "audit_keep", FIELD_UINT, audit_keep), .min = 0, .max = 100},
    {.key = NULL},
};

static int check_base_url(struct ctx *c, const yaml_node_t *v, void *base)
{
    const struct host_runloop_config *r = base;

    if (r->base_url != NULL && strncmp(r->base_url, "http://", 7) != 0 &&
        strncmp(r->base_url, "https://", 8) != 0 &&
        strncmp(r->base_url, "unix:", 5) != 0) {
        FAIL(c, v,
             "'runloop.base_url' must start with https://, http:// or "
             "unix:");
        return -1;
    }
    return 0;
}

static const struct field runloop_fields[] = {
    {KEY(runloop, "backend", FIELD_ENUM, backend),
     .names = (const char *const[]){"auto", "cloud", "local", NULL}},
    {KEY(runloop, "base_url", FIELD_STRING, base_url), .check = check_base_url},
    /* A secret: only its type is ever reported. */
    {KEY(runloop, "api_key", FIELD_UNSET, api_key)},
    {KEY(runloop, "state_dir", FIELD_STRING, state_dir)},
    {KEY(runloop, "devboxd", FIELD_STRING, devboxd)},
    {.key = NULL},
};

static bool valid_plugin_name(const char *s)
{
    size_t n = 0;

    for (; s[n] != '\0'; n++) {
        if (!(islower((unsigned char)s[n]) || isdigit((unsigned char)s[n]) ||
              s[n] == '_'))
            return false;
    }
    return n > 0 && n <= 64;
}

static int finish_plugin(struct ctx *c, const yaml_node_t *n,
                         const yaml_node_t *name_node,
                         const yaml_node_t *config,
                         struct host_plugin_config *p);

static int parse_plugin(struct ctx *c, const yaml_node_t *n,
                        struct host_plugin_config *p)
{
    static const char *const keys[] = {"name", "path", "enabled", "config",
                                       NULL};
    yaml_node_t *k = NULL;
    yaml_node_t *v = NULL;
    const yaml_node_t *config = NULL;
    const yaml_node_t *name_node = n;

    p->enabled = true;
    p->pos = pos_of(n);
    if (n->type == YAML_SCALAR_NODE) {
        /* "- exec" is short for "- name: exec" */
        if (get_string(c, n, "plugins[].name", &p->name) < 0)
            return -1;
    } else {
        if (check_mapping(c, n, "plugins[]") < 0)
            return -1;
        FOR_PAIRS(c, n, k, v)
        {
            switch (key_index(c, k, "plugins[]", keys)) {
            case 0:
                if (get_string(c, v, "plugins[].name", &p->name) < 0)
                    return -1;
                name_node = v;
                break;
            case 1:
                if (get_string(c, v, "plugins[].path", &p->path) < 0)
                    return -1;
                p->path_pos = pos_of(v);
                break;
            case 2:
                if (get_bool(c, v, "plugins[].enabled", &p->enabled) < 0)
                    return -1;
                break;
            case 3:
                config = v;
                break;
            default:
                return -1;
            }
        }
    }
    return finish_plugin(c, n, name_node, config, p);
}

/* Checks once the entry is read: name rules, config to JSON. */
static int finish_plugin(struct ctx *c, const yaml_node_t *n,
                         const yaml_node_t *name_node,
                         const yaml_node_t *config,
                         struct host_plugin_config *p)
{
    if (p->name == NULL) {
        FAIL(c, n, "a plugins entry has no 'name'; add e.g. 'name: exec'");
        return -1;
    }
    if (!valid_plugin_name(p->name)) {
        FAIL(c, name_node,
             "plugin name '%s' is not valid; use lower-case letters, digits "
             "and '_' (it is the NAME in rlmcp_NAME.so)",
             p->name);
        return -1;
    }
    if (config != NULL &&
        !(config->type == YAML_MAPPING_NODE ||
          (is_plain(config) && config->data.scalar.length == 0))) {
        FAIL(c, config, "'config' of plugin '%s' must be a mapping, not %s",
             p->name, node_kind(config));
        return -1;
    }
    if (config != NULL && config->type == YAML_MAPPING_NODE) {
        c->marks_to = p;
        c->marks_cap = 0;
        snprintf(c->mpath, sizeof(c->mpath), "config");
        c->mplen = strlen(c->mpath);
        p->config_json = node_to_json_text(c, config, "config");
        c->marks_to = NULL;
    } else
        p->config_json = strdup("{}");
    if (p->config_json == NULL) {
        if (!c->failed)
            FAIL(c, n, "out of memory");
        return -1;
    }
    return 0;
}

static int parse_plugins(struct ctx *c, const yaml_node_t *n,
                         struct host_config *cfg)
{
    size_t count = 0;
    size_t i = 0;
    size_t j = 0;

    if (n->type == YAML_SCALAR_NODE && is_plain(n) &&
        n->data.scalar.length == 0)
        return 0;
    if (n->type != YAML_SEQUENCE_NODE) {
        FAIL(c, n,
             "'plugins' must be a list of plugins, e.g. '- name: exec', not %s",
             node_kind(n));
        return -1;
    }
    count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    cfg->plugins = calloc(count ? count : 1, sizeof(*cfg->plugins));
    if (cfg->plugins == NULL) {
        FAIL(c, n, "out of memory");
        return -1;
    }
    for (i = 0; i < count; i++) {
        yaml_node_t *e = node_at(c, n->data.sequence.items.start[i]);
        cfg->n_plugins = i + 1;
        if (parse_plugin(c, e, &cfg->plugins[i]) < 0)
            return -1;
        for (j = 0; j < i; j++) {
            if (strcmp(cfg->plugins[j].name, cfg->plugins[i].name) == 0) {
                FAIL(c, e,
                     "plugin '%s' is listed twice (first at line %u); keep one "
                     "entry",
                     cfg->plugins[i].name, cfg->plugins[j].pos.line);
                return -1;
            }
        }
    }
    return 0;
}

/* Checks n as check_mapping does and allocates a zeroed array of one
 * element of size per pair (at least one); NULL after the error. */
static void *mapping_array(struct ctx *c, const yaml_node_t *n,
                           const char *section, size_t size)
{
    size_t count = 0;
    void *arr = NULL;

    if (check_mapping(c, n, section) < 0)
        return NULL;
    count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    arr = calloc(count ? count : 1, size);
    if (arr == NULL)
        FAIL(c, n, "out of memory");
    return arr;
}

/* A FIELD_PARSE of the alias's own struct (at: struct config_alias). */
static int parse_param_aliases(struct ctx *c, const yaml_node_t *n, void *at)
{
    struct config_alias *a = at;
    yaml_node_t *k = NULL;
    yaml_node_t *v = NULL;

    a->params = mapping_array(c, n, "tools.aliases.params", sizeof(*a->params));
    if (a->params == NULL)
        return -1;
    FOR_PAIRS(c, n, k, v)
    {
        struct config_param_alias *pa = &a->params[a->n_params];
        pa->pos = pos_of(k);
        pa->from = strdup(key_text(k));
        a->n_params++;
        if (pa->from == NULL) {
            FAIL(c, k, "out of memory");
            return -1;
        }
        if (get_string(c, v, "tools.aliases.params", &pa->to) < 0)
            return -1;
        if (pa->to == NULL || pa->to[0] == '\0') {
            FAIL(c, v,
                 "parameter alias for '%s' is empty; write the new parameter "
                 "name",
                 pa->from);
            return -1;
        }
    }
    return 0;
}

static const struct field alias_fields[] = {
    {.key = "name",
     .kind = FIELD_STRING,
     .off = offsetof(struct config_alias, to)},
    {.key = "params",
     .kind = FIELD_PARSE,
     .off = 0,
     .parse = parse_param_aliases},
    {.key = NULL},
};

static int parse_alias(struct ctx *c, const yaml_node_t *k,
                       const yaml_node_t *v, struct config_alias *a)
{

    a->pos = pos_of(k);
    a->from = strdup(key_text(k));
    if (a->from == NULL) {
        FAIL(c, k, "out of memory");
        return -1;
    }
    if (v->type == YAML_SCALAR_NODE) {
        if (get_string(c, v, "tools.aliases", &a->to) < 0)
            return -1;
    } else if (v->type == YAML_MAPPING_NODE) {
        if (parse_fields(c, v, "tools.aliases.<tool>", alias_fields, a) < 0)
            return -1;
        if (a->to == NULL) {
            a->to = strdup(a->from);
            if (a->to == NULL) {
                FAIL(c, v, "out of memory");
                return -1;
            }
        }
    } else {
        FAIL(c, v,
             "alias of '%s' must be a new name or {name: NEW, params: {OLD: "
             "NEW}}, not %s",
             a->from, node_kind(v));
        return -1;
    }
    if (a->to == NULL || a->to[0] == '\0') {
        FAIL(c, v, "alias of '%s' is empty; write the name clients should see",
             a->from);
        return -1;
    }
    return 0;
}

static int parse_aliases(struct ctx *c, const yaml_node_t *v, void *at)
{
    struct host_tools_config *t = at;
    yaml_node_t *ak = NULL;
    yaml_node_t *av = NULL;
    size_t i = 0;

    if (is_plain(v) && v->data.scalar.length == 0)
        return 0;
    t->aliases = mapping_array(c, v, "tools.aliases", sizeof(*t->aliases));
    if (t->aliases == NULL)
        return -1;
    FOR_PAIRS(c, v, ak, av)
    {
        t->n_aliases++;
        if (parse_alias(c, ak, av, &t->aliases[t->n_aliases - 1]) < 0)
            return -1;
    }
    /* Two tools cannot take the same new name. */
    for (i = 1; i < t->n_aliases; i++) {
        size_t j = 0;
        for (j = 0; j < i; j++) {
            if (strcmp(t->aliases[i].to, t->aliases[j].to) == 0) {
                fail_at(c, t->aliases[i].pos.line, t->aliases[i].pos.col,
                        "aliases '%s' and '%s' both rename to '%s'; pick "
                        "different names",
                        t->aliases[j].from, t->aliases[i].from,
                        t->aliases[i].to);
                return -1;
            }
        }
    }
    return 0;
}

/* One tools.timeout_ms entry: TOOL (or plugin:NAME): milliseconds. */
static int parse_timeout(struct ctx *c, const yaml_node_t *k,
                         const yaml_node_t *v, struct host_tools_config *t)
{
    char *name = NULL;
    char what[200];
    unsigned long long x = 0;

    if (get_string(c, k, "tools.timeout_ms", &name) < 0)
        return -1;
    if (name == NULL || name[0] == '\0') {
        free(name);
        FAIL(c, k,
             "empty tool name in 'tools.timeout_ms'; write TOOL: "
             "MILLISECONDS, e.g. execute_command: 600000");
        return -1;
    }
    t->timeouts[t->n_timeouts].name = name;
    t->timeouts[t->n_timeouts].pos = pos_of(k);
    t->n_timeouts++;
    snprintf(what, sizeof(what), "tools.timeout_ms.%.150s", name);
    if (get_uint(c, v, what, 100, 86400000ULL, &x) < 0)
        return -1;
    t->timeout_ms[t->n_timeouts - 1] = (unsigned)x;
    return 0;
}

static int parse_timeouts(struct ctx *c, const yaml_node_t *n, void *at)
{
    struct host_tools_config *t = at;
    yaml_node_t *k = NULL;
    yaml_node_t *v = NULL;

    t->timeouts = mapping_array(c, n, "tools.timeout_ms", sizeof(*t->timeouts));
    if (t->timeouts != NULL)
        t->timeout_ms =
            mapping_array(c, n, "tools.timeout_ms", sizeof(*t->timeout_ms));
    if (t->timeouts == NULL || t->timeout_ms == NULL)
        return -1;
    FOR_PAIRS(c, n, k, v)
    {
        if (parse_timeout(c, k, v, t) < 0)
            return -1;
    }
    return 0;
}

static const struct field toolset_fields[] = {
    {.key = "description",
     .kind = FIELD_STRING,
     .off = offsetof(struct config_toolset, description)},
    {.key = "tools",
     .kind = FIELD_NAMES,
     .off = offsetof(struct config_toolset, tools),
     .count_off = offsetof(struct config_toolset, n_tools)},
    {.key = NULL},
};

static bool valid_toolset_name(const char *s)
{
    size_t n = strlen(s);

    return n >= 1 && n <= 64 &&
           strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* One tools.toolsets entry: NAME: {description, tools}. */
static int parse_toolset(struct ctx *c, const yaml_node_t *k,
                         const yaml_node_t *v, struct config_toolset *ts)
{
    char what[128];

    ts->pos = pos_of(k);
    ts->name = strdup(key_text(k));
    if (ts->name == NULL) {
        FAIL(c, k, "out of memory");
        return -1;
    }
    if (!valid_toolset_name(ts->name)) {
        FAIL(c, k,
             "toolset name '%.64s' is not valid; use 1-64 of a-z 0-9 _, e.g. "
             "files",
             ts->name);
        return -1;
    }
    if (v->type != YAML_MAPPING_NODE) {
        FAIL(c, v,
             "toolset '%s' must be {description: TEXT, tools: [TOOL, "
             "plugin:NAME, ...]}, not %s",
             ts->name, node_kind(v));
        return -1;
    }
    snprintf(what, sizeof(what), "tools.toolsets.%s", ts->name);
    if (parse_fields(c, v, what, toolset_fields, ts) < 0)
        return -1;
    if (ts->description == NULL || ts->description[0] == '\0') {
        FAIL(c, v,
             "toolset '%s' has no description; write one line that tells an "
             "agent when to enable it",
             ts->name);
        return -1;
    }
    if (ts->n_tools == 0) {
        FAIL(c, v,
             "toolset '%s' has no tools; list them in 'tools: [TOOL, "
             "plugin:NAME]' or remove the toolset",
             ts->name);
        return -1;
    }
    return 0;
}

static int parse_toolsets(struct ctx *c, const yaml_node_t *n, void *at)
{
    struct host_tools_config *t = at;
    yaml_node_t *k = NULL;
    yaml_node_t *v = NULL;
    size_t count = 0;

    if (is_plain(n) && n->data.scalar.length == 0)
        return 0;
    t->toolsets = mapping_array(c, n, "tools.toolsets", sizeof(*t->toolsets));
    if (t->toolsets == NULL)
        return -1;
    count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (count > CONFIG_MAX_TOOLSETS) {
        FAIL(c, n, "'tools.toolsets' has %zu toolsets; at most %d are allowed",
             count, CONFIG_MAX_TOOLSETS);
        return -1;
    }
    FOR_PAIRS(c, n, k, v)
    {
        t->n_toolsets++;
        if (parse_toolset(c, k, v, &t->toolsets[t->n_toolsets - 1]) < 0)
            return -1;
    }
    return 0;
}

static int note_allow(struct ctx *c, const yaml_node_t *v, void *base)
{
    struct host_tools_config *t = base;

    t->allow_set = true;
    return 0;
}

/* aliases and timeout_ms read into the whole tools struct. */
static const struct field tools_fields[] = {
    {KEY(tools, "allow", FIELD_NAMES, allow),
     .count_off = offsetof(struct host_tools_config, n_allow),
     .check = note_allow},
    {KEY(tools, "exclude", FIELD_NAMES, exclude),
     .count_off = offsetof(struct host_tools_config, n_exclude)},
    {KEY(tools, "read_only", FIELD_BOOL, read_only)},
    {.key = "aliases", .kind = FIELD_PARSE, .parse = parse_aliases},
    {.key = "timeout_ms", .kind = FIELD_PARSE, .parse = parse_timeouts},
    {.key = "toolsets", .kind = FIELD_PARSE, .parse = parse_toolsets},
    {KEY(tools, "full_list_clients", FIELD_STRINGS, full_list_clients),
     .count_off = offsetof(struct host_tools_config, n_full_list_clients)},
    {.key = NULL},
};

/* plugin:NAME entries must name a listed plugin. */
static int check_tool_refs(struct ctx *c, const struct host_config *cfg,
                           const struct config_name *list, size_t n,
                           const char *what)
{
    size_t i = 0;

    for (i = 0; i < n; i++) {
        const char *name = list[i].name;
        if (strncmp(name, "plugin:", 7) != 0)
            continue;
        if (config_find_plugin(cfg, name + 7) == NULL) {
            fail_at(c, list[i].pos.line, list[i].pos.col,
                    "'%s' in '%s' names plugin '%s', which is not in "
                    "'plugins'; add it there or fix the name",
                    name, what, name + 7);
            return -1;
        }
    }
    return 0;
}

/* ---- top level --------------------------------------------------------- */

int config_init_defaults(struct host_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->server.name = strdup("runloop-mcp");
    cfg->server.transport = HOST_TRANSPORT_STDIO;
    cfg->server.http.listen = strdup(DEFAULT_LISTEN);
    cfg->server.http.max_body_bytes = 4u << 20;
    cfg->server.http.max_sessions = 64;
    cfg->server.http.session_idle_seconds = 1800;
    cfg->server.http.max_connections = 256;
    cfg->host.on_plugin_error = HOST_PLUGIN_ERROR_FAIL;
    cfg->host.call_timeout_ms = 300000;
    cfg->host.workers = 8;
    cfg->host.log_level = RLMCP_LOG_INFO;
    cfg->host.audit_max_bytes = 64ULL << 20;
    cfg->host.audit_keep = 5;
    cfg->runloop.backend = HOST_BACKEND_AUTO;
    if (cfg->server.name == NULL || cfg->server.http.listen == NULL) {
        config_free(cfg);
        return -1;
    }
    return 0;
}

static int parse_root(struct ctx *c, const yaml_node_t *root,
                      struct host_config *cfg)
{
    static const char *const keys[] = {"server",  "host",  "runloop",
                                       "plugins", "tools", NULL};
    yaml_node_t *k = NULL;
    yaml_node_t *v = NULL;
    bool have_plugins = false;
    int rc = 0;

    if (root->type != YAML_MAPPING_NODE) {
        FAIL(c, root,
             "the deployment must be a mapping with the sections server, host, "
             "runloop, plugins, tools; found %s",
             node_kind(root));
        return -1;
    }
    if (check_mapping(c, root, "the deployment") < 0)
        return -1;
    FOR_PAIRS(c, root, k, v)
    {
        switch (key_index(c, k, "the deployment", keys)) {
        case 0:
            rc = parse_fields(c, v, "server", server_fields, &cfg->server);
            break;
        case 1:
            rc = parse_fields(c, v, "host", host_fields, &cfg->host);
            break;
        case 2:
            rc = parse_fields(c, v, "runloop", runloop_fields, &cfg->runloop);
            break;
        case 3:
            have_plugins = true;
            rc = parse_plugins(c, v, cfg);
            break;
        case 4:
            rc = parse_fields(c, v, "tools", tools_fields, &cfg->tools);
            break;
        default:
            rc = -1;
        }
        if (rc < 0)
            return -1;
    }
    if (!have_plugins) {
        FAIL(c, root,
             "no 'plugins' list; add the plugins to load, e.g. 'plugins: "
             "[{name: exec}]'");
        return -1;
    }
    if (check_tool_refs(c, cfg, cfg->tools.allow, cfg->tools.n_allow,
                        "tools.allow") < 0 ||
        check_tool_refs(c, cfg, cfg->tools.exclude, cfg->tools.n_exclude,
                        "tools.exclude") < 0 ||
        check_tool_refs(c, cfg, cfg->tools.timeouts, cfg->tools.n_timeouts,
                        "tools.timeout_ms") < 0)
        return -1;
    for (size_t i = 0; i < cfg->tools.n_toolsets; i++) {
        const struct config_toolset *ts = &cfg->tools.toolsets[i];
        char what[128];

        snprintf(what, sizeof(what), "tools.toolsets.%s.tools", ts->name);
        if (check_tool_refs(c, cfg, ts->tools, ts->n_tools, what) < 0)
            return -1;
    }
    return 0;
}

static int load_document(struct ctx *c, const char *text, size_t len,
                         struct host_config *cfg)
{
    yaml_parser_t parser;
    yaml_document_t extra;
    yaml_node_t *root = NULL;
    bool doc_ok = false;
    int rc = -1;

    if (!yaml_parser_initialize(&parser)) {
        fail_at(c, 1, 1, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &c->doc)) {
        fail_at(
            c, (unsigned)parser.problem_mark.line + 1,
            (unsigned)parser.problem_mark.column + 1,
            "YAML syntax error: %s%s%s; check the indentation and quoting here",
            parser.problem ? parser.problem : "unreadable",
            parser.context ? " " : "", parser.context ? parser.context : "");
        goto out;
    }
    doc_ok = true;
    root = yaml_document_get_root_node(&c->doc);
    if (root == NULL) {
        fail_at(c, 1, 1,
                "the deployment is empty; write at least a 'plugins' list (see "
                "docs/deployments.md)");
        goto out;
    }
    if (!yaml_parser_load(&parser, &extra)) {
        fail_at(c, (unsigned)parser.problem_mark.line + 1,
                (unsigned)parser.problem_mark.column + 1,
                "YAML syntax error: %s; check the indentation and quoting here",
                parser.problem ? parser.problem : "unreadable");
        goto out;
    }
    if (yaml_document_get_root_node(&extra) != NULL) {
        fail_at(c, (unsigned)extra.start_mark.line + 1,
                (unsigned)extra.start_mark.column + 1,
                "a second YAML document ('---'); a deployment is one document, "
                "remove it");
        yaml_document_delete(&extra);
        goto out;
    }
    yaml_document_delete(&extra);
    rc = parse_root(c, root, cfg);
out:
    if (doc_ok)
        yaml_document_delete(&c->doc);
    yaml_parser_delete(&parser);
    return rc;
}

int config_load_string(const char *name, const char *text, size_t len,
                       struct host_config *cfg, char *err, size_t errlen)
{
    struct ctx c;

    memset(&c, 0, sizeof(c));
    c.file = name;
    c.err = err;
    c.errlen = errlen;
    if (errlen > 0)
        err[0] = '\0';
    if (config_init_defaults(cfg) < 0) {
        fail_at(&c, 1, 1, "out of memory");
        return -1;
    }
    cfg->path = strdup(name);
    if (cfg->path == NULL) {
        fail_at(&c, 1, 1, "out of memory");
        goto err;
    }
    if (load_document(&c, text, len, cfg) < 0)
        goto err;
    return 0;
err:
    config_free(cfg);
    return -1;
}

int config_load(const char *path, struct host_config *cfg, char *err,
                size_t errlen)
{
    FILE *f = NULL;
    char *text = NULL;
    size_t len = 0;
    size_t cap = 0;
    int rc = -1;

    memset(cfg, 0, sizeof(*cfg));
    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen,
                 "%s: cannot open the deployment file: %s; pass an existing "
                 "file with --config",
                 path, strerror(errno));
        return -1;
    }
    for (;;) {
        size_t got = 0;
        if (len + 4096 > cap) {
            char *np = NULL;
            cap = cap ? cap * 2 : 8192;
            if (cap > (16u << 20)) {
                snprintf(err, errlen,
                         "%s: the deployment file is larger than 16 MiB; is it "
                         "the right file?",
                         path);
                goto out;
            }
            np = realloc(text, cap);
            if (np == NULL) {
                snprintf(err, errlen, "%s: out of memory", path);
                goto out;
            }
            text = np;
        }
        got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        goto out;
    }
    text[len] = '\0';
    rc = config_load_string(path, text, len, cfg, err, errlen);
out:
    free(text);
    if (f != NULL)
        fclose(f);
    return rc;
}

static void free_names(struct config_name *list, size_t n)
{
    size_t i = 0;

    for (i = 0; i < n; i++)
        free(list[i].name);
    free(list);
}

void config_free(struct host_config *cfg)
{
    size_t i = 0;
    size_t j = 0;

    if (cfg == NULL)
        return;
    free(cfg->path);
    free(cfg->server.name);
    free(cfg->server.instructions);
    free(cfg->server.http.listen);
    for (i = 0; i < cfg->server.http.n_allowed_origins; i++)
        free(cfg->server.http.allowed_origins[i]);
    free(cfg->server.http.allowed_origins);
    free(cfg->server.http.auth_token);
    free(cfg->server.http.auth_token_env);
    secret_free(cfg->server.http.state_secret);
    free(cfg->server.http.raw_json);
    free(cfg->host.plugin_dir);
    free(cfg->host.audit_log);
    free(cfg->runloop.base_url);
    free(cfg->runloop.api_key);
    free(cfg->runloop.state_dir);
    free(cfg->runloop.devboxd);
    for (i = 0; i < cfg->n_plugins; i++) {
        free(cfg->plugins[i].name);
        free(cfg->plugins[i].path);
        free(cfg->plugins[i].config_json);
        for (size_t m = 0; m < cfg->plugins[i].n_config_marks; m++)
            free(cfg->plugins[i].config_marks[m].path);
        free(cfg->plugins[i].config_marks);
    }
    free(cfg->plugins);
    free_names(cfg->tools.allow, cfg->tools.n_allow);
    free_names(cfg->tools.exclude, cfg->tools.n_exclude);
    free_names(cfg->tools.timeouts, cfg->tools.n_timeouts);
    free(cfg->tools.timeout_ms);
    for (i = 0; i < cfg->tools.n_aliases; i++) {
        struct config_alias *a = &cfg->tools.aliases[i];
        free(a->from);
        free(a->to);
        for (j = 0; j < a->n_params; j++) {
            free(a->params[j].from);
            free(a->params[j].to);
        }
        free(a->params);
    }
    free(cfg->tools.aliases);
    for (i = 0; i < cfg->tools.n_toolsets; i++) {
        free(cfg->tools.toolsets[i].name);
        free(cfg->tools.toolsets[i].description);
        free_names(cfg->tools.toolsets[i].tools,
                   cfg->tools.toolsets[i].n_tools);
    }
    free(cfg->tools.toolsets);
    for (i = 0; i < cfg->tools.n_full_list_clients; i++)
        free(cfg->tools.full_list_clients[i]);
    free(cfg->tools.full_list_clients);
    memset(cfg, 0, sizeof(*cfg));
}

const struct host_plugin_config *
config_find_plugin(const struct host_config *cfg, const char *name)
{
    size_t i = 0;

    for (i = 0; i < cfg->n_plugins; i++) {
        if (strcmp(cfg->plugins[i].name, name) == 0)
            return &cfg->plugins[i];
    }
    return NULL;
}

const char *config_transport_name(enum host_transport t)
{
    return t == HOST_TRANSPORT_HTTP ? "http" : "stdio";
}

const char *config_backend_name(enum host_backend b)
{
    switch (b) {
    case HOST_BACKEND_CLOUD:
        return "cloud";
    case HOST_BACKEND_LOCAL:
        return "local";
    default:
        return "auto";
    }
}
