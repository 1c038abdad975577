/* The Dockerfile buildah builds for a blueprint (see buildah_dockerfile.h).
 * Only what buildah cannot do for us is handled here: naming local images,
 * heredocs (buildah 1.28 predates them), keeping COPY/ADD in the context
 * and the engine's own steps; every other instruction goes through as
 * written and buildah parses it. */
#define _GNU_SOURCE
#include "buildah_dockerfile.h"

#include "build_flags.h"
#include "code_mounts.h"
#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HEREDOCS 8

static const char *const keywords[] = {
    "ADD",        "ARG",     "CMD",     "COPY",        "ENTRYPOINT",
    "ENV",        "EXPOSE",  "FROM",    "HEALTHCHECK", "LABEL",
    "MAINTAINER", "ONBUILD", "RUN",     "SHELL",       "STOPSIGNAL",
    "USER",       "VOLUME",  "WORKDIR", NULL,
};

struct prep {
    struct buildah_dockerfile_out *out;
    size_t cap;
    buildah_dockerfile_resolve_fn resolve;
    void *ctx;
    int stage;        /* -1 before the first FROM */
    char **aliases;   /* per stage: its AS name or NULL */
    char **bases;     /* per stage: the resolved base */
    char **heads;     /* per stage: "FROM [flags] <local image>" */
    char *final_user; /* last USER of the latest stage */
    int heredocs;
    char *err;
    size_t errlen;
};

static int fail(struct prep *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct prep *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int add_step(struct prep *p, int line, int user, int setup,
                    const char *orig, const char *emit)
{
    struct buildah_dockerfile_out *o = p->out;
    struct buildah_dockerfile_step *s = NULL;

    if (o->n_steps == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 32;
        struct buildah_dockerfile_step *n = realloc(o->steps, cap * sizeof(*n));

        if (n == NULL)
            return fail(p, "out of memory");
        o->steps = n;
        p->cap = cap;
    }
    s = &o->steps[o->n_steps++];
    memset(s, 0, sizeof(*s));
    s->stage = p->stage;
    s->line = line;
    s->setup = setup;
    if (user)
        s->user_step = ++o->user_steps;
    s->text = strdup(orig);
    s->emit = strdup(emit);
    return s->text != NULL && s->emit != NULL ? 0 : fail(p, "out of memory");
}

/* printf %b argument for s: the shell gets s back byte for byte. */
static char *b_escape(const char *s)
{
    size_t len = strlen(s);
    char *out = malloc(len * 5 + 1);
    size_t o = 0;

    if (out == NULL)
        return NULL;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (c == '\\') {
            out[o++] = '\\';
            out[o++] = '\\';
        } else if (c == '\'' || c < 0x20 || c >= 0x7f) {
            o += (size_t)sprintf(out + o, "\\0%03o", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
    return out;
}

/* RUN [flags] of a shell script with any bytes in it, on one line. */
static char *run_script(const char *flags, const char *script)
{
    char *esc = b_escape(script);
    char *line = NULL;

    if (esc == NULL)
        return NULL;
    if (asprintf(&line, "RUN %s%ssh -c \"$(printf %%b '%s')\"", flags,
                 flags[0] ? " " : "", esc) < 0)
        line = NULL;
    free(esc);
    return line;
}

/* --------------------------------------------------------------- words */

/* The next whitespace-separated word of *s (advanced), malloc'd, or NULL. */
static char *next_word(const char **s)
{
    const char *a = *s;
    const char *b;
    char *w;

    while (isspace((unsigned char)*a))
        a++;
    if (*a == '\0') {
        *s = a;
        return NULL;
    }
    b = a;
    while (*b && !isspace((unsigned char)*b))
        b++;
    w = strndup(a, (size_t)(b - a));
    *s = b;
    return w;
}

/* The flags of instruction kw at the start of args, checked
 * (build_flags.c): 0 with *canon (malloc'd, what to emit for them, "" when
 * none) and *rest (into args, after them), or -1 with p->err. */
static int check_flags(struct prep *p, const char *kw, const char *args,
                       int line, char **canon, const char **rest)
{
    struct build_flags_stages st;

    st.aliases = p->aliases;
    st.n = p->stage > 0 ? (size_t)p->stage : 0;
    return build_flags_check(kw, args, line, &st, &p->out->caches, canon, rest,
                             p->err, p->errlen);
}

/* ------------------------------------------------------------- context */

/* The context path of a source: 0, or -1 when it leaves the context. */
static int inside_context(const char *src)
{
    int depth = 0;
    const char *s = src;

    while (*s) {
        const char *e = strchr(s, '/');
        size_t len = e != NULL ? (size_t)(e - s) : strlen(s);

        if (len == 2 && strncmp(s, "..", 2) == 0) {
            if (--depth < 0)
                return -1;
        } else if (len > 0 && !(len == 1 && s[0] == '.')) {
            depth++;
        }
        s += len;
        if (*s == '/')
            s++;
    }
    return 0;
}

static int check_one_source(struct prep *p, int line, const char *kw,
                            const char *src)
{
    /* buildah would fetch a URL itself, from the host's network (its
     * loopback and link-local services included), not the build's. */
    if (strstr(src, "://") != NULL || strncmp(src, "git@", 4) == 0)
        return fail(p,
                    "line %d: %s of a URL (\"%s\") is not supported: fetch "
                    "it in a RUN step (curl or git, on the build's network) "
                    "or put the file in the build context",
                    line, kw, src);
    if (inside_context(src) != 0)
        return fail(
            p,
            "line %d: %s source \"%s\" is outside the build context; name a "
            "file "
            "in it (file_mounts are in it at their path without the leading /)",
            line, kw, src);
    return 0;
}

/* COPY/ADD: every source stays in the context (not for --from=stage);
 * flags as check_flags emits them, rest what follows them. */
static int check_sources(struct prep *p, int line, const char *kw,
                         const char *flags, const char *rest)
{
    cJSON *json = NULL;
    char *words[256];
    size_t n = 0, i;
    int rc = 0;

    if (strstr(flags, "--from=") != NULL)
        return 0;
    if (rest[0] == '[') {
        const cJSON *it = NULL;

        json = cJSON_Parse(rest);
        if (!cJSON_IsArray(json))
            rc = fail(p, "line %d: %s [...] must be a JSON array of strings",
                      line, kw);
        cJSON_ArrayForEach(it, json)
        {
            if (rc == 0 && n < 256 && cJSON_IsString(it))
                words[n++] = strdup(it->valuestring);
        }
    } else {
        char *w;

        while (n < 256 && (w = next_word(&rest)) != NULL)
            words[n++] = w;
    }
    if (rc == 0 && n < 2)
        rc = fail(p, "line %d: %s needs a source and a destination", line, kw);
    for (i = 0; rc == 0 && i + 1 < n; i++)
        rc = check_one_source(p, line, kw, words[i]);
    for (i = 0; i < n; i++)
        free(words[i]);
    cJSON_Delete(json);
    return rc;
}

/* ------------------------------------------------------------ heredocs */

struct heredoc {
    char *word;
    char *marker; /* as written, e.g. <<-"EOF" */
    int strip_tabs;
    char *body;
};

/* Finds the heredoc markers of a first line; returns how many. */
static int find_markers(const char *line, struct heredoc *h, int max)
{
    const char *s = line;
    int n = 0;

    while (n < max && (s = strstr(s, "<<")) != NULL) {
        const char *a = s + 2;
        const char *w;
        char q = 0;

        memset(&h[n], 0, sizeof(h[n]));
        if (*a == '-') {
            h[n].strip_tabs = 1;
            a++;
        }
        if (*a == '"' || *a == '\'')
            q = *a++;
        w = a;
        while (isalnum((unsigned char)*a) || *a == '_')
            a++;
        if (a == w || (q != 0 && *a != q)) {
            s += 2;
            continue;
        }
        h[n].word = strndup(w, (size_t)(a - w));
        if (q != 0)
            a++;
        h[n].marker = strndup(s, (size_t)(a - s));
        n++;
        s = a;
    }
    return n;
}

/* Reads the bodies of h[0..n) from lines[*i + 1 ...]; *i ends on the last
 * terminator.  raw gets every line read (for a shell to parse again). */
static int read_bodies(struct prep *p, char **lines, size_t nlines, size_t *i,
                       struct heredoc *h, int n, char **raw, int line)
{
    int k;

    for (k = 0; k < n; k++) {
        char *body = strdup("");

        for (;;) {
            const char *l;
            char *grown = NULL;

            if (++*i >= nlines) {
                free(body);
                return fail(
                    p,
                    "line %d: heredoc <<%s is not closed: end it with a line "
                    "holding only %s",
                    line, h[k].word, h[k].word);
            }
            l = lines[*i];
            if (asprintf(&grown, "%s%s\n", *raw, l) >= 0) {
                free(*raw);
                *raw = grown;
            }
            if (h[k].strip_tabs)
                while (*l == '\t')
                    l++;
            if (strcmp(l, h[k].word) == 0)
                break;
            if (asprintf(&grown, "%s%s\n", body, l) < 0) {
                free(body);
                return fail(p, "out of memory");
            }
            free(body);
            body = grown;
        }
        h[k].body = body;
    }
    return 0;
}

static void free_heredocs(struct heredoc *h, int n)
{
    int k;

    for (k = 0; k < n; k++) {
        free(h[k].word);
        free(h[k].marker);
        free(h[k].body);
    }
}

/* Replaces the first occurrence of from in *s by to. */
static int replace_once(char **s, const char *from, const char *to)
{
    char *at = strstr(*s, from);
    char *out = NULL;

    if (at == NULL)
        return 0;
    if (asprintf(&out, "%.*s%s%s", (int)(at - *s), *s, to, at + strlen(from)) <
        0)
        return -1;
    free(*s);
    *s = out;
    return 0;
}

/* RUN/COPY/ADD whose first line has heredocs. */
static int emit_heredoc(struct prep *p, char **lines, size_t nlines, size_t *i,
                        const char *kw, int line)
{
    struct heredoc h[MAX_HEREDOCS];
    const char *first = lines[*i];
    /* After the keyword, wherever the line indents it. */
    const char *after = first + strspn(first, " \t") + strlen(kw);
    const char *rest = NULL;
    char *raw = strdup("");
    char *emit = NULL;
    char *canon = NULL;
    int n = find_markers(first, h, MAX_HEREDOCS);
    int rc = -1;
    int k;

    if (raw == NULL || check_flags(p, kw, after, line, &canon, &rest) != 0 ||
        read_bodies(p, lines, nlines, i, h, n, &raw, line) != 0)
        goto out;
    if (strcasecmp(kw, "RUN") == 0) {
        char *script = NULL;
        const char *tail = rest + strlen(h[0].marker);

        while (isspace((unsigned char)*tail))
            tail++;
        /* RUN <<EOF: the body is the script; RUN cmd <<EOF: a shell
         * runs the line with its heredocs, as written. */
        if (n == 1 && strncmp(rest, h[0].marker, strlen(h[0].marker)) == 0 &&
            *tail == '\0')
            script = strdup(h[0].body);
        else if (asprintf(&script, "%s\n%s", rest, raw) < 0)
            script = NULL;
        emit = script != NULL ? run_script(canon, script) : NULL;
        free(script);
    } else {
        size_t head = strlen(kw) + (canon[0] ? strlen(canon) + 1 : 0) + 1;

        if (asprintf(&emit, "%s%s%s %s", kw, canon[0] ? " " : "", canon, rest) <
            0)
            emit = NULL;
        for (k = 0; emit != NULL && k < n; k++) {
            char *name = NULL;

            if (asprintf(&name, ".devboxd-heredoc-%d", p->heredocs++) < 0 ||
                replace_once(&emit, h[k].marker, name) != 0) {
                free(name);
                goto out;
            }
            cJSON_AddStringToObject(p->out->files, name, h[k].body);
            free(name);
        }
        if (emit != NULL && check_sources(p, line, kw, canon, emit + head) != 0)
            goto out;
    }
    if (emit == NULL) {
        fail(p, "out of memory");
        goto out;
    }
    {
        char *orig = NULL;

        if (asprintf(&orig, "%s\n%s", first, raw) < 0) {
            fail(p, "out of memory");
            goto out;
        }
        orig[strlen(orig) - 1] = '\0';
        rc = add_step(p, line, 1, 0, orig, emit);
        free(orig);
    }
out:
    free_heredocs(h, n);
    free(raw);
    free(emit);
    free(canon);
    return rc;
}

/* ----------------------------------------------------------------- FROM */

/* Copies the steps of stage `from` after its FROM into the current stage:
 * a stage FROM an earlier one runs that one's steps itself. */
static int inherit(struct prep *p, int from)
{
    struct buildah_dockerfile_out *o = p->out;
    size_t n = o->n_steps;
    size_t first = 0;
    size_t count = buildah_dockerfile_stage_steps(o, from, &first);
    size_t i;

    for (i = first + 1; count > 0 && i < first + count && i < n; i++) {
        struct buildah_dockerfile_step *s = NULL;

        if (add_step(p, o->steps[i].line, 0, o->steps[i].setup,
                     o->steps[i].text, o->steps[i].emit) != 0)
            return -1;
        s = &o->steps[o->n_steps - 1];
        s->user_step = o->steps[i].user_step;
        s->inherited = 1;
        if (strncasecmp(s->emit, "USER ", 5) == 0) {
            const char *u = s->emit + 5;

            free(p->final_user);
            p->final_user = next_word(&u);
        }
    }
    return 0;
}

/* Room for the stage p->stage (already counted) in the per-stage lists. */
static int grow_stages(struct prep *p)
{
    size_t n = (size_t)(p->stage + 1);
    char **a = realloc(p->aliases, n * sizeof(char *));

    if (a != NULL)
        p->aliases = a;
    a = a != NULL ? realloc(p->bases, n * sizeof(char *)) : NULL;
    if (a != NULL)
        p->bases = a;
    a = a != NULL ? realloc(p->heads, n * sizeof(char *)) : NULL;
    if (a != NULL)
        p->heads = a;
    if (a == NULL) {
        p->stage--; /* what the lists hold */
        return fail(p, "out of memory");
    }
    p->aliases[p->stage] = NULL;
    p->bases[p->stage] = NULL;
    p->heads[p->stage] = NULL;
    return 0;
}

static int emit_from(struct prep *p, const char *args, const char *orig,
                     int line)
{
    char *flags = NULL;
    const char *rest = NULL;
    char *image = NULL;
    char *as = NULL;
    char *alias = NULL;
    char *extra = NULL;
    char *local = NULL;
    char *emit = NULL;
    const char *name = NULL;
    int ref = -1;
    int rc = -1;
    int k;

    if (check_flags(p, "FROM", args, line, &flags, &rest) != 0)
        return -1;
    image = next_word(&rest);
    as = next_word(&rest);
    alias = next_word(&rest);
    extra = next_word(&rest);
    if (image == NULL ||
        (as != NULL && (strcasecmp(as, "AS") != 0 || alias == NULL)) ||
        extra != NULL) {
        fail(p,
             "line %d: FROM takes an image and an optional AS name: FROM "
             "runloop/starter-x86_64 [AS build]",
             line);
        goto out;
    }
    if (strchr(image, '$') != NULL) {
        fail(p,
             "line %d: FROM %s: a variable in FROM is not supported; name the "
             "image",
             line, image);
        goto out;
    }
    /* COPY --from names it, and buildah reads it again: a plain name. */
    if (alias != NULL &&
        (alias[strspn(alias, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                             "TUVWXYZ0123456789._-")] != '\0' ||
         strlen(alias) > 64)) {
        fail(p,
             "line %d: FROM ... AS %s: a stage name is letters, digits, . _ "
             "- (at most 64)",
             line, alias);
        goto out;
    }
    for (k = 0; k <= p->stage; k++) { /* an earlier stage */
        if (p->aliases[k] != NULL && strcasecmp(p->aliases[k], image) == 0) {
            local = strdup(image);
            name = p->bases[k];
            ref = k;
            break;
        }
    }
    if (local == NULL) {
        const char *want =
            strncmp(image, "runloop:", 8) == 0 ? image + 8 : image;

        if (p->resolve(p->ctx, want, &local, p->err, p->errlen) != 0) {
            char why[512];

            snprintf(why, sizeof(why), "%s", p->err);
            fail(p, "line %d: FROM %s: %s", line, image, why);
            goto out;
        }
        name = local;
    }
    p->stage++;
    if (grow_stages(p) != 0)
        goto out;
    p->aliases[p->stage] = alias != NULL ? strdup(alias) : NULL;
    p->bases[p->stage] = strdup(name);
    if (ref >= 0)
        p->heads[p->stage] = strdup(p->heads[ref]);
    else if (asprintf(&p->heads[p->stage], "FROM %s%s%s", flags,
                      flags[0] ? " " : "", local) < 0)
        p->heads[p->stage] = NULL;
    free(p->out->final_from);
    p->out->final_from = strdup(name);
    free(p->final_user);
    p->final_user = NULL;
    if (p->heads[p->stage] == NULL ||
        asprintf(&emit, "%s%s%s", p->heads[p->stage],
                 alias != NULL ? " AS " : "", alias != NULL ? alias : "") < 0) {
        emit = NULL;
        fail(p, "out of memory");
        goto out;
    }
    rc = add_step(p, line, 0, 0, orig, emit);
    if (rc == 0 && ref >= 0)
        rc = inherit(p, ref);
out:
    free(flags);
    free(image);
    free(as);
    free(alias);
    free(extra);
    free(local);
    free(emit);
    return rc;
}

/* -------------------------------------------------------------- engine */

static int add_mounts(struct prep *p, const cJSON *fm)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, fm)
    {
        const char *rel = it->string;
        const char *base = strrchr(it->string, '/');
        cJSON *args = cJSON_CreateArray();
        char *json = NULL;
        char *emit = NULL;
        int rc;

        while (*rel == '/')
            rel++;
        if (rel[0] == '\0' || inside_context(rel) != 0 ||
            strstr(rel, "/../") != NULL || strncmp(rel, "../", 3) == 0) {
            cJSON_Delete(args);
            return fail(p,
                        "file_mounts key \"%s\" leaves the build context; use "
                        "an absolute "
                        "path without ..",
                        it->string);
        }
        cJSON_AddStringToObject(p->out->files, rel, it->valuestring);
        /* Also at the context's top by its file name, for COPY name. */
        if (base != NULL && base[1] != '\0' &&
            cJSON_GetObjectItemCaseSensitive(p->out->files, base + 1) == NULL)
            cJSON_AddStringToObject(p->out->files, base + 1, it->valuestring);
        cJSON_AddItemToArray(args, cJSON_CreateString(rel));
        cJSON_AddItemToArray(args, cJSON_CreateString(it->string));
        json = cJSON_PrintUnformatted(args);
        cJSON_Delete(args);
        if (json == NULL ||
            asprintf(&emit, "COPY --chown=1000:1000 %s", json) < 0) {
            free(json);
            return fail(p, "out of memory");
        }
        rc = add_step(p, 0, 0, 0, "file_mounts", emit);
        free(json);
        free(emit);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int add_user(struct prep *p)
{
    return add_step(p, 0, 0, 0, "USER user", "USER user");
}

/* Adds the steps of each item with add_one, which runs them as user (uid
 * 1000, HOME /home/user), as a devbox's commands do; the image's USER is
 * put back after them. */
static int add_as_user(struct prep *p, const cJSON *items,
                       int (*add_one)(struct prep *p, const cJSON *item, int i))
{
    const cJSON *it = NULL;
    char *restore = NULL;
    int i = 0;
    int rc = 0;

    if (cJSON_GetArraySize(items) == 0)
        return 0;
    cJSON_ArrayForEach(it, items)
    {
        if (add_one(p, it, i++) != 0)
            return -1;
    }
    if (asprintf(&restore, "USER %s",
                 p->final_user != NULL ? p->final_user : "root") < 0)
        return fail(p, "out of memory");
    rc = add_step(p, 0, 0, 0, restore, restore);
    free(restore);
    return rc;
}

/* A shell command buildah runs as `RUN <command>` exactly: one line that
 * buildah reads no flag from (it skips what Go takes as spaces) and that
 * does not continue into the next instruction.  Others go through a
 * script. */
static int plain_command(const char *cmd)
{
    const unsigned char *s = (const unsigned char *)cmd;
    size_t len = strlen(cmd);

    while (*s && build_flags_is_space(*s))
        s++;
    while (len > 0 && isspace((unsigned char)cmd[len - 1]))
        len--;
    return strpbrk(cmd, "\r\n") == NULL && *s != '-' &&
           (len == 0 || cmd[len - 1] != '\\');
}

/* system_setup_commands[i]: USER user before the first. */
static int add_setup(struct prep *p, const cJSON *cmd, int i)
{
    char *orig = NULL;
    char *emit = NULL;
    int rc = -1;

    if (i == 0 && add_user(p) != 0)
        return -1;
    if (asprintf(&orig, "RUN %s", cmd->valuestring) < 0)
        return fail(p, "out of memory");
    if (plain_command(cmd->valuestring))
        emit = strdup(orig);
    else
        emit = run_script("", cmd->valuestring);
    rc = emit != NULL ? add_step(p, 0, 1, i + 1, orig, emit)
                      : fail(p, "out of memory");
    free(orig);
    free(emit);
    return rc;
}

/* code_mounts[i]: its bundle (put in the context by the builder, see
 * BD_CODE_DIR) cloned into /home/user/<repo_name> as user, then its
 * install_command there. */
static int add_code_mount(struct prep *p, const cJSON *m, int i)
{
    const char *owner = util_json_str(m, "repo_owner");
    const char *name = util_json_str(m, "repo_name");
    char tmp[64];
    char *orig = NULL;
    char *copy = NULL;
    char *script = NULL;
    char *emit = NULL;
    int rc = -1;

    snprintf(tmp, sizeof(tmp), "/tmp/.devboxd-code-%d.bundle", i);
    script = code_mounts_script(m, tmp, "/home/user");
    if (script == NULL ||
        asprintf(&orig, "code_mounts[%d] %s/%s", i, owner, name) < 0 ||
        asprintf(&copy, "COPY --chown=1000:1000 " BD_CODE_DIR "/%d.bundle %s",
                 i, tmp) < 0 ||
        (emit = run_script("", script)) == NULL) {
        free(script);
        return fail(p, "out of memory");
    }
    rc = add_step(p, 0, 0, 0, orig, copy);
    if (rc == 0)
        rc = add_user(p);
    if (rc == 0)
        rc = add_step(p, 0, 0, 0, orig, emit);
    free(orig);
    free(copy);
    free(script);
    free(emit);
    return rc;
}

/* ---------------------------------------------------------------- parse */

static char **split_lines(const char *text, size_t *n)
{
    char **lines = NULL;
    size_t cap = 0;
    const char *s = text;

    *n = 0;
    while (s != NULL && *s) {
        const char *e = strchr(s, '\n');
        size_t len = e != NULL ? (size_t)(e - s) : strlen(s);

        if (len > 0 && s[len - 1] == '\r')
            len--;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            lines = realloc(lines, cap * sizeof(*lines));
            if (lines == NULL)
                return NULL;
        }
        lines[(*n)++] = strndup(s, len);
        s = e != NULL ? e + 1 : NULL;
    }
    return lines;
}

static int known_keyword(const char *kw)
{
    size_t i;

    for (i = 0; keywords[i] != NULL; i++) {
        if (strcasecmp(kw, keywords[i]) == 0)
            return 1;
    }
    return 0;
}

static int ends_continued(const char *l)
{
    size_t len = strlen(l);

    while (len > 0 && isspace((unsigned char)l[len - 1]))
        len--;
    return len > 0 && l[len - 1] == '\\';
}

/* Length of l without a trailing continuation (a backslash and blanks). */
static size_t cut_continuation(const char *l)
{
    size_t len = strlen(l);

    while (len > 0 && isspace((unsigned char)l[len - 1]))
        len--;
    return len > 0 && l[len - 1] == '\\' ? len - 1 : strlen(l);
}

/* The instruction from lines[*i] on, continuation lines joined as buildah
 * joins them (the backslash dropped, comment and empty lines inside
 * skipped), on one line; *text gets the lines as written (for the log).
 * *i ends on its last line. */
static char *continued_line(struct prep *p, char **lines, size_t nlines,
                            size_t *i, char **text)
{
    char *joined = NULL;
    int more = ends_continued(lines[*i]);

    if (asprintf(&joined, "%.*s", (int)cut_continuation(lines[*i]), lines[*i]) <
        0) {
        fail(p, "out of memory");
        return NULL;
    }
    while (more && *i + 1 < nlines) {
        const char *l = lines[++*i];
        const char *t = l + strspn(l, " \t");
        char *grown = NULL;

        if (*t == '#' || *t == '\0')
            continue;
        more = ends_continued(l);
        if (asprintf(&grown, "%s%.*s", joined, (int)cut_continuation(l), l) <
            0) {
            free(joined);
            fail(p, "out of memory");
            return NULL;
        }
        free(joined);
        joined = grown;
        grown = NULL;
        if (asprintf(&grown, "%s\n%s", *text, l) < 0) {
            free(joined);
            fail(p, "out of memory");
            return NULL;
        }
        free(*text);
        *text = grown;
    }
    return joined;
}

/* One instruction starting at lines[*i]; *i ends on its last line. */
static int one_instruction(struct prep *p, char **lines, size_t nlines,
                           size_t *i)
{
    const char *first = lines[*i];
    const char *args = first;
    const char *rest = NULL;
    char *kw = next_word(&args);
    char *text = strdup(first);
    char *joined = NULL;
    char *canon = NULL;
    char *emit = NULL;
    struct heredoc probe[1];
    int line = (int)*i + 1;
    int rc = -1;

    if (text == NULL) {
        fail(p, "out of memory");
        goto out;
    }
    if (kw == NULL) {
        rc = 0; /* whitespace other than spaces and tabs only: a blank line */
        goto out;
    }
    if (!known_keyword(kw)) {
        fail(p, "line %d: unknown instruction \"%s\"", line, kw);
        goto out;
    }
    if (p->stage < 0 && strcasecmp(kw, "FROM") != 0 &&
        strcasecmp(kw, "ARG") != 0) {
        fail(p,
             "line %d: %s before FROM: a Dockerfile starts with FROM (only ARG "
             "may come "
             "before it)",
             line, kw);
        goto out;
    }
    if ((strcasecmp(kw, "RUN") == 0 || strcasecmp(kw, "COPY") == 0 ||
         strcasecmp(kw, "ADD") == 0) &&
        find_markers(first, probe, 1) == 1) {
        free_heredocs(probe, 1);
        rc = emit_heredoc(p, lines, nlines, i, kw, line);
        goto out;
    }
    if (strcasecmp(kw, "ONBUILD") == 0) {
        fail(p,
             "line %d: ONBUILD is not supported: its instruction would run "
             "in a later build FROM this blueprint, unchecked; write the step "
             "into that build's Dockerfile",
             line);
        goto out;
    }
    joined = continued_line(p, lines, nlines, i, &text);
    if (joined == NULL)
        goto out;
    args = joined + strspn(joined, " \t") + strlen(kw);
    if (strcasecmp(kw, "FROM") == 0) {
        rc = emit_from(p, args, text, line);
        goto out;
    }
    if (check_flags(p, kw, args, line, &canon, &rest) != 0)
        goto out;
    if ((strcasecmp(kw, "COPY") == 0 || strcasecmp(kw, "ADD") == 0) &&
        check_sources(p, line, kw, canon, rest) != 0)
        goto out;
    if (strcasecmp(kw, "USER") == 0) {
        const char *u = rest;

        free(p->final_user);
        p->final_user = next_word(&u);
    }
    /* One line of flags as checked: buildah reads nothing else as one. */
    if (asprintf(&emit, "%s%s%s%s%s", kw, canon[0] ? " " : "", canon,
                 rest[0] ? " " : "", rest) < 0) {
        emit = NULL;
        fail(p, "out of memory");
        goto out;
    }
    rc = add_step(p, line, p->stage >= 0, 0, text, emit);
out:
    free(kw);
    free(text);
    free(joined);
    free(canon);
    free(emit);
    return rc;
}

/* Parser directives (# name=value lines at the top): buildah never sees
 * them (comments are not emitted), so one that changes how the text
 * parses (escape) is refused; syntax= and others mean nothing here. */
static int check_directives(struct prep *p, char **lines, size_t nlines)
{
    size_t i;

    for (i = 0; i < nlines; i++) {
        const char *l = lines[i] + strspn(lines[i], " \t");
        const char *k;
        size_t klen;

        if (*l != '#')
            return 0;
        l++;
        l += strspn(l, " \t");
        k = l;
        klen = strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789");
        l = k + klen;
        l += strspn(l, " \t");
        if (klen == 0 || !isalpha((unsigned char)k[0]) || *l != '=')
            return 0; /* a comment: directives end */
        l++;
        l += strspn(l, " \t");
        if (klen == 6 && strncasecmp(k, "escape", 6) == 0 &&
            (l[0] != '\\' || l[1 + strspn(l + 1, " \t")] != '\0'))
            return fail(p,
                        "line %zu: the escape directive is not supported: "
                        "continue lines with \\ (remove the # escape= line)",
                        i + 1);
    }
    return 0;
}

static int parse_text(struct prep *p, const char *dockerfile)
{
    size_t nlines = 0, i;
    char **lines = split_lines(dockerfile, &nlines);
    int rc = check_directives(p, lines, nlines);

    for (i = 0; rc == 0 && i < nlines; i++) {
        const char *l = lines[i] + strspn(lines[i], " \t");

        if (*l == '\0' || *l == '#')
            continue;
        rc = one_instruction(p, lines, nlines, &i);
    }
    if (rc == 0 && p->stage < 0)
        rc = fail(p, "the Dockerfile has no FROM; start it with FROM "
                     "runloop/starter-x86_64 "
                     "(or another image or blueprint)");
    for (i = 0; i < nlines; i++)
        free(lines[i]);
    free(lines);
    return rc;
}

/* The base of a blueprint without a Dockerfile. */
static int default_from(struct prep *p, const cJSON *params)
{
    const char *id = util_json_str(params, "base_blueprint_id");
    const char *name = util_json_str(params, "base_blueprint_name");
    const char *want = id != NULL && id[0]       ? id
                       : name != NULL && name[0] ? name
                                                 : NULL;
    char *local = NULL;
    char *emit = NULL;
    int rc;

    if (p->resolve(p->ctx, want, &local, p->err, p->errlen) != 0)
        return -1;
    p->stage = 0;
    p->aliases = calloc(1, sizeof(char *));
    p->bases = calloc(1, sizeof(char *));
    p->heads = calloc(1, sizeof(char *));
    if (p->aliases == NULL || p->bases == NULL || p->heads == NULL ||
        asprintf(&emit, "FROM %s", local) < 0) {
        free(local);
        return fail(p, "out of memory");
    }
    p->bases[0] = strdup(local);
    p->out->final_from = local;
    rc = add_step(p, 0, 0, 0, emit, emit);
    free(emit);
    return rc;
}

/* file_mounts go in right after the final FROM, setup commands at the
 * end; then the text. */
static int finish(struct prep *p, const cJSON *params)
{
    struct buildah_dockerfile_out *o = p->out;
    size_t keep = 0, before, m, k;
    size_t len = 0;
    char *text = NULL;

    for (k = 0; k < o->n_steps; k++) {
        if (o->steps[k].stage == p->stage) {
            keep = k + 1;
            break;
        }
    }
    /* After the steps the final stage has from the stage it is FROM. */
    while (keep > 0 && keep < o->n_steps && o->steps[keep].inherited)
        keep++;
    before = o->n_steps;
    if (add_mounts(
            p, cJSON_GetObjectItemCaseSensitive(params, "file_mounts")) != 0)
        return -1;
    m = o->n_steps - before;
    for (k = 0; k < m; k++) { /* rotate the mounts to just after the FROM */
        struct buildah_dockerfile_step t = o->steps[before + k];

        memmove(&o->steps[keep + k + 1], &o->steps[keep + k],
                (before + k - keep - k) * sizeof(t));
        o->steps[keep + k] = t;
    }
    if (add_as_user(p, cJSON_GetObjectItemCaseSensitive(params, "code_mounts"),
                    add_code_mount) != 0 ||
        add_as_user(
            p,
            cJSON_GetObjectItemCaseSensitive(params, "system_setup_commands"),
            add_setup) != 0)
        return -1;
    for (k = 0; k < o->n_steps; k++)
        len += strlen(o->steps[k].emit) + 1;
    text = malloc(len + 1);
    if (text == NULL)
        return fail(p, "out of memory");
    len = 0;
    for (k = 0; k < o->n_steps; k++) {
        size_t l = strlen(o->steps[k].emit);

        memcpy(text + len, o->steps[k].emit, l);
        len += l;
        text[len++] = '\n';
    }
    text[len] = '\0';
    o->text = text;
    return 0;
}

int buildah_dockerfile_prepare(const cJSON *params,
                               buildah_dockerfile_resolve_fn resolve, void *ctx,
                               struct buildah_dockerfile_out *out, char *err,
                               size_t errlen)
{
    const char *df = util_json_str(params, "dockerfile");
    struct prep p;
    size_t i;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&p, 0, sizeof(p));
    p.out = out;
    p.resolve = resolve;
    p.ctx = ctx;
    p.stage = -1;
    p.err = err;
    p.errlen = errlen;
    out->files = cJSON_CreateObject();
    if (df != NULL && df[0] != '\0')
        rc = parse_text(&p, df);
    else
        rc = default_from(&p, params);
    if (rc == 0)
        rc = finish(&p, params);
    for (i = 0; p.heads != NULL && (int)i <= p.stage; i++) {
        free(p.aliases[i]);
        free(p.bases[i]);
        free(p.heads[i]);
    }
    free(p.aliases);
    free(p.bases);
    free(p.heads);
    free(p.final_user);
    if (rc != 0)
        buildah_dockerfile_free(out);
    return rc;
}

void buildah_dockerfile_free(struct buildah_dockerfile_out *out)
{
    size_t i;

    for (i = 0; i < out->n_steps; i++) {
        free(out->steps[i].text);
        free(out->steps[i].emit);
    }
    free(out->steps);
    free(out->text);
    free(out->final_from);
    build_flags_caches_free(&out->caches);
    cJSON_Delete(out->files);
    memset(out, 0, sizeof(*out));
}

size_t buildah_dockerfile_stage_steps(const struct buildah_dockerfile_out *out,
                                      int stage, size_t *first)
{
    size_t i, n = 0;

    *first = 0;
    for (i = 0; i < out->n_steps; i++) {
        if (out->steps[i].stage != stage)
            continue;
        if (n++ == 0)
            *first = i;
    }
    return n;
}
