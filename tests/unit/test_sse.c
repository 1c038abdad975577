/*
 * test_sse.c - the server-sent events parser: framing, fields, line endings,
 * chunk boundaries at every byte, limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sse.h"

struct rec {
    char log[8192];
    size_t n;
    int stop_after; /* stop once this many events were seen; 0: never */
};

static int on_event(void *user, const char *event, const char *id,
                    const char *data, size_t data_len)
{
    struct rec *r = user;
    size_t used = strlen(r->log);

    snprintf(r->log + used, sizeof(r->log) - used, "[%s|%s|%.*s]", event, id,
             (int)data_len, data);
    r->n++;
    if (r->stop_after > 0 && (int)r->n >= r->stop_after)
        return 1;
    return 0;
}

/* Parse text in one go, returning the feed status. */
static int parse_whole(const char *text, size_t len, struct rec *r, size_t max)
{
    struct sse_parser *p = sse_parser_new(max, on_event, r);
    int rc;

    assert_non_null(p);
    rc = sse_parser_feed(p, text, len);
    sse_parser_free(p);
    return rc;
}

/* Parse text split at pos, then byte by byte, comparing with whole. */
static void check_all_splits(const char *text, const char *expect)
{
    size_t len = strlen(text);
    size_t pos;
    struct rec whole = {0};

    assert_int_equal(parse_whole(text, len, &whole, 0), SSE_OK);
    assert_string_equal(whole.log, expect);
    for (pos = 0; pos <= len; pos++) {
        struct rec r = {0};
        struct sse_parser *p = sse_parser_new(0, on_event, &r);

        assert_non_null(p);
        assert_int_equal(sse_parser_feed(p, text, pos), SSE_OK);
        assert_int_equal(sse_parser_feed(p, text + pos, len - pos), SSE_OK);
        sse_parser_free(p);
        if (strcmp(r.log, expect) != 0)
            fail_msg("split at %zu: got %s want %s", pos, r.log, expect);
    }
    {
        struct rec r = {0};
        struct sse_parser *p = sse_parser_new(0, on_event, &r);

        for (pos = 0; pos < len; pos++)
            assert_int_equal(sse_parser_feed(p, text + pos, 1), SSE_OK);
        sse_parser_free(p);
        assert_string_equal(r.log, expect);
    }
}

static void t_basic(void **state)
{
    check_all_splits("data: {\"output\":\"hi\",\"offset\":0}\n\n",
                     "[message||{\"output\":\"hi\",\"offset\":0}]");
}

static void t_multiline_and_fields(void **state)
{
    check_all_splits("event: error\nid: 7\ndata: line1\ndata: line2\n\n"
                     "data:nospace\ndata:  two spaces keep one\n\n",
                     "[error|7|line1\nline2][message|7|nospace\n"
                     " two spaces keep one]");
}

static void t_line_endings(void **state)
{
    check_all_splits("data: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\rdata: e\n"
                     "\r\n",
                     "[message||a\nb][message||c\nd][message||e]");
}

static void t_comments_and_unknown(void **state)
{
    check_all_splits(": keep-alive\n:\nfoo: bar\ndata: x\n: mid comment\n\n",
                     "[message||x]");
}

static void t_empty_data_and_no_colon(void **state)
{
    /* "data" alone is an empty data line: the event is dispatched with "". */
    check_all_splits("data\n\nevent: only-name\n\ndata: y\n\n",
                     "[message||][message||y]");
}

static void t_bom_and_retry(void **state)
{
    struct rec r = {0};
    struct sse_parser *p = sse_parser_new(0, on_event, &r);
    const char *text = "\xEF\xBB\xBF"
                       "retry: 1500\ndata: z\n\nretry: x1\n";

    assert_non_null(p);
    assert_int_equal(sse_parser_feed(p, text, strlen(text)), SSE_OK);
    assert_string_equal(r.log, "[message||z]");
    assert_int_equal(sse_parser_retry_ms(p), 1500);
    sse_parser_free(p);
    check_all_splits("\xEF\xBB\xBF"
                     "data: bom\n\n",
                     "[message||bom]");
}

static void t_id_sticky_and_nul(void **state)
{
    struct rec r = {0};
    struct sse_parser *p = sse_parser_new(0, on_event, &r);
    const char text[] = "id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\n";

    assert_int_equal(sse_parser_feed(p, text, sizeof(text) - 1), SSE_OK);
    /* An id with NUL is ignored: the previous one stays. */
    assert_string_equal(r.log, "[message|1|a][message|1|b][message|1|c]");
    assert_string_equal(sse_parser_last_id(p), "1");
    assert_int_equal(sse_parser_events(p), 3);
    sse_parser_free(p);
}

static void t_unfinished_event_dropped(void **state)
{
    struct rec r = {0};

    assert_int_equal(parse_whole("data: a\n\ndata: partial\n", 24, &r, 0),
                     SSE_OK);
    assert_string_equal(r.log, "[message||a]");
}

static void t_oversize(void **state)
{
    char big[300];
    struct rec r = {0};
    struct sse_parser *p = NULL;

    /* Exactly at the limit passes. */
    memset(big, 'a', sizeof(big));
    memcpy(big, "data: ", 6);
    big[6 + 100] = '\n';
    big[6 + 101] = '\n';
    assert_int_equal(parse_whole(big, 6 + 102, &r, 100), SSE_OK);
    assert_int_equal(r.n, 1);
    /* One more byte of data fails, even split over two data lines. */
    assert_int_equal(parse_whole("data: 12345\ndata: 67890\n\n", 25, &r, 10),
                     SSE_TOO_LARGE);
    /* A huge line without any terminator fails before it is complete. */
    memset(big, 'b', sizeof(big));
    p = sse_parser_new(16, on_event, &r);
    assert_int_equal(sse_parser_feed(p, big, sizeof(big)), SSE_TOO_LARGE);
    /* Sticky: the parser refuses further input. */
    assert_int_equal(sse_parser_feed(p, "data: x\n\n", 9), SSE_TOO_LARGE);
    sse_parser_free(p);
}

static void t_stop(void **state)
{
    struct rec r = {.stop_after = 2};
    struct sse_parser *p = sse_parser_new(0, on_event, &r);
    const char *text = "data: 1\n\ndata: 2\n\ndata: 3\n\n";

    assert_int_equal(sse_parser_feed(p, text, strlen(text)), SSE_STOPPED);
    assert_int_equal(r.n, 2);
    assert_int_equal(sse_parser_feed(p, "data: 4\n\n", 9), SSE_STOPPED);
    assert_int_equal(r.n, 2);
    sse_parser_free(p);
}

static void t_bad_args(void **state)
{
    assert_null(sse_parser_new(0, NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_basic),
        cmocka_unit_test(t_multiline_and_fields),
        cmocka_unit_test(t_line_endings),
        cmocka_unit_test(t_comments_and_unknown),
        cmocka_unit_test(t_empty_data_and_no_colon),
        cmocka_unit_test(t_bom_and_retry),
        cmocka_unit_test(t_id_sticky_and_nul),
        cmocka_unit_test(t_unfinished_event_dropped),
        cmocka_unit_test(t_oversize),
        cmocka_unit_test(t_stop),
        cmocka_unit_test(t_bad_args),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
