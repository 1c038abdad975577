/*
 * schema.c - JSON Schema 2020-12 subset: registration checks and
 * validation. Patterns are matched by schema_pattern.c.
 *
 * Layout: text helpers, keywords, validation, registration checks. See
 * docs/schema.md for the user-facing rules.
 */
#include "schema.h"
#include "schema_pattern.h"
#include "suggest.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#define SCHEMA_PATH_MAX 1024
#define PATH_KEY_MAX 40   /* code points of one key in a path */
#define PATH_SHOW_HEAD 60 /* bytes of a long path shown before "..." */
#define PATH_SHOW_TAIL 140
#define SCHEMA_CHECK_MAX_DEPTH 128
#define SHOW_STRING_MAX 40 /* code points of a string value shown in errors */
#define POINTER_TOKEN_MAX 256

/* ------------------------------------------------------------------------ */
/* Text helpers                                                             */
/* ------------------------------------------------------------------------ */

/* len, less a UTF-8 sequence cut short at the end of s[0..len). */
static size_t utf8_whole(const char *s, size_t len)
{
    size_t i = len;
    size_t cont = 0;
    unsigned char lead;
    size_t need;

    while (i > 0 && cont < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        cont++;
    }
    if (i == 0) {
        return len;
    }
    lead = (unsigned char)s[i - 1];
    if (lead < 0xC0) {
        return len; /* ASCII, or stray continuation bytes: nothing to fix */
    }
    need = lead >= 0xF0 ? 3 : (lead >= 0xE0 ? 2 : 1);
    return cont < need ? i - 1 : len;
}

/* A bounded append-only writer; NULL/0 buffers swallow everything. */
struct wbuf {
    char *buf;
    size_t cap;
    size_t len;
    bool full; /* cut once: append nothing more */
};

static void wb_vappend(struct wbuf *w, const char *fmt, va_list ap)
{
    int n;

    if (w->buf == NULL || w->cap == 0 || w->full) {
        return;
    }
    if (w->len + 1 >= w->cap) {
        /* Full: the last append may have been part of a character. */
        w->len = utf8_whole(w->buf, w->len);
        w->buf[w->len] = '\0';
        w->full = true;
        return;
    }
    n = vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap);
    if (n < 0) {
        return;
    }
    w->len += (size_t)n;
    if (w->len >= w->cap) {
        /* Cut, but never inside a UTF-8 sequence: the text goes to JSON. */
        w->len = utf8_whole(w->buf, w->cap - 1);
        w->buf[w->len] = '\0';
        w->full = true;
    }
}

/* Append n bytes without formatting (the validation path's hot spot). */
static void wb_putn(struct wbuf *w, const char *s, size_t n)
{
    size_t room;

    if (w->buf == NULL || w->cap == 0 || w->full) {
        return;
    }
    room = w->cap - 1 - w->len;
    if (n <= room) {
        memcpy(w->buf + w->len, s, n);
        w->len += n;
        w->buf[w->len] = '\0';
        return;
    }
    memcpy(w->buf + w->len, s, room);
    w->len = utf8_whole(w->buf, w->cap - 1);
    w->buf[w->len] = '\0';
    w->full = true;
}

static void wb_append(struct wbuf *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void wb_append(struct wbuf *w, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    wb_vappend(w, fmt, ap);
    va_end(ap);
}

static void wb_init(struct wbuf *w, char *buf, size_t cap)
{
    w->buf = buf;
    w->cap = buf != NULL ? cap : 0;
    w->len = 0;
    w->full = false;
    if (w->cap > 0) {
        buf[0] = '\0';
    }
}

static bool is_integral(double d)
{
    return isfinite(d) && floor(d) == d;
}

/* The shortest text that reads back as d. */
static void fmt_num(double d, char *out, size_t outlen)
{
    int prec;

    if (is_integral(d) && fabs(d) < 1e17) {
        snprintf(out, outlen, "%.0f", d);
        return;
    }
    for (prec = 1; prec < 17; prec++) {
        snprintf(out, outlen, "%.*g", prec, d);
        if (strtod(out, NULL) == d) {
            return;
        }
    }
    snprintf(out, outlen, "%.17g", d);
}

static size_t utf8_count(const char *s)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s;

    for (; *p != '\0'; p++) {
        if ((*p & 0xC0) != 0x80) {
            n++;
        }
    }
    return n;
}

/* Append s as a JSON string literal, cut after max code points. */
static void wb_quoted(struct wbuf *w, const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t cps = 0;

    wb_append(w, "\"");
    for (; *p != '\0'; p++) {
        if ((*p & 0xC0) != 0x80 && cps++ == max) {
            wb_append(w, "...");
            break;
        }
        if (*p == '"' || *p == '\\') {
            wb_append(w, "\\%c", *p);
        } else if (*p == '\n') {
            wb_append(w, "\\n");
        } else if (*p < 0x20) {
            wb_append(w, "\\u%04x", *p);
        } else {
            wb_append(w, "%c", *p);
        }
    }
    wb_append(w, "\"");
}

/* Append s raw, cut after max code points. */
static void wb_cut(struct wbuf *w, const char *s, size_t max)
{
    const char *p = s;
    size_t cps = 0;

    for (; *p != '\0'; p++) {
        if (((unsigned char)*p & 0xC0) != 0x80 && cps++ == max) {
            break;
        }
    }
    wb_putn(w, s, (size_t)(p - s));
    if (*p != '\0') {
        wb_putn(w, "...", 3);
    }
}

static const char *json_type_name(const cJSON *v)
{
    if (cJSON_IsNull(v)) {
        return "null";
    }
    if (cJSON_IsBool(v)) {
        return "boolean";
    }
    if (cJSON_IsNumber(v)) {
        return "number";
    }
    if (cJSON_IsString(v)) {
        return "string";
    }
    if (cJSON_IsArray(v)) {
        return "array";
    }
    if (cJSON_IsObject(v)) {
        return "object";
    }
    return "invalid value";
}

/* "string \"10\"", "number 1.5", "object", ... */
static void wb_describe(struct wbuf *w, const cJSON *v)
{
    char num[40];

    wb_append(w, "%s", json_type_name(v));
    if (cJSON_IsString(v)) {
        wb_append(w, " ");
        wb_quoted(w, v->valuestring, SHOW_STRING_MAX);
    } else if (cJSON_IsNumber(v)) {
        fmt_num(v->valuedouble, num, sizeof(num));
        wb_append(w, " %s", num);
    } else if (cJSON_IsBool(v)) {
        wb_append(w, " %s", cJSON_IsTrue(v) ? "true" : "false");
    }
}

/* A JSON literal as a schema author wrote it (enum, const). */
static void wb_literal(struct wbuf *w, const cJSON *v)
{
    char num[40];
    char *text = NULL;

    if (cJSON_IsString(v)) {
        wb_quoted(w, v->valuestring, SHOW_STRING_MAX);
    } else if (cJSON_IsNumber(v)) {
        fmt_num(v->valuedouble, num, sizeof(num));
        wb_append(w, "%s", num);
    } else if (cJSON_IsBool(v)) {
        wb_append(w, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNull(v)) {
        wb_append(w, "null");
    } else {
        /* Error path only: containers are rare in enum/const. */
        text = cJSON_PrintUnformatted(v);
        wb_append(w, "%s", text != NULL ? text : "<object>");
        cJSON_free(text);
    }
}

/* ------------------------------------------------------------------------ */
/* Hex digits (JSON pointer %XX escapes)                                    */
/* ------------------------------------------------------------------------ */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* n hex digits at p into *out; -1 when they are not all there. */
static int read_hex(const char *p, int n, uint32_t *out)
{
    uint32_t v = 0;
    int i;

    for (i = 0; i < n; i++) {
        int h = hexval(p[i]);
        if (h < 0) {
            return -1;
        }
        v = v * 16 + (uint32_t)h;
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Keywords                                                                 */
/* ------------------------------------------------------------------------ */

/* The keywords of one schema object, found in a single pass. */
struct kws {
    const cJSON *ref, *type, *enum_, *const_;
    const cJSON *multiple_of, *maximum, *exclusive_maximum, *minimum,
        *exclusive_minimum;
    const cJSON *max_length, *min_length, *pattern;
    const cJSON *prefix_items, *items, *contains, *max_items, *min_items,
        *unique_items, *max_contains, *min_contains;
    const cJSON *properties, *pattern_properties, *additional_properties,
        *property_names, *max_properties, *min_properties, *required,
        *dependent_required, *dependent_schemas;
    const cJSON *all_of, *any_of, *one_of, *not_, *if_, *then_, *else_;
    const cJSON *defs, *definitions;
};

struct cctx;
typedef int (*kw_check_fn)(struct cctx *cc, const char *kw, const cJSON *v);

struct kw_def {
    const char *name;
    ptrdiff_t slot; /* offsetof in struct kws, or -1 */
    kw_check_fn check;
};

/* Checkers, defined with the registration checks below. */
static int ck_sub(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_items(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_map(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_pattern_map(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_list(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_type(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_names(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_dep_required(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_enum(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_count(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_number(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_exclusive(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_positive(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_pattern(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_bool(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_ref(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_string(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_id(struct cctx *cc, const char *kw, const cJSON *v);
static int ck_unsupported(struct cctx *cc, const char *kw, const cJSON *v);

#define KW(name, field, fn)                                                    \
    {                                                                          \
        name, offsetof(struct kws, field), fn                                  \
    }
#define KW_CHECK_ONLY(name, fn)                                                \
    {                                                                          \
        name, -1, fn                                                           \
    }

/* The keywords we act on; anything else is an annotation. */
static const struct kw_def kw_table[] = {
    KW("$defs", defs, ck_map),
    KW_CHECK_ONLY("$dynamicRef", ck_unsupported),
    KW_CHECK_ONLY("$id", ck_id),
    KW_CHECK_ONLY("$recursiveRef", ck_unsupported),
    KW("$ref", ref, ck_ref),
    KW_CHECK_ONLY("$schema", ck_string),
    KW_CHECK_ONLY("additionalItems", ck_unsupported),
    KW("additionalProperties", additional_properties, ck_sub),
    KW("allOf", all_of, ck_list),
    KW("anyOf", any_of, ck_list),
    KW("const", const_, NULL),
    KW("contains", contains, ck_sub),
    KW("definitions", definitions, ck_map),
    KW_CHECK_ONLY("dependencies", ck_unsupported),
    KW("dependentRequired", dependent_required, ck_dep_required),
    KW("dependentSchemas", dependent_schemas, ck_map),
    KW("else", else_, ck_sub),
    KW("enum", enum_, ck_enum),
    KW("exclusiveMaximum", exclusive_maximum, ck_exclusive),
    KW("exclusiveMinimum", exclusive_minimum, ck_exclusive),
    KW("if", if_, ck_sub),
    KW("items", items, ck_items),
    KW("maxContains", max_contains, ck_count),
    KW("maxItems", max_items, ck_count),
    KW("maxLength", max_length, ck_count),
    KW("maxProperties", max_properties, ck_count),
    KW("maximum", maximum, ck_number),
    KW("minContains", min_contains, ck_count),
    KW("minItems", min_items, ck_count),
    KW("minLength", min_length, ck_count),
    KW("minProperties", min_properties, ck_count),
    KW("minimum", minimum, ck_number),
    KW("multipleOf", multiple_of, ck_positive),
    KW("not", not_, ck_sub),
    KW("oneOf", one_of, ck_list),
    KW("pattern", pattern, ck_pattern),
    KW("patternProperties", pattern_properties, ck_pattern_map),
    KW("prefixItems", prefix_items, ck_list),
    KW("properties", properties, ck_map),
    KW("propertyNames", property_names, ck_sub),
    KW("required", required, ck_names),
    KW("then", then_, ck_sub),
    KW("type", type, ck_type),
    KW_CHECK_ONLY("unevaluatedItems", ck_unsupported),
    KW_CHECK_ONLY("unevaluatedProperties", ck_unsupported),
    KW("uniqueItems", unique_items, ck_bool),
};

/* Open-addressing index over kw_table: one strcmp per lookup, typically. */
#define KW_SLOTS 256
#define KW_COUNT (sizeof(kw_table) / sizeof(kw_table[0]))
static uint8_t kw_index[KW_SLOTS]; /* kw_table position + 1; 0: empty */
static pthread_once_t kw_index_once = PTHREAD_ONCE_INIT;

static unsigned kw_hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return h & (KW_SLOTS - 1);
}

static void kw_index_build(void)
{
    size_t i;

    for (i = 0; i < KW_COUNT; i++) {
        unsigned slot = kw_hash(kw_table[i].name);
        while (kw_index[slot] != 0) {
            slot = (slot + 1) & (KW_SLOTS - 1);
        }
        kw_index[slot] = (uint8_t)(i + 1);
    }
}

static const struct kw_def *kw_find(const char *name)
{
    unsigned slot = kw_hash(name);

    pthread_once(&kw_index_once, kw_index_build);
    while (kw_index[slot] != 0) {
        const struct kw_def *d = &kw_table[kw_index[slot] - 1];
        if (strcmp(d->name, name) == 0) {
            return d;
        }
        slot = (slot + 1) & (KW_SLOTS - 1);
    }
    return NULL;
}

static void kws_collect(const cJSON *s, struct kws *k)
{
    const cJSON *child = NULL;

    memset(k, 0, sizeof(*k));
    cJSON_ArrayForEach(child, s)
    {
        const struct kw_def *d = kw_find(child->string);
        if (d != NULL && d->slot >= 0) {
            *(const cJSON **)((char *)k + d->slot) = child;
        }
    }
}

/*
 * Resolve a local reference: "#" or "#/json/pointer" (RFC 6901, with
 * %-escapes) inside root. NULL when it does not resolve or is not local.
 */
static const cJSON *resolve_ref(const cJSON *root, const char *ref)
{
    const cJSON *node = root;
    const char *p = ref + 1;
    char tok[POINTER_TOKEN_MAX];

    if (ref[0] != '#' || (*p != '\0' && *p != '/')) {
        return NULL;
    }
    while (*p == '/') {
        size_t n = 0;
        p++;
        while (*p != '\0' && *p != '/') {
            char ch = *p++;
            uint32_t hex = 0;
            if (ch == '%' && read_hex(p, 2, &hex) == 0 && hex != 0) {
                ch = (char)hex;
                p += 2;
            }
            if (ch == '~' && (*p == '0' || *p == '1')) {
                ch = *p == '0' ? '~' : '/';
                p++;
            }
            if (n + 1 >= sizeof(tok)) {
                return NULL;
            }
            tok[n++] = ch;
        }
        tok[n] = '\0';
        if (cJSON_IsObject(node)) {
            node = cJSON_GetObjectItemCaseSensitive(node, tok);
        } else if (cJSON_IsArray(node) && n > 0 &&
                   strspn(tok, "0123456789") == n && n < 9) {
            node = cJSON_GetArrayItem(node, atoi(tok));
        } else {
            return NULL;
        }
        if (node == NULL) {
            return NULL;
        }
    }
    if (!cJSON_IsObject(node) && !cJSON_IsBool(node)) {
        return NULL;
    }
    return node;
}

static bool type_name_matches(const char *t, const cJSON *v)
{
    switch (t[0]) {
    case 'o':
        return strcmp(t, "object") == 0 && cJSON_IsObject(v);
    case 's':
        return strcmp(t, "string") == 0 && cJSON_IsString(v);
    case 'a':
        return strcmp(t, "array") == 0 && cJSON_IsArray(v);
    case 'b':
        return strcmp(t, "boolean") == 0 && cJSON_IsBool(v);
    case 'n':
        if (strcmp(t, "null") == 0) {
            return cJSON_IsNull(v);
        }
        return strcmp(t, "number") == 0 && cJSON_IsNumber(v);
    case 'i':
        return strcmp(t, "integer") == 0 && cJSON_IsNumber(v) &&
               is_integral(v->valuedouble);
    default:
        return false;
    }
}

static bool type_name_known(const char *t)
{
    static const char *const names[] = {"null",   "boolean", "object", "array",
                                        "number", "integer", "string"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(t, names[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* 1 match, 0 no match, -1 malformed "type". */
static int type_matches(const cJSON *type, const cJSON *v)
{
    const cJSON *t = NULL;

    if (cJSON_IsString(type)) {
        return type_name_matches(type->valuestring, v) ? 1 : 0;
    }
    if (!cJSON_IsArray(type)) {
        return -1;
    }
    cJSON_ArrayForEach(t, type)
    {
        if (!cJSON_IsString(t)) {
            return -1;
        }
        if (type_name_matches(t->valuestring, v)) {
            return 1;
        }
    }
    return 0;
}

/* "string", "string or null", "string, integer or null" */
static void wb_type_list(struct wbuf *w, const cJSON *type)
{
    const cJSON *t = NULL;
    int n = cJSON_GetArraySize(type);
    int i = 0;

    if (cJSON_IsString(type)) {
        wb_append(w, "%s", type->valuestring);
        return;
    }
    cJSON_ArrayForEach(t, type)
    {
        const char *sep = i == 0 ? "" : (i == n - 1 ? " or " : ", ");
        wb_append(w, "%s%s", sep, cJSON_IsString(t) ? t->valuestring : "?");
        i++;
    }
}

/* ------------------------------------------------------------------------ */
/* Validation                                                               */
/* ------------------------------------------------------------------------ */

struct vctx {
    const cJSON *root;
    struct wbuf err; /* the current error's destination; may swallow */
    char path[SCHEMA_PATH_MAX];
    size_t plen;
    int depth;
    bool fatal; /* a schema problem or the depth limit: stop everything */
    char fatal_msg[320];
};

/* Append text to the path; returns the mark for path_pop. */
static size_t path_push(struct vctx *c, const char *text)
{
    struct wbuf w = {.buf = c->path, .cap = sizeof(c->path), .len = c->plen};
    size_t mark = c->plen;

    wb_putn(&w, text, strlen(text));
    c->plen = w.len;
    return mark;
}

/* ".key", with a long key cut short. */
static size_t path_push_key(struct vctx *c, const char *key)
{
    struct wbuf w = {.buf = c->path, .cap = sizeof(c->path), .len = c->plen};
    size_t mark = c->plen;

    wb_putn(&w, ".", 1);
    wb_cut(&w, key, PATH_KEY_MAX);
    c->plen = w.len;
    return mark;
}

/* "[i]" */
static size_t path_push_index(struct vctx *c, int i)
{
    struct wbuf w = {.buf = c->path, .cap = sizeof(c->path), .len = c->plen};
    size_t mark = c->plen;
    char digits[16];
    size_t n = sizeof(digits);
    unsigned u = (unsigned)i;

    digits[--n] = ']';
    do {
        digits[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    digits[--n] = '[';
    wb_putn(&w, digits + n, sizeof(digits) - n);
    c->plen = w.len;
    return mark;
}

static void path_pop(struct vctx *c, size_t mark)
{
    c->plen = mark;
    c->path[mark] = '\0';
}

/* The current path; a long one keeps its start and its end (the field). */
static void wb_path(struct wbuf *w, const struct vctx *c)
{
    size_t head;
    size_t tail;

    if (c->plen <= PATH_SHOW_HEAD + PATH_SHOW_TAIL + 3) {
        wb_append(w, "%s", c->path);
        return;
    }
    head = utf8_whole(c->path, PATH_SHOW_HEAD);
    tail = c->plen - PATH_SHOW_TAIL;
    while (((unsigned char)c->path[tail] & 0xC0) == 0x80) {
        tail++;
    }
    wb_append(w, "%.*s(...)%s", (int)head, c->path, c->path + tail);
}

/* Start an error at the current path; the caller appends the rest. */
static struct wbuf *v_err(struct vctx *c)
{
    wb_path(&c->err, c);
    wb_append(&c->err, ": ");
    return &c->err;
}

static int v_fail(struct vctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int v_fail(struct vctx *c, const char *fmt, ...)
{
    va_list ap;

    v_err(c);
    va_start(ap, fmt);
    wb_vappend(&c->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int v_fatal(struct vctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int v_fatal(struct vctx *c, const char *fmt, ...)
{
    struct wbuf w;
    va_list ap;

    if (c->fatal) {
        return -1;
    }
    c->fatal = true;
    wb_init(&w, c->fatal_msg, sizeof(c->fatal_msg));
    wb_append(&w, "schema error at ");
    wb_path(&w, c);
    wb_append(&w, ": ");
    va_start(ap, fmt);
    wb_vappend(&w, fmt, ap);
    va_end(ap);
    return -1;
}

/* Keyword value readers: a malformed value is a schema error. */
static int kw_number(struct vctx *c, const cJSON *kw, double *out)
{
    if (!cJSON_IsNumber(kw)) {
        return v_fatal(c, "\"%s\" must be a number", kw->string);
    }
    *out = kw->valuedouble;
    return 0;
}

static int kw_count(struct vctx *c, const cJSON *kw, double *out)
{
    if (!cJSON_IsNumber(kw) || !is_integral(kw->valuedouble) ||
        kw->valuedouble < 0) {
        return v_fatal(c, "\"%s\" must be a non-negative integer", kw->string);
    }
    *out = kw->valuedouble;
    return 0;
}

/*
 * JSON equality as JSON Schema defines it: numbers by value (1 == 1.0,
 * exactly; cJSON_Compare allows a rounding slack), objects regardless of
 * member order.
 */
static bool json_equal(const cJSON *a, const cJSON *b)
{
    const cJSON *x = NULL;
    const cJSON *y = NULL;

    if (cJSON_IsNumber(a) || cJSON_IsNumber(b)) {
        return cJSON_IsNumber(a) && cJSON_IsNumber(b) &&
               a->valuedouble == b->valuedouble;
    }
    if ((a->type & 0xFF) != (b->type & 0xFF)) {
        return false;
    }
    if (cJSON_IsString(a)) {
        return strcmp(a->valuestring, b->valuestring) == 0;
    }
    if (cJSON_IsArray(a)) {
        for (x = a->child, y = b->child; x != NULL && y != NULL;
             x = x->next, y = y->next) {
            if (!json_equal(x, y)) {
                return false;
            }
        }
        return x == NULL && y == NULL;
    }
    if (cJSON_IsObject(a)) {
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
            return false;
        }
        cJSON_ArrayForEach(x, a)
        {
            y = cJSON_GetObjectItemCaseSensitive(b, x->string);
            if (y == NULL || !json_equal(x, y)) {
                return false;
            }
        }
    }
    return true; /* null, true, false */
}

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    }
    return h;
}

/* A hash consistent with json_equal (member order does not count). */
static uint64_t json_hash(const cJSON *v)
{
    const cJSON *x = NULL;
    uint64_t h = (uint64_t)(v->type & 0xFF);
    double d;

    if (cJSON_IsNumber(v)) {
        d = v->valuedouble == 0 ? 0.0 : v->valuedouble; /* -0 == 0 */
        memcpy(&h, &d, sizeof(h));
        return mix64(h ^ 0x4e);
    }
    if (cJSON_IsString(v)) {
        return mix64(str_hash(v->valuestring));
    }
    if (cJSON_IsArray(v)) {
        cJSON_ArrayForEach(x, v)
        {
            h = mix64(h * 31 + json_hash(x));
        }
    } else if (cJSON_IsObject(v)) {
        cJSON_ArrayForEach(x, v)
        {
            h += mix64(str_hash(x->string) ^ json_hash(x));
        }
    }
    return mix64(h);
}

static int v_schema(struct vctx *c, const cJSON *s, const cJSON *inst);

/* Validate with no error text (if, not, counting oneOf). */
static int v_silent(struct vctx *c, const cJSON *s, const cJSON *inst)
{
    struct wbuf saved = c->err;
    int rc;

    wb_init(&c->err, NULL, 0);
    rc = v_schema(c, s, inst);
    c->err = saved;
    return rc;
}

static int v_type(struct vctx *c, const cJSON *type, const cJSON *inst)
{
    int m = type_matches(type, inst);
    struct wbuf *w = NULL;

    if (m < 0) {
        return v_fatal(c, "\"type\" must be a type name or an array of them");
    }
    if (m == 1) {
        return 0;
    }
    w = v_err(c);
    wb_append(w, "expected ");
    wb_type_list(w, type);
    wb_append(w, ", got ");
    wb_describe(w, inst);
    return -1;
}

static int v_enum(struct vctx *c, const cJSON *en, const cJSON *inst)
{
    const cJSON *v = NULL;
    struct wbuf *w = NULL;
    int i = 0;

    if (!cJSON_IsArray(en)) {
        return v_fatal(c, "\"enum\" must be an array");
    }
    cJSON_ArrayForEach(v, en)
    {
        if (json_equal(v, inst)) {
            return 0;
        }
    }
    w = v_err(c);
    wb_append(w, "must be one of ");
    cJSON_ArrayForEach(v, en)
    {
        wb_append(w, "%s", i++ == 0 ? "" : ", ");
        wb_literal(w, v);
    }
    wb_append(w, "; got ");
    wb_describe(w, inst);
    return -1;
}

static int v_const(struct vctx *c, const cJSON *cn, const cJSON *inst)
{
    struct wbuf *w = NULL;

    if (json_equal(cn, inst)) {
        return 0;
    }
    w = v_err(c);
    wb_append(w, "must be ");
    wb_literal(w, cn);
    wb_append(w, "; got ");
    wb_describe(w, inst);
    return -1;
}

static bool multiple_of(double x, double m)
{
    double q = x / m;

    if (!isfinite(q)) {
        return false;
    }
    if (is_integral(x) && is_integral(m)) {
        return fmod(x, m) == 0;
    }
    /* Decimal steps (0.1) are not exact in binary: allow rounding noise. */
    return fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
}

enum bound { BOUND_GE, BOUND_GT, BOUND_LE, BOUND_LT };

static int v_bound(struct vctx *c, const cJSON *kw, double x, enum bound b)
{
    static const char *const ops[] = {">=", ">", "<=", "<"};
    double lim = 0;
    bool ok = false;
    char a[40], v[40];

    if (kw == NULL) {
        return 0;
    }
    if (kw_number(c, kw, &lim) < 0) {
        return -1;
    }
    switch (b) {
    case BOUND_GE:
        ok = x >= lim;
        break;
    case BOUND_GT:
        ok = x > lim;
        break;
    case BOUND_LE:
        ok = x <= lim;
        break;
    case BOUND_LT:
        ok = x < lim;
        break;
    }
    if (ok) {
        return 0;
    }
    fmt_num(lim, a, sizeof(a));
    fmt_num(x, v, sizeof(v));
    return v_fail(c, "must be %s %s, got %s", ops[b], a, v);
}

static int v_number(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    double x = inst->valuedouble;
    double m = 0;
    char a[40], b[40];

    if (v_bound(c, k->minimum, x, BOUND_GE) < 0 ||
        v_bound(c, k->exclusive_minimum, x, BOUND_GT) < 0 ||
        v_bound(c, k->maximum, x, BOUND_LE) < 0 ||
        v_bound(c, k->exclusive_maximum, x, BOUND_LT) < 0) {
        return -1;
    }
    if (k->multiple_of == NULL) {
        return 0;
    }
    if (kw_number(c, k->multiple_of, &m) < 0) {
        return -1;
    }
    if (m <= 0) {
        return v_fatal(c, "\"multipleOf\" must be greater than 0");
    }
    if (multiple_of(x, m)) {
        return 0;
    }
    fmt_num(m, a, sizeof(a));
    fmt_num(x, b, sizeof(b));
    return v_fail(c, "must be a multiple of %s, got %s", a, b);
}

/*
 * 1 when s matches pattern, 0 when not, -1 once reported: matching that
 * hits the backtracking limits fails the value; an unusable pattern (only
 * in a schema that was not checked) is a schema error.
 */
static int v_match(struct vctx *c, const char *what, const char *pattern,
                   const char *s)
{
    char why[256];
    enum schema_pattern_result r =
        schema_pattern_match(pattern, s, why, sizeof(why));

    if (r == SCHEMA_PATTERN_LIMIT) {
        return v_fail(c, "%s '%s': %s", what, pattern, why);
    }
    if (r == SCHEMA_PATTERN_BAD) {
        return v_fatal(c, "%s '%s' is not usable: %s", what, pattern, why);
    }
    return r == SCHEMA_PATTERN_MATCH;
}

static int v_string(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    const char *s = inst->valuestring;
    size_t bytes = strlen(s);
    double lim = 0;
    int m;

    if (k->max_length != NULL) {
        if (kw_count(c, k->max_length, &lim) < 0) {
            return -1;
        }
        /* Code points never outnumber bytes: count only when needed. */
        if ((double)bytes > lim && (double)utf8_count(s) > lim) {
            return v_fail(c, "string longer than maxLength %.0f", lim);
        }
    }
    if (k->min_length != NULL) {
        if (kw_count(c, k->min_length, &lim) < 0) {
            return -1;
        }
        if ((double)utf8_count(s) < lim) {
            return v_fail(c, "string shorter than minLength %.0f", lim);
        }
    }
    if (k->pattern == NULL) {
        return 0;
    }
    if (!cJSON_IsString(k->pattern)) {
        return v_fatal(c, "\"pattern\" must be a string");
    }
    m = v_match(c, "pattern", k->pattern->valuestring, s);
    if (m < 0) {
        return -1;
    }
    if (m == 0) {
        struct wbuf *w = v_err(c);
        wb_append(w, "string ");
        wb_quoted(w, s, SHOW_STRING_MAX);
        wb_append(w, " does not match pattern '%s'", k->pattern->valuestring);
        return -1;
    }
    return 0;
}

static int v_item(struct vctx *c, const cJSON *s, const cJSON *item, int i)
{
    size_t mark = path_push_index(c, i);
    int rc = v_schema(c, s, item);

    path_pop(c, mark);
    return rc;
}

static int v_array_items(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    const cJSON *prefix = k->prefix_items;
    const cJSON *ps = NULL;
    const cJSON *item = NULL;
    int n_prefix = 0;
    int i = 0;

    if (prefix != NULL) {
        if (!cJSON_IsArray(prefix)) {
            return v_fatal(c, "\"prefixItems\" must be an array of schemas");
        }
        n_prefix = cJSON_GetArraySize(prefix);
        ps = prefix->child;
    }
    cJSON_ArrayForEach(item, inst)
    {
        const cJSON *s = ps != NULL ? ps : k->items;
        if (ps == NULL && cJSON_IsFalse(s)) {
            return v_fail(c,
                          "array has %d items, but at most %d are "
                          "allowed",
                          cJSON_GetArraySize(inst), n_prefix);
        }
        if (s != NULL && v_item(c, s, item, i) < 0) {
            return -1;
        }
        if (ps != NULL) {
            ps = ps->next;
        }
        i++;
    }
    return 0;
}

static int v_contains(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    const cJSON *item = NULL;
    double min = 1;
    double max = INFINITY;
    int found = 0;

    if ((k->min_contains != NULL && kw_count(c, k->min_contains, &min) < 0) ||
        (k->max_contains != NULL && kw_count(c, k->max_contains, &max) < 0)) {
        return -1;
    }
    cJSON_ArrayForEach(item, inst)
    {
        if (v_silent(c, k->contains, item) == 0) {
            found++;
        } else if (c->fatal) {
            return -1;
        }
    }
    if (found < min) {
        return v_fail(c,
                      "array needs at least %.0f item(s) matching the "
                      "\"contains\" schema, found %d",
                      min, found);
    }
    if (found > max) {
        return v_fail(c,
                      "array has %d items matching the \"contains\" "
                      "schema, more than maxContains %.0f",
                      found, max);
    }
    return 0;
}

static int unique_fail(struct vctx *c, int i, int j)
{
    return v_fail(c,
                  "items [%d] and [%d] are equal, but uniqueItems "
                  "requires distinct items",
                  i < j ? i : j, i < j ? j : i);
}

/* Small arrays: compare every pair. */
static int v_unique_pairs(struct vctx *c, const cJSON *inst)
{
    const cJSON *a = NULL;
    const cJSON *b = NULL;
    int i = 0;
    int j;

    for (a = inst->child; a != NULL; a = a->next, i++) {
        for (b = a->next, j = i + 1; b != NULL; b = b->next, j++) {
            if (json_equal(a, b)) {
                return unique_fail(c, i, j);
            }
        }
    }
    return 0;
}

struct hashed_item {
    uint64_t hash;
    int index;
    const cJSON *item;
};

static int hashed_cmp(const void *pa, const void *pb)
{
    const struct hashed_item *a = pa;
    const struct hashed_item *b = pb;

    if (a->hash != b->hash) {
        return a->hash < b->hash ? -1 : 1;
    }
    return a->index - b->index;
}

/* Large arrays: sort by hash, compare within equal hashes: O(n log n). */
static int v_unique_hashed(struct vctx *c, const cJSON *inst, int n)
{
    struct hashed_item *v = calloc((size_t)n, sizeof(*v));
    const cJSON *item = NULL;
    int i = 0;
    int j;
    int rc = 0;

    if (v == NULL) {
        return v_fatal(c, "out of memory checking uniqueItems");
    }
    cJSON_ArrayForEach(item, inst)
    {
        v[i].hash = json_hash(item);
        v[i].index = i;
        v[i].item = item;
        i++;
    }
    qsort(v, (size_t)n, sizeof(*v), hashed_cmp);
    for (i = 0; i < n && rc == 0; i++) {
        for (j = i + 1; j < n && v[j].hash == v[i].hash; j++) {
            if (json_equal(v[i].item, v[j].item)) {
                rc = unique_fail(c, v[i].index, v[j].index);
                break;
            }
        }
    }
    free(v);
    return rc;
}

static int v_unique(struct vctx *c, const cJSON *inst)
{
    int n = cJSON_GetArraySize(inst);

    return n <= 32 ? v_unique_pairs(c, inst) : v_unique_hashed(c, inst, n);
}

static int v_array(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    double n = (double)cJSON_GetArraySize(inst);
    double lim = 0;

    if (k->min_items != NULL) {
        if (kw_count(c, k->min_items, &lim) < 0) {
            return -1;
        }
        if (n < lim) {
            return v_fail(c, "array has %.0f items, fewer than minItems %.0f",
                          n, lim);
        }
    }
    if (k->max_items != NULL) {
        if (kw_count(c, k->max_items, &lim) < 0) {
            return -1;
        }
        if (n > lim) {
            return v_fail(c, "array has %.0f items, more than maxItems %.0f", n,
                          lim);
        }
    }
    if (v_array_items(c, k, inst) < 0) {
        return -1;
    }
    if (k->contains != NULL && v_contains(c, k, inst) < 0) {
        return -1;
    }
    if (cJSON_IsTrue(k->unique_items) && v_unique(c, inst) < 0) {
        return -1;
    }
    return 0;
}

static const char *closest_name(const cJSON *props, const char *key)
{
    const cJSON *p = NULL;
    const char *best = NULL;
    size_t best_d = 3; /* suggest only within two edits */

    cJSON_ArrayForEach(p, props)
    {
        size_t d = suggest_distance(key, p->string);
        if (d < best_d && d < strlen(p->string)) {
            best = p->string;
            best_d = d;
        }
    }
    return best;
}

static int v_unknown_property(struct vctx *c, const struct kws *k,
                              const char *key)
{
    struct wbuf *w = v_err(c);
    const cJSON *p = NULL;
    const char *hint = NULL;
    int i = 0;

    wb_append(w, "unknown property '");
    wb_cut(w, key, SHOW_STRING_MAX);
    wb_append(w, "' (");
    if (cJSON_GetArraySize(k->properties) > 0) {
        wb_append(w, "allowed: ");
        cJSON_ArrayForEach(p, k->properties)
        {
            wb_append(w, "%s%s", i++ == 0 ? "" : ", ", p->string);
        }
        hint = closest_name(k->properties, key);
    }
    cJSON_ArrayForEach(p, k->pattern_properties)
    {
        wb_append(w, "%s'%s'",
                  i == 0 ? "allowed: names matching " : " or names matching ",
                  p->string);
        i++;
    }
    if (i == 0) {
        wb_append(w, "this object takes no properties");
    }
    wb_append(w, ")");
    if (hint != NULL) {
        wb_append(w, "; did you mean '%s'?", hint);
    }
    return -1;
}

/* 1 when key is named in properties or matches a patternProperties key. */
static int declared_property(struct vctx *c, const struct kws *k,
                             const char *key)
{
    const cJSON *pp = NULL;

    if (cJSON_GetObjectItemCaseSensitive(k->properties, key) != NULL) {
        return 1;
    }
    cJSON_ArrayForEach(pp, k->pattern_properties)
    {
        int m = v_match(c, "patternProperties key", pp->string, key);
        if (m != 0) {
            return m;
        }
    }
    return 0;
}

static int v_required(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    const cJSON *r = NULL;
    struct wbuf *w = NULL;
    int missing = 0;

    cJSON_ArrayForEach(r, k->required)
    {
        if (!cJSON_IsString(r)) {
            return v_fatal(c, "\"required\" must be an array of strings");
        }
        if (cJSON_GetObjectItemCaseSensitive(inst, r->valuestring) == NULL) {
            missing++;
        }
    }
    if (missing == 0) {
        return 0;
    }
    w = v_err(c);
    wb_append(w, "missing required propert%s ", missing == 1 ? "y" : "ies");
    missing = 0;
    cJSON_ArrayForEach(r, k->required)
    {
        if (cJSON_GetObjectItemCaseSensitive(inst, r->valuestring) == NULL) {
            wb_append(w, "%s'%s'", missing++ == 0 ? "" : ", ", r->valuestring);
        }
    }
    return -1;
}

static int v_dependent_required(struct vctx *c, const struct kws *k,
                                const cJSON *inst)
{
    const cJSON *dep = NULL;
    const cJSON *r = NULL;

    cJSON_ArrayForEach(dep, k->dependent_required)
    {
        if (cJSON_GetObjectItemCaseSensitive(inst, dep->string) == NULL) {
            continue;
        }
        cJSON_ArrayForEach(r, dep)
        {
            if (!cJSON_IsString(r)) {
                return v_fatal(c, "\"dependentRequired\" values must be "
                                  "arrays of strings");
            }
            if (cJSON_GetObjectItemCaseSensitive(inst, r->valuestring) ==
                NULL) {
                return v_fail(c,
                              "property '%s' is required when '%s' is "
                              "present",
                              r->valuestring, dep->string);
            }
        }
    }
    return 0;
}

/* The schemas that apply to one member's value and name. */
static int v_member(struct vctx *c, const struct kws *k, const cJSON *m)
{
    const cJSON *sub = NULL;
    const cJSON *pp = NULL;
    bool matched = false;

    sub = cJSON_GetObjectItemCaseSensitive(k->properties, m->string);
    if (sub != NULL) {
        matched = true;
        if (v_schema(c, sub, m) < 0) {
            return -1;
        }
    }
    cJSON_ArrayForEach(pp, k->pattern_properties)
    {
        int r = v_match(c, "patternProperties key", pp->string, m->string);
        if (r < 0) {
            return -1;
        }
        if (r == 1) {
            matched = true;
            if (v_schema(c, pp, m) < 0) {
                return -1;
            }
        }
    }
    if (!matched && k->additional_properties != NULL &&
        v_schema(c, k->additional_properties, m) < 0) {
        return -1;
    }
    if (k->property_names != NULL) {
        /* The name as a string instance, without allocating. */
        cJSON name = {.type = cJSON_String, .valuestring = m->string};
        size_t mark = path_push(c, " (property name)");
        int rc = v_schema(c, k->property_names, &name);
        path_pop(c, mark);
        return rc;
    }
    return 0;
}

static int v_object_size(struct vctx *c, const struct kws *k, double n)
{
    double lim = 0;

    if (k->min_properties != NULL) {
        if (kw_count(c, k->min_properties, &lim) < 0) {
            return -1;
        }
        if (n < lim) {
            return v_fail(c,
                          "object has %.0f properties, fewer than "
                          "minProperties %.0f",
                          n, lim);
        }
    }
    if (k->max_properties != NULL) {
        if (kw_count(c, k->max_properties, &lim) < 0) {
            return -1;
        }
        if (n > lim) {
            return v_fail(c,
                          "object has %.0f properties, more than "
                          "maxProperties %.0f",
                          n, lim);
        }
    }
    return 0;
}

static int v_object(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    const cJSON *m = NULL;
    const cJSON *dep = NULL;

    if (v_object_size(c, k, (double)cJSON_GetArraySize(inst)) < 0) {
        return -1;
    }
    /* Unknown names first: a typo also looks like a missing property. */
    if (cJSON_IsFalse(k->additional_properties)) {
        cJSON_ArrayForEach(m, inst)
        {
            int d = declared_property(c, k, m->string);
            if (d < 0) {
                return -1;
            }
            if (d == 0) {
                return v_unknown_property(c, k, m->string);
            }
        }
    }
    if (v_required(c, k, inst) < 0 || v_dependent_required(c, k, inst) < 0) {
        return -1;
    }
    cJSON_ArrayForEach(m, inst)
    {
        size_t mark = path_push_key(c, m->string);
        int rc = v_member(c, k, m);
        path_pop(c, mark);
        if (rc < 0) {
            return -1;
        }
    }
    cJSON_ArrayForEach(dep, k->dependent_schemas)
    {
        if (cJSON_GetObjectItemCaseSensitive(inst, dep->string) != NULL &&
            v_schema(c, dep, inst) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The "type" a branch of anyOf/oneOf declares, following one $ref. */
static const cJSON *branch_type(const struct vctx *c, const cJSON *b)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "type");
    const cJSON *ref = NULL;
    const cJSON *target = NULL;

    if (t != NULL || !cJSON_IsObject(b)) {
        return t;
    }
    ref = cJSON_GetObjectItemCaseSensitive(b, "$ref");
    if (!cJSON_IsString(ref)) {
        return NULL;
    }
    target = resolve_ref(c->root, ref->valuestring);
    return cJSON_GetObjectItemCaseSensitive(target, "type");
}

/* "expected string or integer, got boolean true" over all branches. */
static int v_no_type_matched(struct vctx *c, const cJSON *arr,
                             const cJSON *inst)
{
    struct wbuf *w = v_err(c);
    const cJSON *b = NULL;
    const cJSON *t = NULL;
    int i = 0;

    wb_append(w, "expected ");
    cJSON_ArrayForEach(b, arr)
    {
        const cJSON *type = branch_type(c, b);
        if (cJSON_IsString(type)) {
            wb_append(w, "%s%s", i++ == 0 ? "" : " or ", type->valuestring);
            continue;
        }
        cJSON_ArrayForEach(t, type)
        {
            wb_append(w, "%s%s", i++ == 0 ? "" : " or ", t->valuestring);
        }
    }
    wb_append(w, ", got ");
    wb_describe(w, inst);
    return -1;
}

/* One branch's error appended to the current one, minus a repeated path. */
static void v_branch_error(struct vctx *c, const cJSON *b, const cJSON *inst)
{
    struct wbuf saved = c->err;
    size_t plen = c->plen;

    if (saved.len + 1 >= saved.cap) {
        return;
    }
    wb_init(&c->err, saved.buf + saved.len, saved.cap - saved.len);
    v_schema(c, b, inst);
    if (c->err.len > plen + 2 && strncmp(c->err.buf, c->path, plen) == 0 &&
        c->err.buf[plen] == ':') {
        memmove(c->err.buf, c->err.buf + plen + 2, c->err.len - plen - 1);
        c->err.len -= plen + 2;
    }
    saved.len += c->err.len;
    c->err = saved;
}

/* No branch of anyOf/oneOf matched: say why as usefully as we can. */
static int v_none_matched(struct vctx *c, const cJSON *arr, const cJSON *inst,
                          const char *kw)
{
    const cJSON *b = NULL;
    const cJSON *only = NULL;
    int compatible = 0;
    int typed = 0;
    int n = 0;

    if (c->err.buf == NULL || c->fatal) {
        return -1; /* nobody reads the text */
    }
    cJSON_ArrayForEach(b, arr)
    {
        const cJSON *t = branch_type(c, b);
        n++;
        if (t != NULL) {
            typed++;
        }
        if (t == NULL || type_matches(t, inst) == 1) {
            compatible++;
            only = b;
        }
    }
    if (compatible == 1) {
        return v_schema(c, only, inst); /* the branch meant for this type */
    }
    if (compatible == 0 && typed == n) {
        return v_no_type_matched(c, arr, inst);
    }
    v_err(c);
    wb_append(&c->err, "does not match any alternative in %s", kw);
    n = 0;
    cJSON_ArrayForEach(b, arr)
    {
        if (n == 4) {
            wb_append(&c->err, "; ...");
            break;
        }
        wb_append(&c->err, "; alternative %d: ", ++n);
        v_branch_error(c, b, inst);
    }
    return -1;
}

static int v_any_of(struct vctx *c, const cJSON *arr, const cJSON *inst)
{
    const cJSON *b = NULL;

    cJSON_ArrayForEach(b, arr)
    {
        if (v_silent(c, b, inst) == 0) {
            return 0;
        }
        if (c->fatal) {
            return -1;
        }
    }
    return v_none_matched(c, arr, inst, "anyOf");
}

static int v_one_of(struct vctx *c, const cJSON *arr, const cJSON *inst)
{
    const cJSON *b = NULL;
    int first = -1;
    int i = 0;

    cJSON_ArrayForEach(b, arr)
    {
        if (v_silent(c, b, inst) == 0) {
            if (first >= 0) {
                return v_fail(c,
                              "matches more than one alternative in oneOf "
                              "(%d and %d); it must match exactly one",
                              first + 1, i + 1);
            }
            first = i;
        } else if (c->fatal) {
            return -1;
        }
        i++;
    }
    if (first >= 0) {
        return 0;
    }
    return v_none_matched(c, arr, inst, "oneOf");
}

static int v_applicators(struct vctx *c, const struct kws *k, const cJSON *inst)
{
    const cJSON *b = NULL;
    int r;

    cJSON_ArrayForEach(b, k->all_of)
    {
        if (v_schema(c, b, inst) < 0) {
            return -1;
        }
    }
    if (k->any_of != NULL && v_any_of(c, k->any_of, inst) < 0) {
        return -1;
    }
    if (k->one_of != NULL && v_one_of(c, k->one_of, inst) < 0) {
        return -1;
    }
    if (k->not_ != NULL) {
        r = v_silent(c, k->not_, inst);
        if (c->fatal) {
            return -1;
        }
        if (r == 0) {
            return v_fail(c, "must not match the schema in \"not\"");
        }
    }
    if (k->if_ == NULL) {
        return 0;
    }
    r = v_silent(c, k->if_, inst);
    if (c->fatal) {
        return -1;
    }
    if (r == 0 && k->then_ != NULL) {
        return v_schema(c, k->then_, inst);
    }
    if (r != 0 && k->else_ != NULL) {
        return v_schema(c, k->else_, inst);
    }
    return 0;
}

/* Container-valued keywords must have the right shape before use. */
static int v_shapes(struct vctx *c, const struct kws *k)
{
    const cJSON *objs[] = {k->properties, k->pattern_properties,
                           k->dependent_required, k->dependent_schemas};
    const cJSON *arrays[] = {k->required, k->prefix_items, k->all_of,
                             k->any_of,   k->one_of,       k->enum_};
    size_t i;

    for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
        if (objs[i] != NULL && !cJSON_IsObject(objs[i])) {
            return v_fatal(c, "\"%s\" must be an object", objs[i]->string);
        }
    }
    for (i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
        if (arrays[i] != NULL && !cJSON_IsArray(arrays[i])) {
            return v_fatal(c, "\"%s\" must be an array", arrays[i]->string);
        }
    }
    return 0;
}

static int v_keywords(struct vctx *c, const cJSON *s, const cJSON *inst)
{
    struct kws k;
    const cJSON *target = NULL;

    kws_collect(s, &k);
    if (v_shapes(c, &k) < 0) {
        return -1;
    }
    if (k.ref != NULL) {
        if (!cJSON_IsString(k.ref)) {
            return v_fatal(c, "\"$ref\" must be a string");
        }
        target = resolve_ref(c->root, k.ref->valuestring);
        if (target == NULL) {
            return v_fatal(c, "$ref '%s' does not resolve", k.ref->valuestring);
        }
        if (v_schema(c, target, inst) < 0) {
            return -1;
        }
    }
    if ((k.type != NULL && v_type(c, k.type, inst) < 0) ||
        (k.enum_ != NULL && v_enum(c, k.enum_, inst) < 0) ||
        (k.const_ != NULL && v_const(c, k.const_, inst) < 0)) {
        return -1;
    }
    if ((cJSON_IsNumber(inst) && v_number(c, &k, inst) < 0) ||
        (cJSON_IsString(inst) && v_string(c, &k, inst) < 0) ||
        (cJSON_IsArray(inst) && v_array(c, &k, inst) < 0) ||
        (cJSON_IsObject(inst) && v_object(c, &k, inst) < 0)) {
        return -1;
    }
    return v_applicators(c, &k, inst);
}

static int v_schema(struct vctx *c, const cJSON *s, const cJSON *inst)
{
    int rc = -1;

    if (c->fatal) {
        return -1;
    }
    if (cJSON_IsTrue(s)) {
        return 0;
    }
    if (cJSON_IsFalse(s)) {
        return v_fail(c, "no value is allowed here");
    }
    if (!cJSON_IsObject(s)) {
        return v_fatal(c, "a schema must be an object or a boolean");
    }
    if (c->depth >= SCHEMA_MAX_DEPTH) {
        return v_fatal(c,
                       "more than %d nested schemas apply here (a "
                       "recursive $ref, or an instance nested too deeply)",
                       SCHEMA_MAX_DEPTH);
    }
    c->depth++;
    rc = v_keywords(c, s, inst);
    c->depth--;
    return rc;
}

int schema_validate(const cJSON *schema, const cJSON *instance,
                    const char *root_name, char *err, size_t errlen)
{
    struct vctx c;
    int rc;

    c.root = schema;
    c.plen = 0;
    c.path[0] = '\0';
    c.depth = 0;
    c.fatal = false;
    c.fatal_msg[0] = '\0';
    wb_init(&c.err, err, errlen);
    path_push(&c, root_name != NULL ? root_name : "value");
    if (schema == NULL || instance == NULL) {
        return v_fail(&c, "nothing to validate (schema or value missing)");
    }
    rc = v_schema(&c, schema, instance);
    if (c.fatal) {
        wb_init(&c.err, err, errlen);
        wb_append(&c.err, "%s", c.fatal_msg);
        return -1;
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Registration checks                                                      */
/* ------------------------------------------------------------------------ */

/* A small set of schema nodes; schemas are small, so a linear scan. */
struct ptrset {
    const cJSON **v;
    size_t n;
    size_t cap;
};

static bool ptrset_has(const struct ptrset *set, const cJSON *p)
{
    size_t i;

    for (i = 0; i < set->n; i++) {
        if (set->v[i] == p) {
            return true;
        }
    }
    return false;
}

static int ptrset_add(struct ptrset *set, const cJSON *p)
{
    const cJSON **grown = NULL;

    if (set->n == set->cap) {
        size_t cap = set->cap == 0 ? 32 : set->cap * 2;
        grown = realloc(set->v, cap * sizeof(*grown));
        if (grown == NULL) {
            return -1;
        }
        set->v = grown;
        set->cap = cap;
    }
    set->v[set->n++] = p;
    return 0;
}

struct cctx {
    const cJSON *root;
    struct wbuf err;
    char loc[SCHEMA_PATH_MAX]; /* JSON pointer of the schema being checked */
    size_t llen;
    int depth;
    struct ptrset done; /* schemas whose $ref/applicator graph is acyclic */
    struct ptrset seen; /* schemas checked (or being checked) */
};

static int ck_fail(struct cctx *cc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int ck_fail(struct cctx *cc, const char *fmt, ...)
{
    va_list ap;

    if (cc->err.len > 0) {
        return -1; /* keep the first, innermost message */
    }
    wb_append(&cc->err, "%s: ", cc->loc);
    va_start(ap, fmt);
    wb_vappend(&cc->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* Append "/token" with RFC 6901 escaping; returns the mark for loc_pop. */
static size_t loc_push(struct cctx *cc, const char *token)
{
    size_t mark = cc->llen;
    const char *p = token;

    if (cc->llen + 1 < sizeof(cc->loc)) {
        cc->loc[cc->llen++] = '/';
    }
    for (; *p != '\0' && cc->llen + 2 < sizeof(cc->loc); p++) {
        if (*p == '~' || *p == '/') {
            cc->loc[cc->llen++] = '~';
            cc->loc[cc->llen++] = *p == '~' ? '0' : '1';
        } else {
            cc->loc[cc->llen++] = *p;
        }
    }
    if (*p != '\0') {
        cc->llen = utf8_whole(cc->loc, cc->llen); /* cut at a character */
    }
    cc->loc[cc->llen] = '\0';
    return mark;
}

static void loc_pop(struct cctx *cc, size_t mark)
{
    cc->llen = mark;
    cc->loc[mark] = '\0';
}

static int ck_schema(struct cctx *cc, const cJSON *s);

/* A kind name and a short value, for "got ..." in messages. */
static const char *ck_got(const cJSON *v, char *buf, size_t len)
{
    struct wbuf w;

    wb_init(&w, buf, len);
    wb_describe(&w, v);
    return buf;
}

/* 0 when ok, else the error "\"<kw>\" must be <what>, got <v>". */
static int ck_want(struct cctx *cc, bool ok, const char *kw, const char *what,
                   const cJSON *v)
{
    char got[80];

    if (ok) {
        return 0;
    }
    return ck_fail(cc, "\"%s\" must be %s, got %s", kw, what,
                   ck_got(v, got, sizeof(got)));
}

/* cJSON keeps both copies of a repeated key; which one wins is unclear. */
static int ck_no_duplicates(struct cctx *cc, const cJSON *obj)
{
    const cJSON *a = NULL;
    const cJSON *b = NULL;

    cJSON_ArrayForEach(a, obj)
    {
        for (b = a->next; b != NULL; b = b->next) {
            if (strcmp(a->string, b->string) == 0) {
                return ck_fail(cc, "the key \"%s\" appears twice; keep one",
                               a->string);
            }
        }
    }
    return 0;
}

static int ck_sub(struct cctx *cc, const char *kw, const cJSON *v)
{
    size_t mark = loc_push(cc, kw);
    int rc = ck_schema(cc, v);

    loc_pop(cc, mark);
    return rc;
}

static int ck_items(struct cctx *cc, const char *kw, const cJSON *v)
{
    if (cJSON_IsArray(v)) {
        return ck_fail(cc, "the array form of \"items\" is draft-07; in "
                           "2020-12 use \"prefixItems\" for the tuple and "
                           "\"items\" for the rest");
    }
    return ck_sub(cc, kw, v);
}

/* Each member of v as a schema, located under kw and its key (an object,
 * whose keys must differ) or its index (an array). */
static int ck_members(struct cctx *cc, const char *kw, const cJSON *v)
{
    const cJSON *m = NULL;
    const char *name = NULL;
    char idx[24];
    size_t mark = loc_push(cc, kw);
    size_t inner;
    int i = 0;
    int rc = 0;

    if (cJSON_IsObject(v)) {
        rc = ck_no_duplicates(cc, v);
    }
    for (m = v->child; m != NULL && rc == 0; m = m->next) {
        snprintf(idx, sizeof(idx), "%d", i++);
        name = cJSON_IsObject(v) ? m->string : idx;
        inner = loc_push(cc, name);
        rc = ck_schema(cc, m);
        loc_pop(cc, inner);
    }
    loc_pop(cc, mark);
    return rc;
}

static int ck_map(struct cctx *cc, const char *kw, const cJSON *v)
{
    if (ck_want(cc, cJSON_IsObject(v), kw, "an object of schemas", v) < 0) {
        return -1;
    }
    return ck_members(cc, kw, v);
}

/* A pattern that must compile (and is cached now). */
static int ck_regex(struct cctx *cc, const char *what, const char *pattern)
{
    char why[256];

    if (schema_pattern_check(pattern, why, sizeof(why)) < 0) {
        return ck_fail(cc,
                       "%s '%s' is not supported: %s (patterns are "
                       "ECMA-262 regular expressions, see docs/schema.md)",
                       what, pattern, why);
    }
    return 0;
}

static int ck_pattern_map(struct cctx *cc, const char *kw, const cJSON *v)
{
    const cJSON *m = NULL;

    if (cJSON_IsObject(v)) {
        cJSON_ArrayForEach(m, v)
        {
            if (ck_regex(cc, "patternProperties key", m->string) < 0) {
                return -1;
            }
        }
    }
    return ck_map(cc, kw, v);
}

static int ck_list(struct cctx *cc, const char *kw, const cJSON *v)
{
    char got[80];

    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
        return ck_fail(cc,
                       "\"%s\" must be a non-empty array of schemas, "
                       "got %s",
                       kw, ck_got(v, got, sizeof(got)));
    }
    return ck_members(cc, kw, v);
}

/* An array of distinct strings (required, dependentRequired values). */
static int ck_string_set(struct cctx *cc, const char *kw, const cJSON *v)
{
    const cJSON *a = NULL;
    const cJSON *b = NULL;
    char got[80];

    if (!cJSON_IsArray(v)) {
        return ck_fail(cc,
                       "\"%s\" must be an array of property names, got "
                       "%s",
                       kw, ck_got(v, got, sizeof(got)));
    }
    cJSON_ArrayForEach(a, v)
    {
        if (!cJSON_IsString(a)) {
            return ck_fail(cc, "\"%s\" must hold only strings, got %s", kw,
                           ck_got(a, got, sizeof(got)));
        }
        for (b = a->next; b != NULL; b = b->next) {
            if (cJSON_IsString(b) &&
                strcmp(a->valuestring, b->valuestring) == 0) {
                return ck_fail(cc, "\"%s\" lists '%s' twice", kw,
                               a->valuestring);
            }
        }
    }
    return 0;
}

static int ck_names(struct cctx *cc, const char *kw, const cJSON *v)
{
    return ck_string_set(cc, kw, v);
}

static int ck_dep_required(struct cctx *cc, const char *kw, const cJSON *v)
{
    const cJSON *m = NULL;

    if (ck_want(cc, cJSON_IsObject(v), kw, "an object of arrays", v) < 0) {
        return -1;
    }
    cJSON_ArrayForEach(m, v)
    {
        if (ck_string_set(cc, kw, m) < 0) {
            return -1;
        }
    }
    return 0;
}

static int ck_type_name(struct cctx *cc, const cJSON *t)
{
    char got[80];

    if (!cJSON_IsString(t)) {
        return ck_fail(cc,
                       "\"type\" must be a type name or an array of "
                       "them, got %s",
                       ck_got(t, got, sizeof(got)));
    }
    if (!type_name_known(t->valuestring)) {
        return ck_fail(cc,
                       "unknown type '%s' (use null, boolean, object, "
                       "array, number, integer or string)",
                       t->valuestring);
    }
    return 0;
}

static int ck_type(struct cctx *cc, const char *kw, const cJSON *v)
{
    const cJSON *t = NULL;
    const cJSON *u = NULL;

    if (!cJSON_IsArray(v)) {
        return ck_type_name(cc, v);
    }
    if (cJSON_GetArraySize(v) == 0) {
        return ck_fail(cc, "\"type\" must not be an empty array");
    }
    cJSON_ArrayForEach(t, v)
    {
        if (ck_type_name(cc, t) < 0) {
            return -1;
        }
        for (u = t->next; u != NULL; u = u->next) {
            if (cJSON_IsString(u) &&
                strcmp(t->valuestring, u->valuestring) == 0) {
                return ck_fail(cc, "\"type\" lists '%s' twice", t->valuestring);
            }
        }
    }
    return 0;
}

static int ck_enum(struct cctx *cc, const char *kw, const cJSON *v)
{
    char got[80];

    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
        return ck_fail(cc,
                       "\"enum\" must be a non-empty array of allowed "
                       "values, got %s",
                       ck_got(v, got, sizeof(got)));
    }
    return 0;
}

static int ck_count(struct cctx *cc, const char *kw, const cJSON *v)
{
    bool ok =
        cJSON_IsNumber(v) && is_integral(v->valuedouble) && v->valuedouble >= 0;

    return ck_want(cc, ok, kw, "a non-negative integer", v);
}

static int ck_number(struct cctx *cc, const char *kw, const cJSON *v)
{
    return ck_want(cc, cJSON_IsNumber(v), kw, "a number", v);
}

static int ck_exclusive(struct cctx *cc, const char *kw, const cJSON *v)
{
    if (cJSON_IsBool(v)) {
        return ck_fail(cc,
                       "\"%s\": %s is the draft-04 form; in 2020-12 it "
                       "is the limit itself, e.g. \"%s\": 0",
                       kw, cJSON_IsTrue(v) ? "true" : "false", kw);
    }
    return ck_number(cc, kw, v);
}

static int ck_positive(struct cctx *cc, const char *kw, const cJSON *v)
{
    bool ok = cJSON_IsNumber(v) && v->valuedouble > 0;

    return ck_want(cc, ok, kw, "a number greater than 0", v);
}

static int ck_pattern(struct cctx *cc, const char *kw, const cJSON *v)
{
    if (ck_want(cc, cJSON_IsString(v), "pattern", "a string", v) < 0) {
        return -1;
    }
    return ck_regex(cc, "pattern", v->valuestring);
}

static int ck_bool(struct cctx *cc, const char *kw, const cJSON *v)
{
    return ck_want(cc, cJSON_IsBool(v), kw, "true or false", v);
}

static int ck_ref(struct cctx *cc, const char *kw, const cJSON *v)
{
    const cJSON *target = NULL;
    char saved[SCHEMA_PATH_MAX];
    size_t saved_len;
    int rc;

    if (ck_want(cc, cJSON_IsString(v), "$ref", "a string", v) < 0) {
        return -1;
    }
    if (v->valuestring[0] != '#') {
        return ck_fail(cc,
                       "$ref '%s' is not supported: only references "
                       "inside this schema are (#/$defs/name, "
                       "#/definitions/name or another #/ JSON pointer)",
                       v->valuestring);
    }
    if (v->valuestring[1] != '\0' && v->valuestring[1] != '/') {
        return ck_fail(cc,
                       "$ref '%s': anchors are not supported; use a JSON "
                       "pointer such as #/$defs/name",
                       v->valuestring);
    }
    target = resolve_ref(cc->root, v->valuestring);
    if (target == NULL) {
        return ck_fail(cc,
                       "$ref '%s' does not resolve to a schema in this "
                       "document",
                       v->valuestring);
    }
    /*
     * The target may sit where the walk does not go (under an unknown
     * keyword): check it as a schema too, named by the pointer.
     */
    if (ptrset_has(&cc->seen, target)) {
        return 0;
    }
    memcpy(saved, cc->loc, cc->llen + 1);
    saved_len = cc->llen;
    snprintf(cc->loc, sizeof(cc->loc), "%s", v->valuestring);
    cc->llen = utf8_whole(cc->loc, strlen(cc->loc));
    cc->loc[cc->llen] = '\0';
    rc = ck_schema(cc, target);
    memcpy(cc->loc, saved, saved_len + 1);
    cc->llen = saved_len;
    return rc;
}

static int ck_string(struct cctx *cc, const char *kw, const cJSON *v)
{
    return ck_want(cc, cJSON_IsString(v), kw, "a string", v);
}

static int ck_id(struct cctx *cc, const char *kw, const cJSON *v)
{
    if (cc->depth > 1) {
        return ck_fail(cc, "\"$id\" inside a subschema is not supported (it "
                           "would change what $ref resolves against); "
                           "remove it");
    }
    return ck_string(cc, kw, v);
}

static int ck_unsupported(struct cctx *cc, const char *kw, const cJSON *v)
{
    static const struct {
        const char *kw;
        const char *fix;
    } fixes[] = {
        {"unevaluatedProperties",
         "list the properties and use \"additionalProperties\""},
        {"unevaluatedItems", "use \"prefixItems\" with \"items\""},
        {"dependencies",
         "split it into \"dependentRequired\" and \"dependentSchemas\""},
        {"additionalItems",
         "use \"prefixItems\" for the tuple and \"items\" for the rest"},
        {"$dynamicRef", "use \"$ref\" to a #/$defs entry"},
        {"$recursiveRef", "use \"$ref\" to a #/$defs entry"},
    };
    const char *fix = "remove it";
    size_t i;

    for (i = 0; i < sizeof(fixes) / sizeof(fixes[0]); i++) {
        if (strcmp(kw, fixes[i].kw) == 0) {
            fix = fixes[i].fix;
        }
    }
    return ck_fail(cc,
                   "\"%s\" is not supported by this server's validator; "
                   "%s",
                   kw, fix);
}

/* Pairs of limits that together admit nothing. */
static int ck_limits(struct cctx *cc, const struct kws *k)
{
    const cJSON *pairs[][2] = {
        {k->min_length, k->max_length},
        {k->min_items, k->max_items},
        {k->min_properties, k->max_properties},
        {k->min_contains, k->max_contains},
        {k->minimum, k->maximum},
    };
    size_t i;

    for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        const cJSON *lo = pairs[i][0];
        const cJSON *hi = pairs[i][1];
        char a[40], b[40];
        if (!cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) ||
            lo->valuedouble <= hi->valuedouble) {
            continue;
        }
        fmt_num(lo->valuedouble, a, sizeof(a));
        fmt_num(hi->valuedouble, b, sizeof(b));
        return ck_fail(cc,
                       "\"%s\" %s is greater than \"%s\" %s, so no value "
                       "can be valid",
                       lo->string, a, hi->string, b);
    }
    return 0;
}

/* A required name that additionalProperties:false would then reject. */
static int ck_required_declared(struct cctx *cc, const struct kws *k)
{
    const cJSON *r = NULL;
    const cJSON *pp = NULL;

    if (!cJSON_IsFalse(k->additional_properties) ||
        !cJSON_IsArray(k->required)) {
        return 0;
    }
    cJSON_ArrayForEach(r, k->required)
    {
        bool declared = cJSON_GetObjectItemCaseSensitive(
                            k->properties, r->valuestring) != NULL;
        cJSON_ArrayForEach(pp, k->pattern_properties)
        {
            if (!declared &&
                schema_pattern_match(pp->string, r->valuestring, NULL, 0) ==
                    SCHEMA_PATTERN_MATCH) {
                declared = true;
            }
        }
        if (!declared) {
            return ck_fail(cc,
                           "\"required\" lists '%s', but "
                           "\"additionalProperties\" is false and "
                           "\"properties\" does not declare it",
                           r->valuestring);
        }
    }
    return 0;
}

/*
 * Depth-first over the edges that apply another schema to the same value
 * ($ref, allOf/anyOf/oneOf, not, if/then/else, dependentSchemas). A cycle
 * there never consumes input, so validation could only hit the depth limit.
 */
static int ck_cycle(struct cctx *cc, const cJSON *s, const cJSON **stack, int n)
{
    static const char *const lists[] = {"allOf", "anyOf", "oneOf",
                                        "dependentSchemas"};
    static const char *const singles[] = {"not", "if", "then", "else"};
    const cJSON *e = NULL;
    const cJSON *ref = NULL;
    size_t i;
    int j;

    if (!cJSON_IsObject(s) || ptrset_has(&cc->done, s)) {
        return 0;
    }
    for (j = 0; j < n; j++) {
        if (stack[j] == s) {
            return ck_fail(cc, "$ref cycle: this schema reaches itself "
                               "through $ref/allOf/anyOf/oneOf/not/if without "
                               "descending into a property or item, so no "
                               "value could ever be validated");
        }
    }
    if (n >= SCHEMA_MAX_DEPTH) {
        return ck_fail(cc,
                       "more than %d schemas apply to one value through "
                       "$ref and combinators",
                       SCHEMA_MAX_DEPTH);
    }
    stack[n] = s;
    ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (cJSON_IsString(ref) &&
        ck_cycle(cc, resolve_ref(cc->root, ref->valuestring), stack, n + 1) <
            0) {
        return -1;
    }
    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(s, lists[i]))
        {
            if (ck_cycle(cc, e, stack, n + 1) < 0) {
                return -1;
            }
        }
    }
    for (i = 0; i < sizeof(singles) / sizeof(singles[0]); i++) {
        e = cJSON_GetObjectItemCaseSensitive(s, singles[i]);
        if (e != NULL && ck_cycle(cc, e, stack, n + 1) < 0) {
            return -1;
        }
    }
    if (ptrset_add(&cc->done, s) < 0) {
        return ck_fail(cc, "out of memory");
    }
    return 0;
}

/* Rules over a whole schema object; kept out of ck_keywords' recursion. */
static __attribute__((noinline)) int ck_node_rules(struct cctx *cc,
                                                   const cJSON *s)
{
    const cJSON *stack[SCHEMA_MAX_DEPTH];
    struct kws k;

    kws_collect(s, &k);
    if (ck_limits(cc, &k) < 0 || ck_required_declared(cc, &k) < 0) {
        return -1;
    }
    return ck_cycle(cc, s, stack, 0);
}

static int ck_keywords(struct cctx *cc, const cJSON *s)
{
    const cJSON *kw = NULL;

    if (ck_no_duplicates(cc, s) < 0) {
        return -1;
    }
    cJSON_ArrayForEach(kw, s)
    {
        const struct kw_def *d = kw_find(kw->string);
        if (d != NULL && d->check != NULL && d->check(cc, kw->string, kw) < 0) {
            return -1;
        }
    }
    return ck_node_rules(cc, s);
}

static int ck_schema(struct cctx *cc, const cJSON *s)
{
    char got[80];
    int rc;

    if (cJSON_IsBool(s)) {
        return 0;
    }
    if (!cJSON_IsObject(s)) {
        return ck_fail(cc, "a schema must be an object or a boolean, got %s",
                       ck_got(s, got, sizeof(got)));
    }
    if (ptrset_has(&cc->seen, s)) {
        return 0; /* reached again through a $ref */
    }
    if (ptrset_add(&cc->seen, s) < 0) {
        return ck_fail(cc, "out of memory");
    }
    if (cc->depth >= SCHEMA_CHECK_MAX_DEPTH) {
        return ck_fail(cc, "schemas nested deeper than %d levels",
                       SCHEMA_CHECK_MAX_DEPTH);
    }
    cc->depth++;
    rc = ck_keywords(cc, s);
    cc->depth--;
    return rc;
}

int schema_check(const cJSON *schema, char *err, size_t errlen)
{
    struct cctx cc;
    char got[80];
    int rc = -1;

    memset(&cc, 0, sizeof(cc));
    cc.root = schema;
    wb_init(&cc.err, err, errlen);
    snprintf(cc.loc, sizeof(cc.loc), "#");
    cc.llen = 1;
    if (!cJSON_IsObject(schema)) {
        ck_fail(&cc, "the schema must be a JSON object, got %s",
                schema != NULL ? ck_got(schema, got, sizeof(got)) : "nothing");
        goto out;
    }
    rc = ck_schema(&cc, schema);
out:
    free(cc.done.v);
    free(cc.seen.v);
    return rc;
}

static int check_object_root(const cJSON *schema, const char *what, char *err,
                             size_t errlen)
{
    const cJSON *type = NULL;
    struct wbuf w;
    char got[80];

    if (schema_check(schema, err, errlen) < 0) {
        return -1;
    }
    type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "object") == 0) {
        return 0;
    }
    wb_init(&w, err, errlen);
    wb_append(&w,
              "#: an MCP %s must have \"type\": \"object\" at the top "
              "level, got %s",
              what,
              type != NULL ? ck_got(type, got, sizeof(got)) : "no \"type\"");
    return -1;
}

int schema_check_tool_input(const cJSON *schema, char *err, size_t errlen)
{
    return check_object_root(schema, "inputSchema", err, errlen);
}

int schema_check_tool_output(const cJSON *schema, char *err, size_t errlen)
{
    return check_object_root(schema, "outputSchema", err, errlen);
}

void schema_cleanup(void)
{
    schema_pattern_cleanup();
}

/* The top-level keywords that leave {"error": ...} valid once "required"
 * is widened; any other may refuse it. */
static bool admits_any_object(const cJSON *schema)
{
    static const char *const ok[] = {
        "type",     "properties", "required",     "description", "title",
        "$schema",  "$id",        "$defs",        "definitions", "$comment",
        "examples", "default",    "x-mcp-header",
    };
    const cJSON *item = NULL;
    const cJSON *extra = NULL;
    size_t i;
    bool known;

    cJSON_ArrayForEach(item, schema)
    {
        known = false;
        for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
            if (strcmp(item->string, ok[i]) == 0)
                known = true;
        }
        /* false gets an "error" property (schema_admit_error). */
        if (strcmp(item->string, "additionalProperties") == 0)
            known = cJSON_IsBool(item);
        if (!known)
            return false;
    }
    extra = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    return cJSON_GetObjectItemCaseSensitive(extra, "error") == NULL;
}

cJSON *schema_admit_error(const cJSON *output_schema)
{
    cJSON *out = cJSON_Duplicate(output_schema, true);
    cJSON *req = NULL;
    cJSON *any = NULL;
    cJSON *branch = NULL;
    cJSON *err_req = NULL;
    cJSON *names = NULL;

    if (out == NULL || !admits_any_object(out))
        return out;
    if (cJSON_IsFalse(
            cJSON_GetObjectItemCaseSensitive(out, "additionalProperties"))) {
        cJSON *props = cJSON_GetObjectItemCaseSensitive(out, "properties");
        cJSON *e = NULL;

        if (props == NULL)
            props = cJSON_AddObjectToObject(out, "properties");
        e = cJSON_AddObjectToObject(props, "error");
        if (e == NULL || cJSON_AddStringToObject(e, "type", "object") == NULL) {
            cJSON_Delete(out);
            return NULL;
        }
    }
    req = cJSON_DetachItemFromObjectCaseSensitive(out, "required");
    if (!cJSON_IsArray(req) || cJSON_GetArraySize(req) == 0) {
        cJSON_Delete(req);
        return out; /* nothing is required: {"error"} already passes */
    }
    any = cJSON_AddArrayToObject(out, "anyOf");
    branch = cJSON_CreateObject();
    err_req = cJSON_CreateObject();
    if (any == NULL || branch == NULL || err_req == NULL ||
        !cJSON_AddItemToObject(branch, "required", req)) {
        cJSON_Delete(branch);
        cJSON_Delete(err_req);
        cJSON_Delete(out);
        cJSON_Delete(req);
        return NULL;
    }
    req = NULL;
    cJSON_AddItemToArray(any, branch);
    names = cJSON_CreateStringArray((const char *const[]){"error"}, 1);
    if (!cJSON_AddItemToObject(err_req, "required", names)) {
        cJSON_Delete(names);
        cJSON_Delete(err_req);
        cJSON_Delete(out);
        return NULL;
    }
    cJSON_AddItemToArray(any, err_req);
    return out;
}
