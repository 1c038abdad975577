/* Dockerfile instruction flags, checked and emitted again (see
 * build_flags.h).  The parse is deliberately narrow: what buildah could
 * read differently from us (quotes, escapes, variables, odd spacing, keys
 * in another case, a key twice) is refused, not interpreted. */
#define _GNU_SOURCE
#include "build_flags.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_FIELDS 16
#define PATH_MAXLEN 200
#define ID_MAXLEN 100

static const char RUN_ALLOWED[] =
    "a RUN step takes only --mount=type=cache,target=<dir>[,id=<name>]"
    "[,sharing=shared|locked][,mode=<octal>][,uid=<n>][,gid=<n>][,ro], "
    "--mount=type=bind,target=<dir>[,source=<path in the build context>] "
    "(read-only) and --mount=type=tmpfs,target=<dir>[,size=<bytes>]";

struct fctx {
    const char *kw;
    int line;
    char *err;
    size_t errlen;
};

static int fail(struct fctx *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct fctx *f, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(f->err, f->errlen, "line %d: %s", f->line, msg);
    return -1;
}

int build_flags_is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
           c == '\r' || c == 0x85 || c == 0xa0;
}

static int all_of(const char *s, const char *set)
{
    return s[0] != '\0' && s[strspn(s, set)] == '\0';
}

#define DIGITS "0123456789"
#define OCTAL "01234567"
#define NAME_CHARS                                                             \
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
#define PATH_CHARS NAME_CHARS "/+@"

/* A path of plain names: no "." or ".." component, no empty one but a
 * leading or trailing slash. */
static int plain_path(const char *p)
{
    const char *s = p;

    if (strlen(p) > PATH_MAXLEN || (p[0] != '\0' && !all_of(p, PATH_CHARS)))
        return 0;
    while (*s) {
        size_t len = strcspn(s, "/");

        if ((len == 1 && s[0] == '.') || (len == 2 && strncmp(s, "..", 2) == 0))
            return 0;
        s += len;
        while (*s == '/')
            s++;
    }
    return 1;
}

static int number(const char *v, const char *set, unsigned base,
                  unsigned long max, unsigned *out)
{
    unsigned long n;

    if (!all_of(v, set) || strlen(v) > 7)
        return 0;
    n = strtoul(v, NULL, (int)base);
    if (n > max)
        return 0;
    *out = (unsigned)n;
    return 1;
}

/* ------------------------------------------------------------- mounts */

struct field {
    char *key;
    char *val; /* NULL for a bare option (ro) */
};

struct mount {
    struct field f[MAX_FIELDS];
    size_t n;
    char *copy;
};

static const char *get(const struct mount *m, const char *const *names)
{
    size_t i, k;

    for (i = 0; i < m->n; i++)
        for (k = 0; names[k] != NULL; k++)
            if (strcmp(m->f[i].key, names[k]) == 0)
                return m->f[i].val != NULL ? m->f[i].val : "";
    return NULL;
}

static int has(const struct mount *m, const char *key)
{
    const char *names[] = {key, NULL};

    return get(m, names) != NULL;
}

/* Splits type=cache,id=x,... into fields; every key one of allowed. */
static int split_mount(struct fctx *f, const char *spec, struct mount *m)
{
    char *save = NULL;
    char *tok;
    size_t i;

    memset(m, 0, sizeof(*m));
    m->copy = strdup(spec);
    if (m->copy == NULL)
        return fail(f, "out of memory");
    if (spec[0] == '\0' || spec[0] == ',' || spec[strlen(spec) - 1] == ',' ||
        strstr(spec, ",,") != NULL)
        return fail(f,
                    "RUN --mount=%s: an empty field; write "
                    "--mount=type=<type>,target=<dir>,...",
                    spec);
    for (tok = strtok_r(m->copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');

        if (m->n == MAX_FIELDS)
            return fail(f, "RUN --mount=%s: too many fields", spec);
        if (eq != NULL)
            *eq = '\0';
        m->f[m->n].key = tok;
        m->f[m->n].val = eq != NULL ? eq + 1 : NULL;
        for (i = 0; i < m->n; i++) {
            if (strcmp(m->f[i].key, tok) == 0)
                return fail(f, "RUN --mount=%s: \"%s\" is given twice", spec,
                            tok);
        }
        m->n++;
    }
    return 0;
}

/* Every field's key is in keys (bare ones in bare), valued as it must. */
static int only_keys(struct fctx *f, const char *spec, const struct mount *m,
                     const char *const *keys, const char *const *bare,
                     const char *type, const char *allowed)
{
    size_t i, k;

    for (i = 0; i < m->n; i++) {
        int known = 0;

        for (k = 0; keys[k] != NULL && !known; k++)
            known = strcmp(m->f[i].key, keys[k]) == 0 && m->f[i].val != NULL;
        for (k = 0; bare[k] != NULL && !known; k++)
            known = strcmp(m->f[i].key, bare[k]) == 0 && m->f[i].val == NULL;
        if (!known)
            return fail(f,
                        "RUN --mount=%s: \"%s%s%s\" is not allowed in a %s "
                        "mount; it takes %s",
                        spec, m->f[i].key, m->f[i].val != NULL ? "=" : "",
                        m->f[i].val != NULL ? m->f[i].val : "", type, allowed);
    }
    return 0;
}

static const char *const TARGET[] = {"target", "dst", "destination", NULL};
static const char *const SOURCE[] = {"source", "src", NULL};

static int target_of(struct fctx *f, const char *spec, const struct mount *m,
                     const char **target)
{
    const char *t = get(m, TARGET);

    if (t == NULL || t[0] != '/' || !plain_path(t) || strcmp(t, "/") == 0)
        return fail(f,
                    "RUN --mount=%s: target= must be an absolute directory "
                    "in the build's root, of plain names (letters, digits, "
                    ". _ - + @), without . or ..",
                    spec);
    *target = t;
    return 0;
}

static int cache_mount(struct fctx *f, const char *spec, const struct mount *m,
                       struct build_flags_caches *caches, char **out)
{
    static const char *const keys[] = {
        "type",    "id",   "target", "dst", "destination",
        "sharing", "mode", "uid",    "gid", NULL};
    static const char *const bare[] = {"ro", "readonly", "rw", NULL};
    static const char *const ID[] = {"id", NULL};
    static const char *const SHARING[] = {"sharing", NULL};
    static const char *const MODE[] = {"mode", NULL};
    static const char *const UID[] = {"uid", NULL};
    static const char *const GID[] = {"gid", NULL};
    const char *target = NULL;
    const char *id = get(m, ID);
    const char *sharing = get(m, SHARING);
    const char *v = NULL;
    struct build_flags_cache c = {NULL, 0, 0, 0755};
    char *name = NULL;
    char *p;
    int ro = has(m, "ro") || has(m, "readonly");

    if (has(m, "from") || get(m, SOURCE) != NULL)
        return fail(f,
                    "RUN --mount=%s: a cache mount takes no from= or "
                    "source=: it is the build's own cache, kept between this "
                    "engine's builds (a stage's files can be copied with "
                    "COPY --from=<stage>)",
                    spec);
    if (only_keys(f, spec, m, keys, bare, "cache",
                  "type, id, target, sharing, mode, uid, gid and ro") != 0 ||
        target_of(f, spec, m, &target) != 0)
        return -1;
    if (id != NULL && (strlen(id) > ID_MAXLEN || !all_of(id, NAME_CHARS) ||
                       id[0] == '.' || id[0] == '-'))
        return fail(f,
                    "RUN --mount=%s: cache id \"%s\" must be a plain name of "
                    "letters, digits, . _ - (no /, no .., at most %d "
                    "characters): a cache is named within this engine's "
                    "build cache, never a host path",
                    spec, id, ID_MAXLEN);
    if (sharing != NULL && strcmp(sharing, "shared") != 0 &&
        strcmp(sharing, "locked") != 0)
        return fail(f, "RUN --mount=%s: sharing= is shared or locked", spec);
    if ((v = get(m, MODE)) != NULL && !number(v, OCTAL, 8, 01777, &c.mode))
        return fail(f, "RUN --mount=%s: mode= is octal, at most 1777", spec);
    if ((v = get(m, UID)) != NULL && !number(v, DIGITS, 10, 65535, &c.uid))
        return fail(f, "RUN --mount=%s: uid= is a number 0-65535", spec);
    if ((v = get(m, GID)) != NULL && !number(v, DIGITS, 10, 65535, &c.gid))
        return fail(f, "RUN --mount=%s: gid= is a number 0-65535", spec);
    /* Without an id a cache is named by its target, as one name. */
    if (id != NULL)
        name = strdup(id);
    else if (asprintf(&name, "target%s", target) < 0)
        name = NULL;
    for (p = name; p != NULL && *p; p++)
        if (*p == '/')
            *p = '_';
    if (name == NULL ||
        asprintf(out, "--mount=type=cache,id=%s,target=%s,sharing=%s%s", name,
                 target, sharing != NULL ? sharing : "shared",
                 ro ? ",ro" : "") < 0) {
        free(name);
        *out = NULL;
        return fail(f, "out of memory");
    }
    if (caches != NULL) {
        struct build_flags_cache *g =
            realloc(caches->v, (caches->n + 1) * sizeof(*caches->v));

        if (g == NULL) {
            free(name);
            return fail(f, "out of memory");
        }
        caches->v = g;
        c.id = name;
        caches->v[caches->n++] = c;
    } else {
        free(name);
    }
    return 0;
}

static int bind_mount(struct fctx *f, const char *spec, const struct mount *m,
                      char **out)
{
    static const char *const keys[] = {"type", "source",      "src", "target",
                                       "dst",  "destination", NULL};
    static const char *const bare[] = {"ro", "readonly", NULL};
    const char *target = NULL;
    const char *src = get(m, SOURCE);

    if (has(m, "from"))
        return fail(f,
                    "RUN --mount=%s: a bind mount takes no from=: buildah "
                    "1.28 follows a stage's symlinks out to the host; copy "
                    "what you need with COPY --from=<stage>",
                    spec);
    if (has(m, "rw") || has(m, "readwrite"))
        return fail(f,
                    "RUN --mount=%s: a bind mount of the build context is "
                    "read-only; copy the files (COPY) to change them",
                    spec);
    if (only_keys(f, spec, m, keys, bare, "bind",
                  "type, source (a path in the build context), target and "
                  "ro") != 0 ||
        target_of(f, spec, m, &target) != 0)
        return -1;
    if (src != NULL && (src[0] == '/' || !plain_path(src)))
        return fail(f,
                    "RUN --mount=%s: source \"%s\" must be a path in the build "
                    "context (file_mounts and build_context), relative, "
                    "without .. and of plain names: a bind mount never "
                    "reaches the host",
                    spec, src);
    if (asprintf(out, "--mount=type=bind%s%s,target=%s,ro",
                 src != NULL && src[0] ? ",source=" : "",
                 src != NULL ? src : "", target) < 0) {
        *out = NULL;
        return fail(f, "out of memory");
    }
    return 0;
}

static int tmpfs_mount(struct fctx *f, const char *spec, const struct mount *m,
                       char **out)
{
    static const char *const keys[] = {
        "type", "target", "dst", "destination", "size", "tmpfs-size", NULL};
    static const char *const bare[] = {NULL};
    static const char *const SIZE[] = {"size", "tmpfs-size", NULL};
    const char *target = NULL;
    const char *size = get(m, SIZE);
    unsigned n = 0;

    if (has(m, "size") && has(m, "tmpfs-size"))
        return fail(f, "RUN --mount=%s: give size= once", spec);
    if (only_keys(f, spec, m, keys, bare, "tmpfs", "type, target and size") !=
            0 ||
        target_of(f, spec, m, &target) != 0)
        return -1;
    if (size != NULL && !number(size, DIGITS, 10, 4000000000u, &n))
        return fail(f, "RUN --mount=%s: size= is a number of bytes", spec);
    if (asprintf(out, "--mount=type=tmpfs,target=%s%s%s", target,
                 size != NULL ? ",tmpfs-size=" : "",
                 size != NULL ? size : "") < 0) {
        *out = NULL;
        return fail(f, "out of memory");
    }
    return 0;
}

static int run_mount(struct fctx *f, const char *spec,
                     struct build_flags_caches *caches, char **out)
{
    static const char *const TYPE[] = {"type", NULL};
    struct mount m;
    const char *type = NULL;
    int rc = -1;

    if (split_mount(f, spec, &m) != 0)
        goto out;
    type = get(&m, TYPE);
    if (type == NULL) {
        fail(f, "RUN --mount=%s: name the type first: %s", spec, RUN_ALLOWED);
        goto out;
    }
    if (strcmp(type, "cache") == 0)
        rc = cache_mount(f, spec, &m, caches, out);
    else if (strcmp(type, "bind") == 0)
        rc = bind_mount(f, spec, &m, out);
    else if (strcmp(type, "tmpfs") == 0)
        rc = tmpfs_mount(f, spec, &m, out);
    else if (strcmp(type, "secret") == 0 || strcmp(type, "ssh") == 0)
        fail(f,
             "RUN --mount=type=%s is not supported: give a build secret "
             "as the blueprint's secrets ({\"ENV_VAR\": \"secret name\"}, "
             "used as $ENV_VAR in RUN) where the engine supports them; %s",
             type, RUN_ALLOWED);
    else
        fail(f, "RUN --mount=%s: type \"%s\" is not allowed; %s", spec, type,
             RUN_ALLOWED);
out:
    free(m.copy);
    return rc;
}

/* -------------------------------------------------------------- flags */

static int stage_ref(const struct build_flags_stages *st, const char *v)
{
    size_t i;
    unsigned n = 0;

    for (i = 0; st != NULL && i < st->n; i++)
        if (st->aliases[i] != NULL && strcasecmp(st->aliases[i], v) == 0)
            return 1;
    return st != NULL && number(v, DIGITS, 10, 1000, &n) && n < st->n;
}

static int platform_ok(const char *v)
{
    static const char *const vars[] = {"$BUILDPLATFORM", "${BUILDPLATFORM}",
                                       "$TARGETPLATFORM", "${TARGETPLATFORM}",
                                       NULL};
    size_t i;

    for (i = 0; vars[i] != NULL; i++)
        if (strcmp(v, vars[i]) == 0)
            return 1;
    return all_of(v, NAME_CHARS "/") && strlen(v) < 64;
}

static int one_flag(struct fctx *f, const char *word,
                    const struct build_flags_stages *st,
                    struct build_flags_caches *caches, char **out)
{
    const char *eq = strchr(word, '=');
    const char *val = eq != NULL ? eq + 1 : NULL;
    char name[64];
    size_t nlen = eq != NULL ? (size_t)(eq - word) : strlen(word);
    const char *kw = f->kw;

    *out = NULL;
    snprintf(name, sizeof(name), "%.*s", (int)(nlen < 63 ? nlen : 63), word);
    if (strpbrk(word, "\"'\\`$") != NULL &&
        !(strcasecmp(kw, "FROM") == 0 && strcmp(name, "--platform") == 0 &&
          val != NULL && platform_ok(val)))
        return fail(f,
                    "%s %s: a flag may hold no quote, backslash or variable "
                    "($NAME is not expanded in flags); write its value out",
                    kw, word);
    for (const unsigned char *c = (const unsigned char *)word; *c; c++)
        if (*c < 0x20 || *c >= 0x7f)
            return fail(f, "%s %s: a flag holds only printable ASCII", kw,
                        name);
    if (strcasecmp(kw, "RUN") == 0) {
        if (strcmp(name, "--mount") == 0 && val == NULL)
            return fail(f, "RUN --mount must be written --mount=<spec>: %s",
                        RUN_ALLOWED);
        if (strcmp(name, "--mount") != 0)
            return fail(f, "RUN %s is not allowed: %s", name, RUN_ALLOWED);
        return run_mount(f, val, caches, out);
    }
    if (strcasecmp(kw, "COPY") == 0 || strcasecmp(kw, "ADD") == 0) {
        const char *allowed =
            strcasecmp(kw, "COPY") == 0
                ? "COPY takes only --from=<an earlier stage's AS name or "
                  "number>, --chown=<user>[:<group>] and --chmod=<octal>"
                : "ADD takes only --chown=<user>[:<group>] and "
                  "--chmod=<octal>";

        if (val != NULL && strcmp(name, "--chown") == 0) {
            const char *colon = strchr(val, ':');
            int ok = colon == NULL
                         ? all_of(val, NAME_CHARS)
                         : colon > val && strchr(colon + 1, ':') == NULL &&
                               all_of(colon + 1, NAME_CHARS) &&
                               strspn(val, NAME_CHARS) == (size_t)(colon - val);

            if (!ok || strlen(val) > 64)
                return fail(f,
                            "%s --chown=%s: name a user (and group) of "
                            "the image, or their ids",
                            kw, val);
        } else if (val != NULL && strcmp(name, "--chmod") == 0) {
            unsigned mode = 0;

            if (!number(val, OCTAL, 8, 07777, &mode))
                return fail(f, "%s --chmod=%s: give an octal mode such as 755",
                            kw, val);
        } else if (val != NULL && strcmp(name, "--from") == 0 &&
                   strcasecmp(kw, "COPY") == 0) {
            if (!stage_ref(st, val))
                return fail(f,
                            "COPY --from=%s: name an earlier stage of this "
                            "Dockerfile (FROM ... AS name, or its number); "
                            "copy from an image by making it a stage first",
                            val);
        } else {
            return fail(f, "%s %s is not allowed: %s", kw, name, allowed);
        }
        *out = strdup(word);
        return *out != NULL ? 0 : fail(f, "out of memory");
    }
    if (strcasecmp(kw, "FROM") == 0) {
        if (strcmp(name, "--platform") != 0 || val == NULL || !platform_ok(val))
            return fail(f,
                        "FROM %s is not allowed: FROM takes only "
                        "--platform=<os/arch> (this engine builds for its "
                        "own platform)",
                        name);
        *out = strdup(word);
        return *out != NULL ? 0 : fail(f, "out of memory");
    }
    if (strcasecmp(kw, "HEALTHCHECK") == 0) {
        static const char *const timing[] = {
            "--interval", "--timeout", "--start-period", "--retries", NULL};
        size_t i;

        for (i = 0; timing[i] != NULL; i++) {
            if (strcmp(name, timing[i]) == 0 && val != NULL &&
                all_of(val, DIGITS "smh.") && strlen(val) < 16) {
                *out = strdup(word);
                return *out != NULL ? 0 : fail(f, "out of memory");
            }
        }
        return fail(f,
                    "HEALTHCHECK %s is not allowed: HEALTHCHECK takes "
                    "--interval, --timeout, --start-period (a duration such "
                    "as 30s) and --retries (a number)",
                    name);
    }
    return fail(f, "%s takes no flags; remove %s", kw, name);
}

int build_flags_check(const char *kw, const char *args, int line,
                      const struct build_flags_stages *stages,
                      struct build_flags_caches *caches, char **canon,
                      const char **rest, char *err, size_t errlen)
{
    struct fctx f = {kw, line, err, errlen};
    const unsigned char *s = (const unsigned char *)args;
    char *acc = strdup("");
    int rc = -1;

    *canon = NULL;
    *rest = args;
    if (acc == NULL)
        return fail(&f, "out of memory");
    for (;;) {
        const unsigned char *e;
        char *word = NULL;
        char *one = NULL;
        char *grown = NULL;

        while (*s && build_flags_is_space(*s))
            s++;
        if (s[0] != '-' || s[1] != '-')
            break;
        e = s;
        while (*e && !build_flags_is_space(*e))
            e++;
        word = strndup((const char *)s, (size_t)(e - s));
        if (word == NULL) {
            fail(&f, "out of memory");
            goto out;
        }
        if (one_flag(&f, word, stages, caches, &one) != 0) {
            free(word);
            goto out;
        }
        free(word);
        if (asprintf(&grown, "%s%s%s", acc, acc[0] ? " " : "", one) < 0) {
            free(one);
            fail(&f, "out of memory");
            goto out;
        }
        free(one);
        free(acc);
        acc = grown;
        s = e;
    }
    *rest = (const char *)s;
    *canon = acc;
    acc = NULL;
    rc = 0;
out:
    free(acc);
    return rc;
}

void build_flags_caches_free(struct build_flags_caches *c)
{
    size_t i;

    for (i = 0; i < c->n; i++)
        free(c->v[i].id);
    free(c->v);
    c->v = NULL;
    c->n = 0;
}
