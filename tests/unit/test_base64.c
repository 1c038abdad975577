/*
 * test_base64.c - the host's one Base64 codec (RFC 4648 vectors, both
 * alphabets, the strict checks its decoders rely on) and the edit distance
 * behind "did you mean".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base64.h"
#include "suggest.h"

static void check_encode(const char *in, bool url, const char *want)
{
    char *got = base64_encode(in, strlen(in), url);

    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void check_decode(const char *in, bool url, const char *want)
{
    size_t n = 0;
    unsigned char *got = base64_decode(in, strlen(in), url, &n);

    assert_non_null(got);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    assert_int_equal(got[n], '\0');
    free(got);
}

static void check_refused(const char *in, bool url)
{
    size_t n = 0;
    unsigned char *got = base64_decode(in, strlen(in), url, &n);

    if (got != NULL)
        fail_msg("'%s' (%s) decoded; it is not valid", in,
                 url ? "url" : "standard");
}

/* RFC 4648 section 10, both ways, both alphabets. */
static void t_rfc4648_vectors(void **state)
{
    static const char *const v[][3] = {
        {"", "", ""},
        {"f", "Zg==", "Zg"},
        {"fo", "Zm8=", "Zm8"},
        {"foo", "Zm9v", "Zm9v"},
        {"foob", "Zm9vYg==", "Zm9vYg"},
        {"fooba", "Zm9vYmE=", "Zm9vYmE"},
        {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        check_encode(v[i][0], false, v[i][1]);
        check_encode(v[i][0], true, v[i][2]);
        check_decode(v[i][1], false, v[i][0]);
        check_decode(v[i][2], true, v[i][0]);
    }
}

/* The two alphabets differ in 62 and 63; each refuses the other's. */
static void t_alphabets(void **state)
{
    static const unsigned char bytes[] = {0xfb, 0xff, 0xbf};
    char *std = base64_encode(bytes, sizeof(bytes), false);
    char *url = base64_encode(bytes, sizeof(bytes), true);

    (void)state;
    assert_string_equal(std, "+/+/");
    assert_string_equal(url, "-_-_");
    check_refused("-_-_", false);
    check_refused("+/+/", true);
    free(std);
    free(url);
}

static void t_strict(void **state)
{
    (void)state;
    check_refused("Zm9", false);      /* not whole quads */
    check_refused("Zg=", false);      /* short padding */
    check_refused("Z===", false);     /* three '=' */
    check_refused("Zg==Zg==", false); /* '=' inside */
    check_refused("Zm 9v", false);    /* white space (libcrypto skips it) */
    check_refused("Zm9v\n", false);
    check_refused("Zg==", true); /* url takes no padding */
    check_refused("Z", true);    /* one symbol is no byte */
    check_refused("Zm!v", true);
}

static void t_binary(void **state)
{
    unsigned char all[256];
    unsigned char *back = NULL;
    char *text = NULL;
    size_t n = 0;
    size_t i;
    int url;

    (void)state;
    for (i = 0; i < sizeof(all); i++)
        all[i] = (unsigned char)i;
    for (url = 0; url <= 1; url++) {
        text = base64_encode(all, sizeof(all), url);
        assert_non_null(text);
        back = base64_decode(text, strlen(text), url, &n);
        assert_non_null(back);
        assert_int_equal(n, sizeof(all));
        assert_memory_equal(back, all, sizeof(all));
        free(text);
        free(back);
    }
}

/* An input libcrypto's int count cannot hold is refused, not cut short;
 * the length is checked before anything is read. */
static void t_too_long(void **state)
{
    static const char byte = 'x';

    (void)state;
    assert_null(base64_encode(&byte, BASE64_MAX_INPUT + 1, false));
    assert_null(base64_encode(&byte, (size_t)1 << 32, true));
}

static void t_suggest_distance(void **state)
{
    char long_word[80];

    (void)state;
    assert_int_equal(suggest_distance("timeout", "timeout"), 0);
    assert_int_equal(suggest_distance("timout", "timeout"), 1);
    assert_int_equal(suggest_distance("Timeout", "timeout"), 0);
    assert_int_equal(suggest_distance("kitten", "sitting"), 3);
    assert_int_equal(suggest_distance("", "abc"), 3);
    memset(long_word, 'a', sizeof(long_word) - 1);
    long_word[sizeof(long_word) - 1] = '\0';
    assert_true(suggest_distance(long_word, "a") == SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_rfc4648_vectors),
        cmocka_unit_test(t_alphabets),
        cmocka_unit_test(t_strict),
        cmocka_unit_test(t_binary),
        cmocka_unit_test(t_too_long),
        cmocka_unit_test(t_suggest_distance),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
