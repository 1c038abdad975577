/* Unit tests of the Dockerfile flag checks (build_flags.c) through the
 * Dockerfile buildah gets (buildah_dockerfile_prepare): every escape of the build's mounts
 * (a cache id of .., a bind of a host path, from= a stage, a secret) is
 * refused with its line, whatever parser trick carries it (continuation
 * lines, empty and comment lines inside one, quotes, a backslash, a
 * variable, keys in capitals, odd spacing, a key twice, heredocs, JSON
 * form, ONBUILD, the escape directive, bytes Go takes as spaces); what is
 * allowed is emitted in one canonical form, on one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "build_flags.h"
#include "buildah_dockerfile.h"

static int resolve(void *ctx, const char *name, char **local, char *err,
                   size_t errlen)
{
    (void)ctx;
    (void)err;
    (void)errlen;
    *local =
        strdup(name != NULL && strcmp(name, "base") == 0 ? "local/base"
                                                         : "local/starter");
    return 0;
}

/* buildah_dockerfile_prepare of a Dockerfile given as C text (any bytes). */
static int prepare_df(const char *df, const char *setup,
                      struct buildah_dockerfile_out *out, char *err,
                      size_t errlen)
{
    cJSON *params = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(params, "dockerfile", df);
    if (setup != NULL) {
        cJSON *a = cJSON_AddArrayToObject(params, "system_setup_commands");

        cJSON_AddItemToArray(a, cJSON_CreateString(setup));
    }
    err[0] = '\0';
    rc = buildah_dockerfile_prepare(params, resolve, NULL, out, err, errlen);
    cJSON_Delete(params);
    return rc;
}

static void test_refused(void **state)
{
    static const struct {
        const char *df;
        const char *want;
    } cases[] = {
        /* The attack as published, and other ids out of the cache. */
        {"FROM base\nRUN --mount=type=cache,id=../../../..,target=/h ls /h\n",
         "line 2: RUN --mount=type=cache,id=../../../..,target=/h: cache id "
         "\"../../../..\" must be a plain name"},
        {"FROM base\nRUN --mount=type=cache,id=/,target=/h ls\n",
         "line 2: RUN --mount=type=cache,id=/,target=/h: cache id"},
        {"FROM base\nRUN --mount=type=cache,id=a/b,target=/h ls\n",
         "cache id \"a/b\""},
        {"FROM base\nRUN --mount=type=cache,id=..,target=/h ls\n",
         "cache id \"..\""},
        {"FROM base\nRUN --mount=type=cache,id=.x,target=/h ls\n",
         "cache id \".x\""},
        /* Flags after continuation lines, empty and comment lines. */
        {"FROM base\nRUN \\\n  --mount=type=cache,id=../..,target=/h ls\n",
         "line 2: RUN --mount=type=cache,id=../..,target=/h: cache id"},
        {"FROM base\nRUN \\\n\n--mount=type=cache,id=../..,target=/h ls\n",
         "line 2: RUN --mount"},
        {"FROM base\nRUN \\\n# c\n  \\\n--mount=type=cache,id=../..,target=/h "
         "ls\n",
         "line 2: RUN --mount"},
        {"FROM base\nRUN --mount=type=tmpfs,target=/t \\\n "
         "--mount=type=cache,id=../..,target=/h ls\n",
         "line 2: RUN --mount=type=cache,id=../.."},
        /* Quotes, a backslash, variables. */
        {"FROM base\nRUN --mount=\"type=cache,id=../..,target=/h\" ls\n",
         "line 2: RUN --mount=\"type=cache,id=../..,target=/h\": a flag may "
         "hold no quote, backslash or variable"},
        {"FROM base\nRUN --mount='type=cache,id=../..,target=/h' ls\n",
         "no quote, backslash or variable"},
        {"FROM base\nRUN --mount=type=cache,id=.\\./..,target=/h ls\n",
         "no quote, backslash or variable"},
        {"FROM base\nARG X=../..\nRUN --mount=type=cache,id=$X,target=/h ls\n",
         "line 3: RUN --mount=type=cache,id=$X,target=/h: a flag may hold no "
         "quote, backslash or variable"},
        {"FROM base\nENV X=/\nRUN --mount=type=bind,source=${X},target=/h ls\n",
         "line 3: RUN --mount=type=bind,source=${X}"},
        /* Keys in capitals, odd spacing, a key twice, --mount twice. */
        {"FROM base\nRUN --mount=type=cache,ID=../..,target=/h ls\n",
         "\"ID=../..\" is not allowed in a cache mount"},
        {"FROM base\nRUN --mount=TYPE=cache,id=../..,target=/h ls\n",
         "name the type first"},
        {"FROM base\nRUN --mount=type=CACHE,id=x,target=/h ls\n",
         "type \"CACHE\" is not allowed"},
        {"FROM base\nRUN --mount=type=cache, id=../..,target=/h ls\n",
         "line 2: RUN --mount=type=cache,: an empty field"},
        {"FROM base\nRUN --mount=type=cache,,id=x,target=/h ls\n",
         "an empty field"},
        {"FROM base\nRUN --mount=type=cache,id=x,id=../..,target=/h ls\n",
         "\"id\" is given twice"},
        {"FROM base\nRUN --mount=type=cache,type=bind,source=x,target=/h ls\n",
         "\"type\" is given twice"},
        {"FROM base\nRUN --mount=type=cache,id=ok,target=/a "
         "--mount=type=cache,id=../..,target=/h ls\n",
         "cache id \"../..\""},
        {"FROM base\nRUN --MOUNT=type=cache,id=x,target=/h ls\n",
         "RUN --MOUNT is not allowed: a RUN step takes only --mount"},
        {"FROM base\nRUN --mount type=cache,id=x,target=/h ls\n",
         "RUN --mount must be written --mount=<spec>"},
        /* Bytes Go reads as spaces end a flag word for buildah. */
        {"FROM base\nRUN --mount=type=tmpfs,target=/t\xa0"
         "--mount=type=cache,id=../..,target=/h ls\n",
         "cache id \"../..\""},
        {"FROM base\nRUN --mount=type=tmpfs,target=/t \xa0"
         "--mount=type=cache,id=../..,target=/h ls\n",
         "cache id \"../..\""},
        {"FROM base\nRUN \x85--mount=type=cache,id=../..,target=/h ls\n",
         "cache id \"../..\""},
        /* Heredocs, JSON form, ONBUILD, the escape directive, lower case. */
        {"FROM base\nRUN --mount=type=cache,id=../..,target=/h <<EOF\nls "
         "/h\nEOF\n",
         "line 2: RUN --mount=type=cache,id=../..,target=/h: cache id"},
        {"FROM base\nCOPY --from=nowhere <<EOF /x\nhi\nEOF\n",
         "line 2: COPY --from=nowhere: name an earlier stage"},
        {"FROM base\nRUN --mount=type=bind,source=/,target=/h [\"ls\", "
         "\"/h\"]\n",
         "source \"/\" must be a path in the build context"},
        {"FROM base\nONBUILD RUN --mount=type=cache,id=../..,target=/h ls\n",
         "line 2: ONBUILD is not supported"},
        {"# escape=`\nFROM base\nRUN --mount=type=cache,id=x,target=/h `\n  "
         "ls\n",
         "line 1: the escape directive is not supported"},
        {"#ESCAPE = `\nFROM base\n", "escape directive"},
        {"from base\nrun --mount=type=cache,id=../..,target=/h ls\n",
         "line 2: RUN --mount=type=cache,id=../..,target=/h: cache id"},
        /* Other escapes: bind outside the context, from=, rw, secrets. */
        {"FROM base\nRUN --mount=type=bind,source=../..,target=/h ls\n",
         "source \"../..\" must be a path in the build context"},
        {"FROM base\nRUN --mount=type=bind,src=a/../../x,target=/h ls\n",
         "source \"a/../../x\""},
        {"FROM base AS s\nRUN ln -s / /evil\nFROM base\n"
         "RUN --mount=type=bind,from=s,source=evil,target=/h ls\n",
         "line 4: RUN --mount=type=bind,from=s,source=evil,target=/h: a bind "
         "mount takes no from="},
        {"FROM base\nRUN --mount=type=bind,target=/h,rw ls\n",
         "a bind mount of the build context is read-only"},
        {"FROM base\nRUN --mount=type=bind,target=/h,bind-propagation=shared "
         "ls\n",
         "\"bind-propagation=shared\" is not allowed in a bind mount"},
        {"FROM base AS s\nFROM base\nRUN "
         "--mount=type=cache,from=s,target=/h ls\n",
         "a cache mount takes no from= or source="},
        {"FROM base\nRUN --mount=type=cache,source=/,target=/h ls\n",
         "a cache mount takes no from= or source="},
        {"FROM base\nRUN --mount=type=secret,id=tok cat /run/secrets/tok\n",
         "line 2: RUN --mount=type=secret is not supported"},
        {"FROM base\nRUN --mount=type=ssh git clone x\n",
         "RUN --mount=type=ssh is not supported"},
        {"FROM base\nRUN --mount=type=volume,target=/h ls\n",
         "type \"volume\" is not allowed"},
        {"FROM base\nRUN --mount=type=cache,id=x,target=/h/../.. ls\n",
         "target= must be an absolute directory"},
        {"FROM base\nRUN --mount=type=cache,id=x,target=rel ls\n",
         "target= must be an absolute directory"},
        {"FROM base\nRUN --mount=type=cache,id=x ls\n",
         "target= must be an absolute directory"},
        {"FROM base\nRUN --mount=type=cache,id=x,target=/h,mode=4777 ls\n",
         "mode= is octal, at most 1777"},
        {"FROM base\nRUN --mount=type=cache,id=x,target=/h,uid=70000 ls\n",
         "uid= is a number 0-65535"},
        {"FROM base\nRUN --mount=type=cache,id=x,target=/h,sharing=private "
         "ls\n",
         "sharing= is shared or locked"},
        {"FROM base\nRUN --mount=type=tmpfs,target=/t,size=1g ls\n",
         "size= is a number of bytes"},
        /* Other RUN flags and other instructions' flags. */
        {"FROM base\nRUN --network=host curl x\n",
         "line 2: RUN --network is not allowed: a RUN step takes only --mount"},
        {"FROM base\nRUN --security=insecure ls\n",
         "RUN --security is not allowed"},
        {"FROM base\nRUN --device=/dev/sda ls\n",
         "RUN --device is not allowed"},
        {"FROM base\nCOPY --link a /b\n",
         "line 2: COPY --link is not allowed: COPY takes only --from"},
        {"FROM base\nCOPY --parents a /b\n", "COPY --parents is not allowed"},
        {"FROM base\nCOPY --exclude=x a /b\n", "COPY --exclude is not allowed"},
        {"FROM base\nCOPY --chown=$U a /b\n",
         "no quote, backslash or variable"},
        {"FROM base\nCOPY --chown=a:b:c a /b\n", "COPY --chown=a:b:c: name a"},
        {"FROM base\nCOPY --chmod=u+x a /b\n",
         "COPY --chmod=u+x: give an octal"},
        {"FROM base\nADD --from=x a /b\n",
         "ADD --from is not allowed: ADD takes only --chown"},
        {"FROM base\nADD --checksum=sha256:0 a /b\n", "ADD --checksum"},
        {"FROM base AS a\nCOPY --from=a /x /y\n",
         "COPY --from=a: name an earlier stage"},
        {"FROM base\nCOPY --from=1 /x /y\n", "COPY --from=1: name an earlier"},
        {"FROM --network=host base\n",
         "line 1: FROM --network is not allowed: FROM takes only --platform"},
        {"FROM base AS a,b\n", "a stage name is letters"},
        {"FROM base\nENV --x=1 A=b\n",
         "line 2: ENV takes no flags; remove --x"},
        {"FROM base\nWORKDIR --mount=type=bind,source=/,target=/h /x\n",
         "WORKDIR takes no flags"},
        {"FROM base\nHEALTHCHECK --interval=$(x) CMD true\n",
         "no quote, backslash or variable"},
        {"FROM base\nHEALTHCHECK --start-interval=1s CMD true\n",
         "HEALTHCHECK --start-interval is not allowed"},
    };
    struct buildah_dockerfile_out o;
    char err[1024];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (prepare_df(cases[i].df, NULL, &o, err, sizeof(err)) != -1)
            fail_msg("case %zu was accepted:\n%s", i, o.text);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].want);
        assert_null(o.text);
    }
}

static void test_allowed(void **state)
{
    static const struct {
        const char *df;
        const char *want; /* a line of the emitted Dockerfile */
    } cases[] = {
        {"FROM base\nRUN --mount=type=cache,target=/root/.cache,id=pip pip x\n",
         "\nRUN --mount=type=cache,id=pip,target=/root/.cache,sharing=shared "
         "pip x\n"},
        {"FROM base\nRUN --mount=type=cache,dst=/var/cache/apt apt x\n",
         "\nRUN --mount=type=cache,id=target_var_cache_apt,target=/var/cache/"
         "apt,sharing=shared apt x\n"},
        {"FROM base\nRUN "
         "--mount=type=cache,id=c,target=/c,uid=1000,gid=1000,mode=0700,"
         "sharing=locked,ro ls\n",
         "\nRUN --mount=type=cache,id=c,target=/c,sharing=locked,ro ls\n"},
        {"FROM base\nRUN --mount=type=bind,source=app,target=/src make\n",
         "\nRUN --mount=type=bind,source=app,target=/src,ro make\n"},
        {"FROM base\nRUN --mount=type=bind,target=/ctx,readonly ls\n",
         "\nRUN --mount=type=bind,target=/ctx,ro ls\n"},
        {"FROM base\nRUN --mount=type=tmpfs,target=/t,size=65536 ls\n",
         "\nRUN --mount=type=tmpfs,target=/t,tmpfs-size=65536 ls\n"},
        {"FROM base\nRUN --mount=type=cache,id=a,target=/a "
         "--mount=type=tmpfs,target=/t [\"ls\", \"/a\"]\n",
         "\nRUN --mount=type=cache,id=a,target=/a,sharing=shared "
         "--mount=type=tmpfs,target=/t [\"ls\", \"/a\"]\n"},
        {"FROM base\nRUN \\\n  --mount=type=cache,id=x,target=/c \\\n\n"
         "# note\n  ls /c\n",
         "\nRUN --mount=type=cache,id=x,target=/c,sharing=shared ls /c\n"},
        {"# syntax=docker/dockerfile:1\n# escape=\\\nFROM base\nRUN true\n",
         "\nRUN true\n"},
        {"FROM base AS b\nRUN true\nFROM base\nCOPY --from=b --chown=user:user "
         "--chmod=644 /x /y\n",
         "\nCOPY --from=b --chown=user:user --chmod=644 /x /y\n"},
        {"FROM base AS b\nFROM base\nCOPY --from=0 /x /y\n",
         "\nCOPY --from=0 /x /y\n"},
        {"FROM --platform=linux/amd64 base\nRUN true\n",
         "FROM --platform=linux/amd64 local/base\n"},
        {"FROM base\nHEALTHCHECK --interval=30s --retries=3 CMD true\n",
         "\nHEALTHCHECK --interval=30s --retries=3 CMD true\n"},
        {"FROM base\nRUN --mount=type=cache,id=c,target=/c <<EOF\nls /c\nEOF\n",
         "\nRUN --mount=type=cache,id=c,target=/c,sharing=shared sh -c"},
        /* An instruction's last line continued at the end is cut there. */
        {"FROM base\nRUN echo hi \\", "\nRUN echo hi \nUSER user\n"},
    };
    struct buildah_dockerfile_out o;
    char err[1024];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *want = cases[i].want;

        if (prepare_df(cases[i].df, "true", &o, err, sizeof(err)) != 0)
            fail_msg("case %zu refused: %s", i, err);
        if (strstr(o.text, want) == NULL) {
            fail_msg("case %zu: the Dockerfile\n%s\nlacks\n%s", i, o.text,
                     want);
        }
        buildah_dockerfile_free(&o);
    }
}

static void test_caches(void **state)
{
    struct buildah_dockerfile_out o;
    char err[1024];

    (void)state;
    assert_int_equal(
        prepare_df(
            "FROM base\nRUN --mount=type=cache,id=pip,target=/p,uid=1000,"
            "gid=100,mode=0700 --mount=type=cache,target=/var/x ls\n"
            "RUN --mount=type=bind,target=/b ls\n",
            NULL, &o, err, sizeof(err)),
        0);
    assert_int_equal(o.caches.n, 2);
    assert_string_equal(o.caches.v[0].id, "pip");
    assert_int_equal(o.caches.v[0].uid, 1000);
    assert_int_equal(o.caches.v[0].gid, 100);
    assert_int_equal(o.caches.v[0].mode, 0700);
    assert_string_equal(o.caches.v[1].id, "target_var_x");
    assert_int_equal(o.caches.v[1].uid, 0);
    assert_int_equal(o.caches.v[1].mode, 0755);
    buildah_dockerfile_free(&o);
    assert_int_equal(o.caches.n, 0);
}

static void check_emitted(const char *text, const char *input);

/* system_setup_commands are shell commands: one that reads as a flag, or
 * continues into the next line, reaches buildah as a script. */
static void test_setup_commands(void **state)
{
    static const char *const cmds[] = {
        "--mount=type=cache,id=../../../..,target=/h ls /h",
        " \xa0--mount=type=cache,id=../..,target=/h ls /h",
        "echo hi \\",
    };
    struct buildah_dockerfile_out o;
    char err[512];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        assert_int_equal(
            prepare_df("FROM base\n", cmds[i], &o, err, sizeof(err)), 0);
        if (strstr(o.text, "\nRUN sh -c \"$(printf %b '") == NULL)
            fail_msg("setup command %zu reached buildah as\n%s", i, o.text);
        check_emitted(o.text, cmds[i]);
        buildah_dockerfile_free(&o);
    }
    assert_int_equal(
        prepare_df("FROM base\n", "echo plain", &o, err, sizeof(err)), 0);
    assert_non_null(strstr(o.text, "\nRUN echo plain\n"));
    buildah_dockerfile_free(&o);
}

/* build_flags_check alone: where the flags end, what follows them. */
static void test_rest(void **state)
{
    struct build_flags_stages st = {NULL, 0};
    char err[512];
    char *canon = NULL;
    const char *rest = NULL;

    (void)state;
    assert_int_equal(
        build_flags_check("RUN", "  --mount=type=tmpfs,target=/t  echo --x", 3,
                          &st, NULL, &canon, &rest, err, sizeof(err)),
        0);
    assert_string_equal(canon, "--mount=type=tmpfs,target=/t");
    assert_string_equal(rest, "echo --x");
    free(canon);
    assert_int_equal(build_flags_check("USER", " user", 1, &st, NULL, &canon,
                                       &rest, err, sizeof(err)),
                     0);
    assert_string_equal(canon, "");
    assert_string_equal(rest, "user");
    free(canon);
    assert_int_equal(build_flags_check("RUN", "--", 7, &st, NULL, &canon, &rest,
                                       err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "line 7: RUN -- is not allowed"));
    assert_null(canon);
}

/* --------------------------------------------------------------- fuzz */

static int go_space(unsigned char c)
{
    return build_flags_is_space(c);
}

/* buildah's (imagebuilder's) extractBuilderFlags, written again: the
 * flags buildah takes from the text after an instruction's keyword, with
 * its quote and backslash handling.  Returns how many, into words. */
static size_t buildah_flags(const char *line, char words[][1024], size_t max)
{
    enum { SPACES, WORD, QUOTE } phase = SPACES;
    size_t len = strlen(line), pos, n = 0, wl = 0;
    char quote = 0;
    int blank_ok = 0;
    char word[1024];

    for (pos = 0; pos <= len && n < max; pos++) {
        unsigned char ch = pos < len ? (unsigned char)line[pos] : 0;

        if (phase == SPACES) {
            if (pos == len)
                break;
            if (go_space(ch))
                continue;
            if (ch != '-' || pos + 1 == len || line[pos + 1] != '-')
                break;
            phase = WORD;
        }
        if (pos == len) {
            word[wl] = '\0';
            if (strcmp(word, "--") != 0 && (blank_ok || wl > 0))
                snprintf(words[n++], 1024, "%s", word);
            break;
        }
        if (phase == WORD) {
            if (go_space(ch)) {
                phase = SPACES;
                word[wl] = '\0';
                if (strcmp(word, "--") == 0)
                    break;
                if (blank_ok || wl > 0)
                    snprintf(words[n++], 1024, "%s", word);
                wl = 0;
                blank_ok = 0;
                continue;
            }
            if (ch == '\'' || ch == '"') {
                quote = (char)ch;
                blank_ok = 1;
                phase = QUOTE;
                continue;
            }
            if (ch == '\\') {
                if (pos + 1 == len)
                    continue;
                ch = (unsigned char)line[++pos];
            }
            if (wl < sizeof(word) - 1)
                word[wl++] = (char)ch;
            continue;
        }
        if (ch == (unsigned char)quote) {
            phase = WORD;
            continue;
        }
        if (ch == '\\' && quote != '\'') {
            if (pos + 1 == len) {
                phase = WORD;
                continue;
            }
            ch = (unsigned char)line[++pos];
        }
        if (wl < sizeof(word) - 1)
            word[wl++] = (char)ch;
    }
    return n;
}

/* A flag buildah would take from the emitted Dockerfile: one of the
 * canonical forms, nothing reaching out. */
static int flag_safe(const char *kw, const char *f)
{
    if (strcasecmp(kw, "RUN") == 0) {
        if (strstr(f, "from=") != NULL || strstr(f, "src=") != NULL ||
            strstr(f, "source=/") != NULL || strstr(f, "..") != NULL ||
            strstr(f, ",rw") != NULL || strstr(f, "$") != NULL)
            return 0;
        if (strncmp(f, "--mount=type=cache,id=", 22) == 0) {
            const char *id = f + 22;
            size_t idlen = strcspn(id, ",");

            return idlen > 0 && id[0] != '.' &&
                   memchr(id, '/', idlen) == NULL &&
                   strncmp(id + idlen, ",target=/", 9) == 0;
        }
        return strncmp(f, "--mount=type=bind,", 18) == 0 ||
               strncmp(f, "--mount=type=tmpfs,target=/", 27) == 0;
    }
    if (strcasecmp(kw, "COPY") == 0 || strcasecmp(kw, "ADD") == 0)
        return strncmp(f, "--from=", 7) == 0 ||
               strncmp(f, "--chown=", 8) == 0 || strncmp(f, "--chmod=", 8) == 0;
    if (strcasecmp(kw, "FROM") == 0)
        return strncmp(f, "--platform=", 11) == 0;
    if (strcasecmp(kw, "HEALTHCHECK") == 0)
        return strncmp(f, "--interval=", 11) == 0 ||
               strncmp(f, "--timeout=", 10) == 0 ||
               strncmp(f, "--start-period=", 15) == 0 ||
               strncmp(f, "--retries=", 10) == 0;
    return 0;
}

/* Every line of the emitted Dockerfile read as buildah reads it. */
static void check_emitted(const char *text, const char *input)
{
    char *copy = strdup(text);
    char *save = NULL;
    char *line;
    static char words[16][1024];

    assert_non_null(copy);
    for (line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        size_t kl = strcspn(line, " \t\v\f\r");
        char kw[32];
        size_t i, n;

        snprintf(kw, sizeof(kw), "%.*s", (int)(kl < 31 ? kl : 31), line);
        n = buildah_flags(line + kl, words, 16);
        for (i = 0; i < n; i++)
            if (!flag_safe(kw, words[i]))
                fail_msg("buildah would take %s %s from\n%s\nmade of\n%s", kw,
                         words[i], text, input);
        /* One line each: nothing continues into the next instruction. */
        if (line[0] != '\0' && line[strlen(line) - 1] == '\\')
            fail_msg("a line continues into the next:\n%s\nmade of\n%s", text,
                     input);
    }
    free(copy);
}

/* Mutations of attack and legitimate Dockerfiles: whatever buildah_dockerfile_prepare
 * accepts, buildah takes only canonical flags from what it emits. */
static void test_mutations(void **state)
{
    static const char *const seeds[] = {
        "FROM base\nRUN --mount=type=cache,id=pip,target=/c ls /c\n",
        "FROM base\nRUN --mount=type=cache,id=../../..,target=/h ls /h\n",
        "FROM base\nRUN \\\n --mount=type=bind,source=app,target=/s \\\n ls\n",
        "FROM base AS s\nFROM base\nCOPY --from=s --chown=1:1 /a /b\n",
        "FROM base\nRUN --mount=type=tmpfs,target=/t <<EOF\nls\nEOF\n",
        "FROM base\nARG X=../..\nRUN --mount=type=cache,id=$X,target=/h ls\n",
        "# escape=\\\nFROM base\nHEALTHCHECK --interval=3s CMD true\n",
    };
    static const char pieces[] = "\"'\\$ \t\n,=./-#<`[]x\x85\xa0";
    struct buildah_dockerfile_out o;
    char err[1024];
    char buf[512];
    unsigned accepted = 0;
    int it;

    (void)state;
    srand(20261206);
    for (it = 0; it < 20000; it++) {
        const char *seed =
            seeds[(size_t)rand() % (sizeof(seeds) / sizeof(*seeds))];
        size_t len = strlen(seed);
        int k, edits = 1 + rand() % 4;

        memcpy(buf, seed, len + 1);
        for (k = 0; k < edits && len + 2 < sizeof(buf); k++) {
            size_t at = (size_t)rand() % (len + 1);
            int op = rand() % 3;

            if (op == 0) { /* insert a tricky byte */
                memmove(buf + at + 1, buf + at, len - at + 1);
                buf[at] = pieces[(size_t)rand() % (sizeof(pieces) - 1)];
                len++;
            } else if (op == 1 && at < len) { /* delete one */
                memmove(buf + at, buf + at + 1, len - at);
                len--;
            } else if (at < len) { /* replace one */
                buf[at] = pieces[(size_t)rand() % (sizeof(pieces) - 1)];
            }
        }
        if (prepare_df(buf, "true", &o, err, sizeof(err)) != 0)
            continue;
        accepted++;
        check_emitted(o.text, buf);
        buildah_dockerfile_free(&o);
    }
    /* The run means something only if many mutants got through. */
    assert_true(accepted > 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),   cmocka_unit_test(test_allowed),
        cmocka_unit_test(test_caches),    cmocka_unit_test(test_rest),
        cmocka_unit_test(test_mutations), cmocka_unit_test(test_setup_commands),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
