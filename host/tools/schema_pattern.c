/*
 * schema_pattern.c - ECMA-262 patterns run by PCRE2 (see schema_pattern.h).
 *
 * PCRE2's JavaScript options (PCRE2_ALT_BSUX and PCRE2_EXTRA_ALT_BSUX for
 * \xHH, \uHHHH and \u{H...}, PCRE2_ALLOW_EMPTY_CLASS for [] and [^],
 * PCRE2_MATCH_UNSET_BACKREF, PCRE2_DOLLAR_ENDONLY) cover most of the
 * dialect. A short pass over the source covers the rest: it refuses
 * PCRE2-only syntax (\A, (?i), possessive a++, ...) that ECMA-262 treats as
 * an error, and rewrites the few ECMA-262 meanings PCRE2 spells otherwise
 * ('.', \s and \S, \v, \cX, surrogate pairs, '[' inside a class, the long
 * General_Category names of \p{...}).
 */
#include "schema_pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <ctype.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#define PX_CACHE_MAX 4096
/* Backtracking bounds: well under a second, 16 MiB of frames. */
#define PX_MATCH_LIMIT 1000000u
#define PX_DEPTH_LIMIT 1000000u
#define PX_HEAP_LIMIT_KIB 16384u
/* A thread keeps its match block (and frames) after values up to this. */
#define PX_KEEP_BYTES 4096
#define PX_PARENS_LIMIT 64u
/* The DFA fallback: anchored patterns (one pass) on values up to 64 KiB,
 * with room for about 330 states active at once. */
#define PX_DFA_WORKSPACE 1000
#define PX_DFA_MAX_BYTES 65536

#define PX_COMPILE_OPTIONS                                                     \
    (PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ALT_BSUX |                    \
     PCRE2_ALLOW_EMPTY_CLASS | PCRE2_DOLLAR_ENDONLY |                          \
     PCRE2_MATCH_UNSET_BACKREF | PCRE2_NEVER_UCP | PCRE2_NEVER_BACKSLASH_C)

/* ECMA-262 WhiteSpace and LineTerminator beyond ASCII (\s in PCRE2). */
#define PX_SPACES                                                              \
    "\\s\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f"                    \
    "\\u205f\\u3000\\ufeff"
/* ECMA-262 '.': anything but a line terminator. */
#define PX_DOT "[^\\n\\r\\u2028\\u2029]"

/* ------------------------------------------------------------------------ */
/* ECMA-262 source -> PCRE2 source                                          */
/* ------------------------------------------------------------------------ */

/* The output, and for each output byte the source offset it came from. */
struct px_out {
    char *s;
    size_t *from;
    size_t len;
    size_t cap;
    bool oom;
};

/* What the previous item was, for the quantifier rules. */
enum px_prev { PREV_NONE, PREV_ATOM, PREV_QUANT, PREV_LAZY };

struct px {
    const char *src;
    const char *p;
    struct px_out out;
    enum px_prev prev;
    char *why;
    size_t whylen;
};

static void out_putn(struct px_out *o, const char *s, size_t n, size_t from)
{
    size_t want = o->len + n + 1;
    size_t i;

    if (o->oom) {
        return;
    }
    if (want > o->cap) {
        size_t cap = o->cap == 0 ? 64 : o->cap;
        char *s2 = NULL;
        size_t *from2 = NULL;
        while (cap < want) {
            cap *= 2;
        }
        s2 = realloc(o->s, cap);
        if (s2 != NULL) {
            o->s = s2;
        }
        from2 = realloc(o->from, cap * sizeof(*from2));
        if (from2 != NULL) {
            o->from = from2;
        }
        if (s2 == NULL || from2 == NULL) {
            o->oom = true;
            return;
        }
        o->cap = cap;
    }
    memcpy(o->s + o->len, s, n);
    for (i = 0; i < n; i++) {
        o->from[o->len + i] = from;
    }
    o->len += n;
    o->s[o->len] = '\0';
}

static void px_put(struct px *x, const char *s, size_t from)
{
    out_putn(&x->out, s, strlen(s), from);
}

static int px_fail(struct px *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int px_fail(struct px *x, const char *fmt, ...)
{
    va_list ap;

    if (x->why != NULL && x->whylen > 0) {
        va_start(ap, fmt);
        vsnprintf(x->why, x->whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static size_t hex_run(const char *p, size_t max)
{
    size_t n = 0;

    while (n < max && isxdigit((unsigned char)p[n])) {
        n++;
    }
    return n;
}

static unsigned long hex_value(const char *p, size_t n)
{
    char buf[9] = {0};

    memcpy(buf, p, n < 8 ? n : 8);
    return strtoul(buf, NULL, 16);
}

/*
 * \u escapes: \uHHHH, \u{H...}, and a surrogate pair \uHHHH\uHHHH, which
 * ECMA-262 (with the u flag, as JSON Schema validators run patterns) reads
 * as one code point; a lone surrogate is left for PCRE2 to refuse.
 */
static int px_unicode(struct px *x, size_t at)
{
    const char *p = x->p; /* after "\u" */
    char buf[24];
    unsigned long hi = 0;
    unsigned long lo = 0;
    size_t n = 0;

    if (*p == '{') {
        n = hex_run(p + 1, 9);
        if (n == 0 || n > 8 || p[1 + n] != '}') {
            return px_fail(x, "\\u{...} needs 1 to 8 hex digits and a '}'");
        }
        if (hex_value(p + 1, n) > 0x10FFFF) {
            return px_fail(x, "\\u{%.*s} is beyond U+10FFFF", (int)n, p + 1);
        }
        out_putn(&x->out, p - 2, n + 4, at);
        x->p = p + n + 2;
        return 0;
    }
    if (hex_run(p, 4) != 4) {
        return px_fail(x, "\\u needs 4 hex digits or {...}");
    }
    hi = hex_value(p, 4);
    if (hi >= 0xD800 && hi <= 0xDBFF && p[4] == '\\' && p[5] == 'u' &&
        hex_run(p + 6, 4) == 4) {
        lo = hex_value(p + 6, 4);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            snprintf(buf, sizeof(buf), "\\u{%lx}",
                     0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
            px_put(x, buf, at);
            x->p = p + 10;
            return 0;
        }
    }
    if (hi >= 0xD800 && hi <= 0xDFFF) {
        return px_fail(x, "\\u%.4s is a lone surrogate", p);
    }
    out_putn(&x->out, p - 2, 6, at);
    x->p = p + 4;
    return 0;
}

/*
 * ECMA-262 spells General_Category values by their long names too
 * (\p{Letter}, \p{General_Category=Letter}); PCRE2 10.42 knows the short
 * ones, and the scripts and binary properties under ECMA-262's names.
 */
static const char *const gc_names[][2] = {
    {"Cased_Letter", "L&"},
    {"Close_Punctuation", "Pe"},
    {"Connector_Punctuation", "Pc"},
    {"Control", "Cc"},
    {"cntrl", "Cc"},
    {"Currency_Symbol", "Sc"},
    {"Dash_Punctuation", "Pd"},
    {"Decimal_Number", "Nd"},
    {"digit", "Nd"},
    {"Enclosing_Mark", "Me"},
    {"Final_Punctuation", "Pf"},
    {"Format", "Cf"},
    {"Initial_Punctuation", "Pi"},
    {"Letter", "L"},
    {"Letter_Number", "Nl"},
    {"Line_Separator", "Zl"},
    {"Lowercase_Letter", "Ll"},
    {"Mark", "M"},
    {"Combining_Mark", "M"},
    {"Math_Symbol", "Sm"},
    {"Modifier_Letter", "Lm"},
    {"Modifier_Symbol", "Sk"},
    {"Nonspacing_Mark", "Mn"},
    {"Number", "N"},
    {"Open_Punctuation", "Ps"},
    {"Other", "C"},
    {"Other_Letter", "Lo"},
    {"Other_Number", "No"},
    {"Other_Punctuation", "Po"},
    {"Other_Symbol", "So"},
    {"Paragraph_Separator", "Zp"},
    {"Private_Use", "Co"},
    {"Punctuation", "P"},
    {"punct", "P"},
    {"Separator", "Z"},
    {"Space_Separator", "Zs"},
    {"Spacing_Mark", "Mc"},
    {"Surrogate", "Cs"},
    {"Symbol", "S"},
    {"Titlecase_Letter", "Lt"},
    {"Unassigned", "Cn"},
    {"Uppercase_Letter", "Lu"},
};

/* \p{...} or \P{...}, x->p at the '{'. */
static int px_property(struct px *x, char c, size_t at)
{
    const char *name = x->p + 1;
    size_t len = 0;
    const char *value = name;
    size_t vlen = 0;
    char buf[64];
    size_t i;

    if (*x->p != '{' || strchr(name, '}') == NULL) {
        return px_fail(x, "\\%c must be followed by {property}", c);
    }
    len = strcspn(name, "}");
    vlen = len;
    if (len > 17 && strncmp(name, "General_Category=", 17) == 0) {
        value = name + 17;
        vlen = len - 17;
    } else if (len > 3 && strncmp(name, "gc=", 3) == 0) {
        value = name + 3;
        vlen = len - 3;
    }
    x->p = name + len + 1;
    for (i = 0; i < sizeof(gc_names) / sizeof(gc_names[0]); i++) {
        if (strlen(gc_names[i][0]) == vlen &&
            strncmp(gc_names[i][0], value, vlen) == 0) {
            snprintf(buf, sizeof(buf), "\\%c{%s}", c, gc_names[i][1]);
            px_put(x, buf, at);
            return 0;
        }
    }
    if (value != name) { /* gc=Lu */
        snprintf(buf, sizeof(buf), "\\%c{%.*s}", c,
                 (int)(vlen < 40 ? vlen : 40), value);
        px_put(x, buf, at);
        return 0;
    }
    out_putn(&x->out, name - 3, len + 4, at);
    return 0;
}

/* \1...\99: a backreference (PCRE2 would read some as octal). */
static int px_backref(struct px *x, size_t at)
{
    char buf[16];
    unsigned long n = strtoul(x->p, NULL, 10);

    while (isdigit((unsigned char)*x->p)) {
        x->p++;
    }
    if (n > 65535) {
        return px_fail(x, "backreference \\%lu is too large", n);
    }
    snprintf(buf, sizeof(buf), "\\g{%lu}", n);
    px_put(x, buf, at);
    return 0;
}

/*
 * One escape, x->p just past the backslash. In a class, \S is the caller's
 * business (see px_class); \s becomes its members.
 */
static int px_escape(struct px *x, bool in_class)
{
    size_t at = (size_t)(x->p - 1 - x->src);
    char c = *x->p;
    char buf[8];

    if (c == '\0') {
        return px_fail(x, "a lone backslash ends the pattern");
    }
    x->p++;
    switch (c) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 't':
    case 'n':
    case 'r':
    case 'f':
        out_putn(&x->out, x->p - 2, 2, at);
        return 0;
    case 'b':
    case 'B':
        if (in_class && c == 'B') {
            return px_fail(x, "\\B inside a class");
        }
        out_putn(&x->out, x->p - 2, 2, at);
        return 0;
    case 's':
        px_put(x, in_class ? PX_SPACES : "[" PX_SPACES "]", at);
        return 0;
    case 'S':
        px_put(x, "[^" PX_SPACES "]", at); /* only outside a class */
        return 0;
    case 'v':
        px_put(x, "\\x0b", at);
        return 0;
    case 'c':
        if (!isalpha((unsigned char)*x->p)) {
            return px_fail(x, "\\c must be followed by a letter");
        }
        snprintf(buf, sizeof(buf), "\\x%02x", *x->p % 32);
        px_put(x, buf, at);
        x->p++;
        return 0;
    case '0':
        if (isdigit((unsigned char)*x->p)) {
            return px_fail(x, "\\0 followed by a digit (octal escapes are "
                              "not ECMA-262)");
        }
        px_put(x, "\\x00", at);
        return 0;
    case 'x':
        if (hex_run(x->p, 2) != 2) {
            return px_fail(x, "\\x needs 2 hex digits");
        }
        out_putn(&x->out, x->p - 2, 4, at);
        x->p += 2;
        return 0;
    case 'u':
        return px_unicode(x, at);
    case 'k':
        if (in_class || *x->p != '<') {
            return px_fail(x, "\\k must start a group name reference "
                              "\\k<name> outside a class");
        }
        out_putn(&x->out, x->p - 2, 2, at);
        return 0;
    case 'p':
    case 'P':
        return px_property(x, c, at);
    default:
        break;
    }
    if (c >= '1' && c <= '9') {
        if (in_class) {
            return px_fail(x, "backreference \\%c inside a class", c);
        }
        x->p--;
        return px_backref(x, at);
    }
    if ((unsigned char)c < 0x80 && ispunct((unsigned char)c)) {
        out_putn(&x->out, x->p - 2, 2, at);
        return 0;
    }
    if ((unsigned char)c >= 0x80) {
        return px_fail(x, "unknown escape: a backslash before a non-ASCII "
                          "character");
    }
    return px_fail(x, "unknown escape \\%c", c);
}

/* Does the class starting at p (after '[' and any '^') contain \S? */
static bool class_has_not_space(const char *p)
{
    while (*p != '\0' && *p != ']') {
        if (*p == '\\') {
            if (p[1] == 'S') {
                return true;
            }
            if (p[1] == '\0') {
                return false;
            }
            p++;
        }
        p++;
    }
    return false;
}

/* ECMA-262 WhiteSpace and LineTerminator code points. */
static const uint32_t ecma_spaces[] = {
    0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0xA0,   0x1680, 0x2000,
    0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009,
    0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,
};

static size_t utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

/*
 * The ECMA-262 spaces that class items (PCRE2 source) do not match, as
 * \uHHHH escapes into buf; -1 when the items do not compile (the pattern's
 * own compilation then reports where).
 */
static int spaces_not_in(const char *items, size_t len, char *buf,
                         size_t buflen)
{
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    pcre2_code *code = NULL;
    char *src = malloc(len + 3);
    PCRE2_SIZE off = 0;
    size_t used = 0;
    size_t i;
    int err = 0;
    int rc = -1;

    if (cc == NULL || md == NULL || src == NULL) {
        goto out;
    }
    src[0] = '[';
    memcpy(src + 1, items, len);
    src[len + 1] = ']';
    src[len + 2] = '\0';
    pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
    code = pcre2_compile((PCRE2_SPTR)src, len + 2, PX_COMPILE_OPTIONS, &err,
                         &off, cc);
    if (code == NULL) {
        goto out;
    }
    buf[0] = '\0';
    for (i = 0; i < sizeof(ecma_spaces) / sizeof(ecma_spaces[0]); i++) {
        char ch[4];
        size_t n = utf8_put(ecma_spaces[i], ch);
        if (pcre2_match(code, (PCRE2_SPTR)ch, n, 0, 0, md, NULL) < 0 &&
            used + 6 < buflen) {
            used += (size_t)snprintf(buf + used, buflen - used, "\\u%04x",
                                     (unsigned)ecma_spaces[i]);
        }
    }
    rc = 0;
out:
    pcre2_code_free(code);
    pcre2_match_data_free(md);
    pcre2_compile_context_free(cc);
    free(src);
    return rc;
}

/*
 * A class holding \S, its items at out[mark...]. PCRE2's \S (anything but
 * an ASCII space) is wider than ECMA-262's, so [X\S] becomes the complement
 * of the spaces X lacks, and [^X\S] those spaces: one class either way, no
 * group to backtrack into.
 */
static void px_class_not_space(struct px *x, size_t open, size_t mark,
                               bool negated, size_t at)
{
    char spaces[sizeof(ecma_spaces) / sizeof(ecma_spaces[0]) * 6 + 1];

    if (x->out.oom || spaces_not_in(x->out.s + mark, x->out.len - mark, spaces,
                                    sizeof(spaces)) < 0) {
        px_put(x, "\\S]", at); /* PCRE2 reports the items' error */
        return;
    }
    x->out.len = open;
    px_put(x, negated ? "[" : "[^", at);
    px_put(x, spaces, at);
    px_put(x, "]", at);
}

/* A class, x->p just past '['. */
static int px_class(struct px *x)
{
    size_t at = (size_t)(x->p - 1 - x->src);
    size_t open = x->out.len;
    size_t mark = 0;
    bool negated = *x->p == '^';
    bool not_space = false;

    if (negated) {
        x->p++;
    }
    not_space = class_has_not_space(x->p);
    px_put(x, negated ? "[^" : "[", at);
    mark = x->out.len;
    /* With PCRE2_ALLOW_EMPTY_CLASS a ']' first closes the class, as here. */
    while (*x->p != ']') {
        size_t here = (size_t)(x->p - x->src);
        if (*x->p == '\0') {
            return px_fail(x, "unclosed '['");
        }
        if (*x->p == '\\' && x->p[1] == 'S') {
            x->p += 2; /* added below */
        } else if (*x->p == '\\') {
            x->p++;
            if (px_escape(x, true) < 0) {
                return -1;
            }
        } else if (*x->p == '[') {
            px_put(x, "\\[", here); /* not a PCRE2 [:posix:] class */
            x->p++;
        } else {
            out_putn(&x->out, x->p, 1, here);
            x->p++;
        }
    }
    x->p++;
    if (not_space) {
        px_class_not_space(x, open, mark, negated, at);
    } else {
        px_put(x, "]", at);
    }
    return 0;
}

/* "(?": the ECMA-262 group forms only. */
static int px_group(struct px *x)
{
    const char *g = x->p + 1; /* after '(' */
    size_t at = (size_t)(x->p - x->src);
    size_t n = 1;

    if (*g == '?') {
        bool ok = g[1] == ':' || g[1] == '=' || g[1] == '!' ||
                  (g[1] == '<' && (g[2] == '=' || g[2] == '!' ||
                                   isalpha((unsigned char)g[2]) ||
                                   g[2] == '_' || g[2] == '$'));
        if (!ok) {
            return px_fail(x,
                           "group syntax (?%.1s is not ECMA-262 (groups "
                           "are (...), (?:...), (?<name>...) and the "
                           "lookarounds)",
                           g + 1);
        }
        /* Copy the whole opener: "(?:", "(?=", "(?<=", "(?<name>", ... */
        n = g[1] == '<' && g[2] != '=' && g[2] != '!' ? strcspn(g, ">") + 1
                                                      : (g[1] == '<' ? 3 : 2);
        if (g[n - 1] == '\0') {
            return px_fail(x, "unclosed group name '(?<'");
        }
        n++;
    }
    out_putn(&x->out, x->p, n, at);
    x->p += n;
    x->prev = PREV_NONE;
    return 0;
}

/* At '{': the length of a {n}, {n,} or {n,m} quantifier, 0 if not one. */
static size_t interval_len(const char *p)
{
    size_t n = 1;

    if (!isdigit((unsigned char)p[n])) {
        return 0;
    }
    while (isdigit((unsigned char)p[n])) {
        n++;
    }
    if (p[n] == ',') {
        n++;
        while (isdigit((unsigned char)p[n])) {
            n++;
        }
    }
    return p[n] == '}' ? n + 1 : 0;
}

/* '*', '+', '?' or a '{' interval; a lazy '?' may follow once. */
static int px_quantifier(struct px *x)
{
    size_t at = (size_t)(x->p - x->src);
    char c = *x->p;
    size_t n = c == '{' ? interval_len(x->p) : 1;

    if (n == 0) {
        return px_fail(x, "a '{' that does not start a quantifier (escape a "
                          "literal brace as \\{)");
    }
    if (x->prev == PREV_QUANT && c == '?') {
        out_putn(&x->out, x->p, 1, at);
        x->p++;
        x->prev = PREV_LAZY;
        return 0;
    }
    if (x->prev == PREV_QUANT || x->prev == PREV_LAZY) {
        return px_fail(x,
                       "a quantifier cannot follow another quantifier "
                       "('%c' at offset %zu)",
                       c, at);
    }
    if (x->prev == PREV_NONE) {
        return px_fail(x, "nothing to repeat before '%c' at offset %zu", c, at);
    }
    out_putn(&x->out, x->p, n, at);
    x->p += n;
    x->prev = PREV_QUANT;
    return 0;
}

static int px_item(struct px *x)
{
    size_t at = (size_t)(x->p - x->src);
    char c = *x->p;

    switch (c) {
    case '\\':
        x->p++;
        x->prev = PREV_ATOM;
        return px_escape(x, false);
    case '[':
        x->p++;
        x->prev = PREV_ATOM;
        return px_class(x);
    case '(':
        return px_group(x);
    case ')':
        x->prev = PREV_ATOM;
        break;
    case '|':
    case '^':
    case '$':
        x->prev = PREV_NONE; /* ECMA-262 does not repeat an assertion */
        break;
    case '*':
    case '+':
    case '?':
    case '{':
        return px_quantifier(x);
    case '.':
        px_put(x, PX_DOT, at);
        x->p++;
        x->prev = PREV_ATOM;
        return 0;
    default:
        x->prev = PREV_ATOM;
        break;
    }
    out_putn(&x->out, x->p, 1, at);
    x->p++;
    return 0;
}

/* The PCRE2 source for an ECMA-262 pattern; -1 with why when refused. */
static int px_translate(struct px *x)
{
    x->p = x->src;
    x->prev = PREV_NONE;
    out_putn(&x->out, "", 0, 0); /* a string even when empty */
    while (*x->p != '\0') {
        if (px_item(x) < 0) {
            return -1;
        }
    }
    if (x->out.oom) {
        return px_fail(x, "out of memory");
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Compiling and caching                                                    */
/* ------------------------------------------------------------------------ */

struct px_entry {
    UT_hash_handle hh;
    pcre2_code *code; /* NULL: not usable, see why */
    /* For the DFA matcher, which lacks PCRE2_MATCH_INVALID_UTF; may be NULL */
    pcre2_code *code_dfa;
    bool anchored; /* every branch starts with '^' */
    char *why;
    char pattern[];
};

static pthread_rwlock_t px_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct px_entry *px_cache = NULL;

static void px_entry_free(struct px_entry *e)
{
    if (e == NULL) {
        return;
    }
    pcre2_code_free(e->code);
    pcre2_code_free(e->code_dfa);
    free(e->why);
    free(e);
}

/* Compile translated source; NULL with why naming the source offset. */
static pcre2_code *px_compile_source(const struct px *x, uint32_t options,
                                     char *why, size_t whylen)
{
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    pcre2_code *code = NULL;
    PCRE2_UCHAR msg[160];
    PCRE2_SIZE off = 0;
    int err = 0;

    if (cc == NULL) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
    pcre2_set_parens_nest_limit(cc, PX_PARENS_LIMIT);
    code = pcre2_compile((PCRE2_SPTR)x->out.s, x->out.len, options, &err, &off,
                         cc);
    pcre2_compile_context_free(cc);
    if (code == NULL) {
        size_t at = strlen(x->src);
        if (x->out.len > 0 && off < x->out.len) {
            at = x->out.from[off];
        }
        pcre2_get_error_message(err, msg, sizeof(msg));
        snprintf(why, whylen, "%s (near offset %zu)", (const char *)msg, at);
    }
    return code;
}

/* Translate and compile; NULL only when out of memory. */
static struct px_entry *px_build(const char *pattern)
{
    size_t plen = strlen(pattern);
    struct px_entry *e = calloc(1, sizeof(*e) + plen + 1);
    struct px x = {.src = pattern};
    char why[256] = "";

    if (e == NULL) {
        return NULL;
    }
    memcpy(e->pattern, pattern, plen + 1);
    x.why = why;
    x.whylen = sizeof(why);
    if (px_translate(&x) == 0) {
        e->code = px_compile_source(&x, PX_COMPILE_OPTIONS, why, sizeof(why));
    }
    if (e->code != NULL) {
        uint32_t all = 0;
        e->code_dfa =
            px_compile_source(&x, PX_COMPILE_OPTIONS & ~PCRE2_MATCH_INVALID_UTF,
                              why, sizeof(why));
        pcre2_pattern_info(e->code, PCRE2_INFO_ALLOPTIONS, &all);
        e->anchored = (all & PCRE2_ANCHORED) != 0;
    }
    free(x.out.s);
    free(x.out.from);
    if (e->code == NULL) {
        e->why = strdup(why);
        if (e->why == NULL) {
            free(e);
            return NULL;
        }
    }
    return e;
}

/*
 * The compiled pattern, from the cache when possible. *owned is set when
 * the cache was full and the caller must px_entry_free() the result.
 */
static struct px_entry *px_get(const char *pattern, bool *owned)
{
    struct px_entry *e = NULL;
    struct px_entry *built = NULL;

    *owned = false;
    pthread_rwlock_rdlock(&px_lock);
    HASH_FIND_STR(px_cache, pattern, e);
    pthread_rwlock_unlock(&px_lock);
    if (e != NULL) {
        return e;
    }
    built = px_build(pattern);
    if (built == NULL) {
        return NULL;
    }
    pthread_rwlock_wrlock(&px_lock);
    HASH_FIND_STR(px_cache, pattern, e);
    if (e == NULL && HASH_COUNT(px_cache) < PX_CACHE_MAX) {
        HASH_ADD_STR(px_cache, pattern, built);
        e = built;
        built = NULL;
    }
    pthread_rwlock_unlock(&px_lock);
    if (e == NULL) {
        *owned = true;
        return built;
    }
    px_entry_free(built);
    return e;
}

int schema_pattern_check(const char *pattern, char *why, size_t whylen)
{
    bool owned = false;
    struct px_entry *e = px_get(pattern, &owned);
    int rc = 0;

    if (e == NULL) {
        snprintf(why, why != NULL ? whylen : 0, "out of memory");
        return -1;
    }
    if (e->code == NULL) {
        snprintf(why, why != NULL ? whylen : 0, "%s", e->why);
        rc = -1;
    }
    if (owned) {
        px_entry_free(e);
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Matching                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * The limits are one read-only match context; each thread keeps its own
 * match data, whose backtracking frames PCRE2 reuses from call to call.
 */
static pthread_once_t px_once = PTHREAD_ONCE_INIT;
static pthread_key_t px_key;
static bool px_key_ok;
static pcre2_match_context *px_mctx;

static void px_match_data_free(void *md)
{
    pcre2_match_data_free(md);
}

static void px_init(void)
{
    px_key_ok = pthread_key_create(&px_key, px_match_data_free) == 0;
    px_mctx = pcre2_match_context_create(NULL);
    if (px_mctx != NULL) {
        pcre2_set_match_limit(px_mctx, PX_MATCH_LIMIT);
        pcre2_set_depth_limit(px_mctx, PX_DEPTH_LIMIT);
        pcre2_set_heap_limit(px_mctx, PX_HEAP_LIMIT_KIB);
    }
}

static pcre2_match_data *px_match_data(void)
{
    pcre2_match_data *md = NULL;

    if (!px_key_ok) {
        return NULL;
    }
    md = pthread_getspecific(px_key);
    if (md == NULL) {
        /* One pair: the search only asks whether there is a match. */
        md = pcre2_match_data_create(1, NULL);
        if (md != NULL && pthread_setspecific(px_key, md) != 0) {
            pcre2_match_data_free(md);
            md = NULL;
        }
    }
    return md;
}

static bool px_limit_hit(int rc)
{
    return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
           rc == PCRE2_ERROR_HEAPLIMIT;
}

/*
 * Backtracking first (fast, and the only matcher for backreferences);
 * when it hits its limits on an anchored pattern, the DFA matcher, which
 * never backtracks: it answers ^(a+)+$ in one pass over the value, its
 * work bounded by the value's length times the workspace. Anything else
 * (unanchored, backreferences, a longer value) keeps the limit error.
 */
static int px_search(const struct px_entry *e, const char *subject,
                     pcre2_match_data *md)
{
    int ws[PX_DFA_WORKSPACE];
    size_t len = strlen(subject);
    int rc = pcre2_match(e->code, (PCRE2_SPTR)subject, len, 0, 0, md, px_mctx);
    int dfa = 0;

    if (!px_limit_hit(rc) || e->code_dfa == NULL || !e->anchored ||
        len > PX_DFA_MAX_BYTES) {
        return rc;
    }
    /* It checks the subject's UTF-8 itself and refuses invalid input. */
    dfa = pcre2_dfa_match(e->code_dfa, (PCRE2_SPTR)subject, len, 0, 0, md,
                          px_mctx, ws, PX_DFA_WORKSPACE);
    if (dfa >= 0 || dfa == PCRE2_ERROR_NOMATCH) {
        return dfa;
    }
    return rc;
}

enum schema_pattern_result schema_pattern_match(const char *pattern,
                                                const char *subject, char *why,
                                                size_t whylen)
{
    bool owned = false;
    struct px_entry *e = NULL;
    pcre2_match_data *md = NULL;
    enum schema_pattern_result res = SCHEMA_PATTERN_BAD;
    size_t wl = why != NULL ? whylen : 0;
    int rc;

    pthread_once(&px_once, px_init);
    e = px_get(pattern, &owned);
    md = px_match_data();
    if (e == NULL || md == NULL || px_mctx == NULL) {
        snprintf(why, wl, "out of memory matching the pattern");
        goto out;
    }
    if (e->code == NULL) {
        snprintf(why, wl, "%s", e->why);
        goto out;
    }
    rc = px_search(e, subject, md);
    if (rc >= 0) {
        res = SCHEMA_PATTERN_MATCH;
    } else if (rc == PCRE2_ERROR_NOMATCH) {
        res = SCHEMA_PATTERN_NO_MATCH;
    } else if (px_limit_hit(rc)) {
        res = SCHEMA_PATTERN_LIMIT;
        snprintf(why, wl,
                 "matching gave up: the pattern backtracks too much "
                 "on this value (simplify the pattern, e.g. avoid "
                 "nested repetition like (a+)+, or shorten the "
                 "value)");
    } else {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        snprintf(why, wl, "matching failed: %s", (const char *)msg);
    }
out:
    if (md != NULL &&
        (res == SCHEMA_PATTERN_LIMIT || strlen(subject) > PX_KEEP_BYTES)) {
        /* Its frames may have grown to the heap limit: do not keep them. */
        pthread_setspecific(px_key, NULL);
        pcre2_match_data_free(md);
    }
    if (owned) {
        px_entry_free(e);
    }
    return res;
}

void schema_pattern_cleanup(void)
{
    struct px_entry *e = NULL;
    struct px_entry *tmp = NULL;

    pthread_rwlock_wrlock(&px_lock);
    HASH_ITER(hh, px_cache, e, tmp)
    {
        HASH_DEL(px_cache, e);
        px_entry_free(e);
    }
    pthread_rwlock_unlock(&px_lock);
    if (px_key_ok) {
        pcre2_match_data_free(pthread_getspecific(px_key));
        pthread_setspecific(px_key, NULL);
    }
}
