/*
 * The frozen plugin ABI, checked from the headers themselves: every minor's
 * header (tests/abi/include-1.N, 1.0 in tests/fixtures/abi-1.0) against
 * the later ones and today's sdk/include (fields never move, change size or
 * disappear; new ones only follow the old ones), the host's least accepted
 * sizes against every minor's (an old plugin is never refused), and the
 * size table of sdk/ABI.md against all of it (every number there is one
 * sizeof or offsetof here, and every sized struct of today's header has
 * its row).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "abi_layout.h"
#include "loader.h"
#include "registry.h"
#include "rlclient.h"
#include "rlmcp/plugin.h"

#ifndef RLMCP_SOURCE_DIR
#error "RLMCP_SOURCE_DIR must be defined"
#endif

static const struct abi_layout *frozen(int minor)
{
    static const struct abi_layout *(*const fns[ABI_N_FROZEN])(void) = {
        abi_layout_1_0, abi_layout_1_1, abi_layout_1_2, abi_layout_1_3,
        abi_layout_1_4, abi_layout_1_5, abi_layout_1_6};

    return fns[minor]();
}

static const struct abi_field *find(const struct abi_layout *l,
                                    const char *type, const char *field)
{
    size_t i = 0;

    for (i = 0; i < l->n_rows; i++) {
        const struct abi_field *r = &l->rows[i];

        if (strcmp(r->type, type) != 0)
            continue;
        if (field == NULL ? r->field == NULL
                          : r->field != NULL && strcmp(r->field, field) == 0)
            return r;
    }
    return NULL;
}

/* Where the fields of type end in l (0: no such struct). */
static size_t fields_end(const struct abi_layout *l, const char *type)
{
    size_t end = 0;
    size_t i = 0;

    for (i = 0; i < l->n_rows; i++) {
        const struct abi_field *r = &l->rows[i];

        if (r->field != NULL && strcmp(r->type, type) == 0 &&
            r->offset + r->size > end)
            end = r->offset + r->size;
    }
    return end;
}

/* The layouts from 1.0 on, today's last. */
static const struct abi_layout *nth(int i)
{
    return i < ABI_N_FROZEN ? frozen(i) : abi_layout_today();
}

/* Each minor's header says its minor, and today's is the newest. */
static void test_minors(void **state)
{
    int m = 0;

    (void)state;
    for (m = 0; m < ABI_N_FROZEN; m++)
        assert_int_equal(frozen(m)->minor, m);
    assert_true(abi_layout_today()->minor >= ABI_N_FROZEN - 1);
    assert_int_equal(abi_layout_today()->minor, RLMCP_ABI_MINOR);
}

/*
 * Append-only: a field of minor m has the same offset and size in every
 * later header; a struct never shrinks; a field a later header adds lies
 * after every field the struct had before.
 */
static void test_append_only(void **state)
{
    int a = 0;
    int b = 0;
    size_t i = 0;

    (void)state;
    for (a = 0; a <= ABI_N_FROZEN; a++) {
        const struct abi_layout *old = nth(a);

        for (b = a + 1; b <= ABI_N_FROZEN; b++) {
            const struct abi_layout *new = nth(b);

            for (i = 0; i < old->n_rows; i++) {
                const struct abi_field *o = &old->rows[i];
                const struct abi_field *n = find(new, o->type, o->field);

                if (n == NULL)
                    fail_msg("%s.%s of ABI 1.%d is gone in layout %d", o->type,
                             o->field ? o->field : "(sizeof)", old->minor, b);
                if (o->field == NULL) {
                    if (n->size < o->size)
                        fail_msg("%s shrank from %zu (1.%d) to %zu", o->type,
                                 o->size, old->minor, n->size);
                    continue;
                }
                if (n->offset != o->offset || n->size != o->size)
                    fail_msg("%s.%s moved: offset %zu size %zu in 1.%d, "
                             "offset %zu size %zu in layout %d",
                             o->type, o->field, o->offset, o->size, old->minor,
                             n->offset, n->size, b);
            }
            for (i = 0; i < new->n_rows; i++) {
                const struct abi_field *n = &new->rows[i];

                if (n->field == NULL || find(old, n->type, n->field) != NULL)
                    continue;
                if (find(old, n->type, NULL) != NULL &&
                    n->offset < fields_end(old, n->type))
                    fail_msg("%s.%s (layout %d) is not after the fields of "
                             "1.%d",
                             n->type, n->field, b, old->minor);
            }
            assert_true(new->n_services >= old->n_services);
        }
    }
}

/* ---- what today's host takes ------------------------------------------ */

enum host_kind {
    HOST_TAKES,  /* plugin-filled: the least struct_size accepted */
    HOST_STRIDE, /* an array element: read with today's sizeof, exactly */
    HOST_FILLS   /* host-filled: the size the host sets */
};

struct host_row {
    const char *type;
    size_t value;
    enum host_kind kind;
};

static const struct host_row host_rows[] = {
    {"rlmcp_plugin_desc", LOADER_DESC_SIZE_1_0, HOST_TAKES},
    {"rlmcp_tool_def", REGISTRY_TOOL_DEF_SIZE_1_0, HOST_TAKES},
    {"rlmcp_task_def", RLMCP_TASK_DEF_SIZE_1_4, HOST_TAKES},
    {"rlmcp_resource_def", REGISTRY_RESOURCE_DEF_SIZE_1_0, HOST_TAKES},
    {"rlmcp_prompt_def", REGISTRY_PROMPT_DEF_SIZE_1_0, HOST_TAKES},
    {"rlmcp_http_req", RLCLIENT_HTTP_REQ_SIZE_MIN, HOST_TAKES},
    {"rlmcp_http_part", sizeof(struct rlmcp_http_part), HOST_STRIDE},
    {"rlmcp_http_resp", sizeof(struct rlmcp_http_resp), HOST_FILLS},
    {"rlmcp_tunnel", RLMCP_TUNNEL_SIZE_1_1, HOST_TAKES},
    {"rlmcp_pty_exchange", RLMCP_PTY_EXCHANGE_SIZE_1_1, HOST_TAKES},
    {"rlmcp_ws_open", RLMCP_WS_OPEN_SIZE_1_6, HOST_TAKES},
    {"rlmcp_ws_message", RLMCP_WS_MESSAGE_SIZE_1_6, HOST_TAKES},
    {"rlmcp_host_api", sizeof(struct rlmcp_host_api), HOST_FILLS},
};
#define N_HOST_ROWS (sizeof(host_rows) / sizeof(host_rows[0]))

static const struct host_row *host_row(const char *type)
{
    size_t i = 0;

    for (i = 0; i < N_HOST_ROWS; i++)
        if (strcmp(host_rows[i].type, type) == 0)
            return &host_rows[i];
    return NULL;
}

/*
 * Every minor's struct is one today's host takes: its least size is at
 * most what each minor's _INIT macro sets, an array element keeps one
 * size forever, and what the host fills covers every minor's struct.
 */
static void test_host_takes_every_minor(void **state)
{
    size_t i = 0;
    int m = 0;

    (void)state;
    for (i = 0; i < N_HOST_ROWS; i++) {
        const struct host_row *h = &host_rows[i];
        bool seen = false;

        for (m = 0; m <= ABI_N_FROZEN; m++) {
            const struct abi_field *s = find(nth(m), h->type, NULL);

            if (s == NULL)
                continue;
            seen = true;
            if (h->kind == HOST_TAKES && h->value > s->size)
                fail_msg("the host refuses %s of layout %d: it takes at least "
                         "%zu bytes, that minor's struct has %zu",
                         h->type, m, h->value, s->size);
            if (h->kind == HOST_STRIDE && h->value != s->size)
                fail_msg("%s is %zu bytes in layout %d but the host steps "
                         "through arrays of it by %zu",
                         h->type, s->size, m, h->value);
            if (h->kind == HOST_FILLS && h->value < s->size)
                fail_msg("the host fills %zu bytes of %s, layout %d reads %zu",
                         h->value, h->type, m, s->size);
        }
        if (!seen)
            fail_msg("%s is in no layout", h->type);
    }
}

/* ---- sdk/ABI.md's table ---------------------------------------------------
 */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n = 0;

    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

#define MAX_COLS 16

/* Split a "| a | b |" line into trimmed cells (in place); their count. */
static int cells(char *line, char **out)
{
    int n = 0;
    char *p = strchr(line, '|');

    while (p != NULL && n < MAX_COLS) {
        char *start = p + 1;
        char *end = strchr(start, '|');

        if (end == NULL)
            break;
        *end = '\0';
        while (*start == ' ' || *start == '`')
            start++;
        p = end;
        while (p > start && (p[-1] == ' ' || p[-1] == '`'))
            *--p = '\0';
        out[n++] = start;
        p = end;
    }
    return n;
}

/* A size cell: a number, or "—" (not in that minor): SIZE_MAX. */
static size_t cell_value(const char *c, int line)
{
    char *end = NULL;
    unsigned long v = 0;

    if (strcmp(c, "—") == 0)
        return SIZE_MAX;
    v = strtoul(c, &end, 10);
    if (end == c || *end != '\0')
        fail_msg("sdk/ABI.md size table line %d: cell '%s' is neither a "
                 "number nor —",
                 line, c);
    return (size_t)v;
}

#define SERVICES_ROW "services in rlmcp_host_api"

static void test_abi_md_table(void **state)
{
    char *md = slurp(RLMCP_SOURCE_DIR "/sdk/ABI.md");
    char *p = strstr(md, "<!-- abi-sizes");
    char *end = NULL;
    char *col[MAX_COLS];
    int ncol = 0;
    int line = 0;
    int rows = 0;
    size_t i = 0;

    (void)state;
    /* The table gives LP64 sizes (x86_64, aarch64, the platforms built). */
    if (sizeof(void *) != 8 || sizeof(long) != 8) {
        free(md);
        skip();
    }
    if (p == NULL)
        fail_msg("sdk/ABI.md has no <!-- abi-sizes --> table");
    end = strstr(p, "<!-- /abi-sizes -->");
    assert_non_null(end);
    *end = '\0';
    /* A row for every struct of today's layout (before the parse cuts
     * the lines up). */
    for (i = 0; i < abi_layout_today()->n_rows; i++) {
        const struct abi_field *r = &abi_layout_today()->rows[i];
        char needle[96];

        if (r->field != NULL)
            continue;
        snprintf(needle, sizeof(needle), "| `%s` |", r->type);
        if (strstr(p, needle) == NULL)
            fail_msg("sdk/ABI.md's size table has no row for %s", r->type);
    }
    p = strchr(p, '\n');
    while (p != NULL && *++p != '\0') {
        char *nl = strchr(p, '\n');
        char *c[MAX_COLS];
        int n = 0;
        int k = 0;

        if (nl != NULL)
            *nl = '\0';
        line++;
        if (*p == '|') {
            n = cells(p, c);
            if (ncol == 0) {
                /* The header: struct, 1.0 ... 1.6, today's host. */
                assert_int_equal(n, ABI_N_FROZEN + 2);
                for (k = 0; k < n; k++)
                    col[k] = c[k];
                for (k = 0; k < ABI_N_FROZEN; k++) {
                    char want[8];

                    snprintf(want, sizeof(want), "1.%d", k);
                    assert_string_equal(col[k + 1], want);
                }
                ncol = n;
            } else if (strncmp(c[0], "---", 3) != 0) {
                const struct host_row *h = NULL;
                bool services = strcmp(c[0], SERVICES_ROW) == 0;

                assert_int_equal(n, ncol);
                for (k = 0; k < ABI_N_FROZEN; k++) {
                    const struct abi_layout *l = frozen(k);
                    const struct abi_field *s = find(l, c[0], NULL);
                    size_t want = services    ? l->n_services
                                  : s != NULL ? s->size
                                              : SIZE_MAX;
                    size_t got = cell_value(c[k + 1], line);

                    if (!services && s == NULL &&
                        find(abi_layout_today(), c[0], NULL) == NULL)
                        fail_msg("sdk/ABI.md names '%s', no sized struct of "
                                 "plugin.h",
                                 c[0]);
                    if (got != want)
                        fail_msg("sdk/ABI.md: %s at 1.%d reads %s, the 1.%d "
                                 "header says %zu",
                                 c[0], k, c[k + 1], k, want);
                }
                h = host_row(c[0]);
                if (services) {
                    if (cell_value(c[ncol - 1], line) !=
                        abi_layout_today()->n_services)
                        fail_msg("sdk/ABI.md: today's host has %zu services, "
                                 "not %s",
                                 abi_layout_today()->n_services, c[ncol - 1]);
                } else if (h == NULL) {
                    fail_msg("no host value for %s in this test", c[0]);
                } else if (cell_value(c[ncol - 1], line) != h->value) {
                    fail_msg("sdk/ABI.md: today's host value of %s is %zu, "
                             "not %s",
                             c[0], h->value, c[ncol - 1]);
                }
                rows++;
            }
        }
        p = nl;
    }
    assert_int_equal(rows, N_HOST_ROWS + 1);
    free(md);
}

/*
 * Every struct of today's plugin.h that carries its size (a struct_size or
 * size member) is in the layouts, so in the table and under the checks
 * above: a new sized struct cannot go unlisted.
 */
static void test_every_sized_struct_listed(void **state)
{
    char *h = slurp(RLMCP_SOURCE_DIR "/sdk/include/rlmcp/plugin.h");
    char *p = h;
    int n = 0;

    (void)state;
    while ((p = strstr(p, "\nstruct rlmcp_")) != NULL) {
        char name[64];
        char *body = NULL;
        char *close = NULL;
        size_t len = 0;

        p += strlen("\nstruct ");
        len = strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789");
        if (len >= sizeof(name) || p[len] != ' ' || p[len + 1] != '{')
            continue;
        memcpy(name, p, len);
        name[len] = '\0';
        body = p + len;
        close = strstr(body, "\n};");
        assert_non_null(close);
        *close = '\0';
        if (strstr(body, " struct_size;") != NULL ||
            strstr(body, "size_t size;") != NULL) {
            if (find(abi_layout_today(), name, NULL) == NULL)
                fail_msg("%s carries its size but tests/abi/abi_layout.c "
                         "does not list it (nor sdk/ABI.md)",
                         name);
            if (host_row(name) == NULL)
                fail_msg("%s has no host value in test_abi_sizes.c", name);
            n++;
        }
        *close = '\n';
        p = close;
    }
    assert_int_equal(n, N_HOST_ROWS);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minors),
        cmocka_unit_test(test_append_only),
        cmocka_unit_test(test_host_takes_every_minor),
        cmocka_unit_test(test_abi_md_table),
        cmocka_unit_test(test_every_sized_struct_listed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
