/*
 * test_strbuf.c - the host's growing text buffer: empty, appends past
 * several growths, binary-safe lengths, and a failed add that sticks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strbuf.h"

static void t_empty_and_growth(void **state)
{
    struct strbuf b = {0};
    char chunk[100];
    size_t i;

    (void)state;
    assert_string_equal(strbuf_str(&b), "");
    assert_int_equal(strbuf_add(&b, "", 0), 0);
    assert_non_null(b.p);
    assert_string_equal(strbuf_str(&b), "");
    memset(chunk, 'x', sizeof(chunk));
    for (i = 0; i < 50; i++)
        assert_int_equal(strbuf_add(&b, chunk, sizeof(chunk)), 0);
    assert_int_equal(b.len, 5000);
    assert_true(b.cap > b.len);
    assert_int_equal(strlen(b.p), 5000);
    assert_int_equal(strbuf_add(&b, "ab\0cd", 2), 0);
    assert_int_equal(b.len, 5002);
    assert_string_equal(b.p + 4998, "xxab");
    free(b.p);
}

static void t_failure_sticks(void **state)
{
    struct strbuf b = {0};

    (void)state;
    assert_int_equal(strbuf_add(&b, "abc", 3), 0);
    /* A length no allocation can hold fails and leaves the text. */
    assert_int_equal(strbuf_add(&b, "d", SIZE_MAX - 1), -1);
    assert_true(b.oom);
    assert_string_equal(b.p, "abc");
    assert_int_equal(strbuf_add(&b, "d", 1), -1);
    assert_string_equal(strbuf_str(&b), "abc");
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_empty_and_growth),
        cmocka_unit_test(t_failure_sticks),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
