/* Deterministic mutation fuzz of devboxd's input parsers (Dockerfile,
 * tunnel Host, query strings, multipart boundary and body), replaying a
 * fixed seed corpus through a fixed-seed PRNG so every run and every
 * machine sees the same inputs; needs only gcc. Run under the sanitizer
 * build to catch out-of-bounds reads and writes; each case also checks the
 * parser's documented output invariants. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "buildah_dockerfile.h"
#include "http_server.h"
#include "http_internal.h"
#include "multipart.h"
#include "tunnels.h"

#define ROUNDS 20000
#define MAX_INPUT 4096

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64*: fixed seed per test, same inputs every run */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

/* Bytes that matter to these grammars, so mutations hit the edges. */
static const char interesting[] =
    "\\\"' \t\r\n=:;-.%+&?#/[]{}0123456789aZ\x80\xff";

/* One to four random edits of seed into out (NUL-terminated); returns the
 * length, which may include embedded NULs for the binary-safe parsers. */
static size_t mutate(const char *seed, size_t seed_len, char *out)
{
    size_t len = seed_len < MAX_INPUT ? seed_len : MAX_INPUT;
    int edits = 1 + (int)(rng() % 4);
    int e;

    memcpy(out, seed, len);
    for (e = 0; e < edits; e++) {
        size_t pos = len > 0 ? (size_t)(rng() % len) : 0;
        char c = (rng() % 2) ? interesting[rng() % (sizeof(interesting) - 1)]
                             : (char)rng();

        switch (rng() % 5) {
        case 0: /* replace */
            if (len > 0)
                out[pos] = c;
            break;
        case 1: /* insert */
            if (len < MAX_INPUT) {
                memmove(out + pos + 1, out + pos, len - pos);
                out[pos] = c;
                len++;
            }
            break;
        case 2: /* delete */
            if (len > 0) {
                memmove(out + pos, out + pos + 1, len - pos - 1);
                len--;
            }
            break;
        case 3: /* truncate */
            len = pos;
            break;
        default: { /* duplicate a slice */
            size_t n = (size_t)(rng() % 64);

            if (pos + n > len)
                n = len - pos;
            if (len + n <= MAX_INPUT) {
                memmove(out + pos + n, out + pos, len - pos);
                len += n;
            }
            break;
        }
        }
    }
    out[len] = '\0';
    return len;
}

/* Every FROM resolves to one image: the parse is what is fuzzed. */
static int resolve_any(void *ctx, const char *name, char **local, char *err,
                       size_t errlen)
{
    (void)ctx;
    (void)name;
    (void)err;
    (void)errlen;
    *local = strdup("localhost/devboxd-test:base");
    return *local != NULL ? 0 : -1;
}

/* The Dockerfile buildah gets (buildah_dockerfile_prepare). */
static void test_dockerfile_fuzz(void **state)
{
    static const char *const seeds[] = {
        "FROM runloop:runloop/starter-x86_64\nRUN echo hi\n",
        "ARG B=x\nFROM runloop:$B AS s\nENV A=1 B=\"two words\" \\\n  C='l "
        "$X'\n"
        "env LEGACY some value\nWORKDIR /home/user/app\nUSER user\nCOPY "
        "./a.json d/\n"
        "RUN echo one && \\\n  # c\n  echo two\nRUN [\"sh\", \"-c\", \"echo "
        "it's\"]\n",
        "FROM runloop:bpt_x\nADD x y\n",
        "FROM a\nRUN [\"unterminated\n",
        "FROM a\nENV \"K\"=\"v\\\" \" Z=\\\n",
    };
    char *buf = malloc(MAX_INPUT + 1);
    int parsed = 0;
    int i;

    (void)state;
    assert_non_null(buf);
    rng_state = 0x9e3779b97f4a7c15ULL;
    for (i = 0; i < ROUNDS; i++) {
        const char *seed = seeds[rng() % (sizeof(seeds) / sizeof(seeds[0]))];
        struct buildah_dockerfile_out out;
        cJSON *params = cJSON_CreateObject();
        char err[512] = "";
        size_t k;

        mutate(seed, strlen(seed), buf);
        assert_non_null(cJSON_AddStringToObject(params, "dockerfile", buf));
        memset(&out, 0, sizeof(out));
        if (buildah_dockerfile_prepare(params, resolve_any, NULL, &out, err,
                                       sizeof(err)) != 0) {
            assert_true(err[0] != '\0'); /* a failure always says why */
            buildah_dockerfile_free(&out);
            cJSON_Delete(params);
            continue;
        }
        assert_non_null(out.text);
        assert_non_null(out.final_from);
        for (k = 0; k < out.n_steps; k++) {
            assert_non_null(out.steps[k].text);
            assert_non_null(out.steps[k].emit);
        }
        buildah_dockerfile_free(&out);
        cJSON_Delete(params);
        parsed++;
    }
    free(buf);
    /* The mutations must leave many inputs valid, or nothing deep is tested. */
    assert_true(parsed > ROUNDS / 20);
}

static void test_tunnel_host_fuzz(void **state)
{
    static const char *const seeds[] = {
        "8080-abcdefghij0123456789.localhost",
        "80-k1.tunnel.localhost:4000",
        "65535-zz.LOCALHOST.",
        "1-a.localhost:",
        "[::1]:80",
    };
    char buf[MAX_INPUT + 1];
    int parsed = 0;
    int i;

    (void)state;
    rng_state = 0x2545f4914f6cdd1dULL;
    for (i = 0; i < ROUNDS * 4; i++) {
        const char *seed = seeds[rng() % (sizeof(seeds) / sizeof(seeds[0]))];
        char key[40];
        int port = -1;
        size_t k;

        mutate(seed, strlen(seed), buf);
        memset(key, 'Q', sizeof(key));
        if (tunnel_parse_host(buf, &port, key, sizeof(key)) != 0)
            continue;
        assert_true(port >= 1 && port <= 65535);
        assert_non_null(memchr(key, '\0', sizeof(key)));
        assert_true(key[0] != '\0');
        for (k = 0; key[k] != '\0'; k++)
            assert_non_null(
                strchr("abcdefghijklmnopqrstuvwxyz0123456789", key[k]));
        parsed++;
    }
    assert_true(parsed > ROUNDS / 20);
}

static void test_query_fuzz(void **state)
{
    static const char *const seeds[] = {
        "limit=10&starting_after=dbx_1&status=running",
        "a=%41%4&b=+x+&=&&c",
        "offset=9223372036854775807&last_n=%00",
    };
    char buf[MAX_INPUT + 1];
    int i;

    (void)state;
    rng_state = 0x853c49e6748fea9bULL;
    for (i = 0; i < ROUNDS; i++) {
        const char *seed = seeds[rng() % (sizeof(seeds) / sizeof(seeds[0]))];
        struct http_request req;
        size_t k;

        mutate(seed, strlen(seed), buf);
        memset(&req, 0, sizeof(req));
        assert_int_equal(http_parse_query(&req, buf), 0);
        for (k = 0; k < req.n_query; k++) {
            /* Decoding never grows a string. */
            assert_true(strlen(req.query[k].name) <= strlen(buf));
            assert_true(strlen(req.query[k].value) <= strlen(buf));
        }
        http_request_clear(&req);
    }
}

static void test_multipart_fuzz(void **state)
{
    static const char *const cts[] = {
        "multipart/form-data; boundary=XyZ",
        "multipart/form-data; boundary=\"q r\"; charset=x",
        "multipart/form-data; boundary=",
        "multipart/form-data;boundary=\"",
    };
    static const char body_seed[] =
        "--XyZ\r\nContent-Disposition: form-data; "
        "name=\"path\"\r\n\r\nup/a.bin\r\n"
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; "
        "filename=\"a\\\"b.bin\"\r\n"
        "Content-Type: "
        "application/octet-stream\r\n\r\n\x00\x01\r\n--X\r\n\r\n--XyZ--\r\n";
    char buf[MAX_INPUT + 1];
    int parsed = 0;
    int i;

    (void)state;
    rng_state = 0xda3e39cb94b95bdbULL;
    for (i = 0; i < ROUNDS; i++) {
        char boundary[80];
        struct multipart_part parts[4];
        char err[256];
        size_t n = 0, len, k;
        const char *ct = cts[rng() % (sizeof(cts) / sizeof(cts[0]))];

        len = mutate(ct, strlen(ct), buf);
        (void)len;
        if (multipart_boundary(buf, boundary, sizeof(boundary)) == 0)
            assert_true(strlen(boundary) >= 1 && strlen(boundary) <= 70);
        len = mutate(body_seed, sizeof(body_seed) - 1, buf);
        if (multipart_parse(buf, len, "XyZ", parts, 4, &n, err, sizeof(err)) !=
            0)
            continue;
        assert_true(n <= 4);
        for (k = 0; k < n; k++) {
            /* Every part lies inside the body. */
            assert_true(parts[k].data >= buf);
            assert_true(parts[k].data + parts[k].len <= buf + len);
            assert_true(parts[k].name[0] != '\0');
        }
        parsed++;
    }
    assert_true(parsed > ROUNDS / 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dockerfile_fuzz),
        cmocka_unit_test(test_tunnel_host_fuzz),
        cmocka_unit_test(test_query_fuzz),
        cmocka_unit_test(test_multipart_fuzz),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
