/* devboxd-ptyd unit tests: session-name and size validation, signal names,
 * the output/input buffers (bounded backlog). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ptyd.h"

struct ptyd_config ptyd_cfg = {1800, 20, 60};

static void test_names(void **state)
{
    char name[300];

    (void)state;
    assert_true(ptyd_name_valid("a"));
    assert_true(ptyd_name_valid("Az09_-"));
    assert_false(ptyd_name_valid(""));
    assert_false(ptyd_name_valid("a.b"));
    assert_false(ptyd_name_valid("a b"));
    assert_false(ptyd_name_valid("a/b"));
    assert_false(ptyd_name_valid("caf\xc3\xa9"));
    memset(name, 'x', 256);
    name[256] = '\0';
    assert_true(ptyd_name_valid(name));
    name[256] = 'x';
    name[257] = '\0';
    assert_false(ptyd_name_valid(name));
}

static void test_dims(void **state)
{
    (void)state;
    assert_int_equal(ptyd_parse_dim("1"), 1);
    assert_int_equal(ptyd_parse_dim("1000"), 1000);
    assert_int_equal(ptyd_parse_dim("80"), 80);
    assert_int_equal(ptyd_parse_dim("0"), -1);
    assert_int_equal(ptyd_parse_dim("1001"), -1);
    assert_int_equal(ptyd_parse_dim("-5"), -1);
    assert_int_equal(ptyd_parse_dim("+5"), -1);
    assert_int_equal(ptyd_parse_dim(" 5"), -1);
    assert_int_equal(ptyd_parse_dim("5x"), -1);
    assert_int_equal(ptyd_parse_dim("1.5"), -1);
    assert_int_equal(ptyd_parse_dim(""), -1);
    assert_int_equal(ptyd_parse_dim(NULL), -1);
    assert_int_equal(ptyd_parse_dim("99999999999999999999"), -1);
}

static void test_signals(void **state)
{
    (void)state;
    assert_int_equal(ptyd_signal_number("SIGINT"), SIGINT);
    assert_int_equal(ptyd_signal_number("SIGWINCH"), SIGWINCH);
    assert_int_equal(ptyd_signal_number("SIGKILL"), SIGKILL);
    assert_int_equal(ptyd_signal_number("SIGUSR1"), SIGUSR1);
    assert_int_equal(ptyd_signal_number("INT"), -1);
    assert_int_equal(ptyd_signal_number("sigint"), -1);
    assert_int_equal(ptyd_signal_number("SIGFOO"), -1);
    assert_int_equal(ptyd_signal_number(""), -1);
}

static void test_buffers(void **state)
{
    struct ptyd_buf b = {NULL, 0, 0};
    char big[10000];

    (void)state;
    memset(big, 'a', sizeof(big));
    assert_int_equal(ptyd_buf_append(&b, "hello", 5), 0);
    assert_int_equal(ptyd_buf_append(&b, big, sizeof(big)), 0);
    assert_int_equal(b.len, 10005);
    ptyd_buf_consume(&b, 3);
    assert_int_equal(b.len, 10002);
    assert_memory_equal(b.data, "lo", 2);
    ptyd_buf_keep_tail(&b, 100);
    assert_int_equal(b.len, 100);
    assert_int_equal(b.data[0], 'a');
    ptyd_buf_keep_tail(&b, 1000);
    assert_int_equal(b.len, 100);
    ptyd_buf_consume(&b, 500);
    assert_int_equal(b.len, 0);
    free(b.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_dims),
        cmocka_unit_test(test_signals),
        cmocka_unit_test(test_buffers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
