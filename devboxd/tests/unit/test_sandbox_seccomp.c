/* The devbox seccomp profile as runc gets it (sandbox_seccomp_oci), and the
 * generated /proc/meminfo text (sandbox_oci_meminfo_text).
 *
 * libseccomp lets an unconditional rule for a call override every
 * argument-filtered rule of it (the filter then allows every socket
 * family): the profile must never list a call both ways. */
#include "sandbox_internal.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool in_names(const cJSON *entry, const char *name)
{
    const cJSON *n;

    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(entry, "names"))
    {
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return true;
    }
    return false;
}

/* Entries naming name: with argument filters (*filtered) or without (*plain).
 */
static void count(const cJSON *rules, const char *name, int *plain,
                  int *filtered)
{
    const cJSON *r;

    *plain = *filtered = 0;
    cJSON_ArrayForEach(r, rules)
    {
        if (!in_names(r, name))
            continue;
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "args")) > 0)
            (*filtered)++;
        else
            (*plain)++;
    }
}

static void test_oci_profile_shape(void **state)
{
    static const char *const filtered_calls[] = {
        "socket", "socketpair",  "clone", "unshare",
        "ioctl",  "personality", NULL};
    cJSON *s = sandbox_seccomp_oci();
    const cJSON *rules = NULL;
    const cJSON *r;
    int plain;
    int filtered;
    size_t i;

    (void)state;
    assert_non_null(s);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(s, "defaultAction")->valuestring,
        "SCMP_ACT_ERRNO");
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(s, "defaultErrnoRet")->valueint,
        ENOSYS);
    rules = cJSON_GetObjectItemCaseSensitive(s, "syscalls");
    assert_true(cJSON_GetArraySize(rules) > 10);
    for (i = 0; filtered_calls[i] != NULL; i++) {
        count(rules, filtered_calls[i], &plain, &filtered);
        assert_int_equal(plain, 0);
        assert_true(filtered > 0);
    }
    /* A call is never both allowed and refused outright. */
    cJSON_ArrayForEach(r, rules)
    {
        const cJSON *n;

        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "args")) > 0)
            continue;
        cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(r, "names"))
        {
            count(rules, n->valuestring, &plain, &filtered);
            assert_int_equal(plain, 1);
            assert_int_equal(filtered, 0);
        }
    }
    /* io_uring and keyctl refused; read and execve allowed. */
    cJSON_ArrayForEach(r, rules)
    {
        const char *action =
            cJSON_GetObjectItemCaseSensitive(r, "action")->valuestring;

        if (in_names(r, "io_uring_setup") || in_names(r, "keyctl"))
            assert_string_equal(action, "SCMP_ACT_ERRNO");
        if (in_names(r, "read") || in_names(r, "execve"))
            assert_string_equal(action, "SCMP_ACT_ALLOW");
    }
    cJSON_Delete(s);
}

static void test_meminfo_text(void **state)
{
    char buf[1024];
    const char *stat = "cache 1\ntotal_cache 104857600\ntotal_rss 209715200\n"
                       "total_shmem 4096\ntotal_active_anon 209715200\n"
                       "total_inactive_anon 0\ntotal_active_file 52428800\n"
                       "total_inactive_file 52428800\n";
    size_t n;

    (void)state;
    n = sandbox_oci_meminfo_text(buf, sizeof(buf), 1ULL << 30, 314572800, stat);
    assert_int_equal(n, strlen(buf));
    assert_non_null(strstr(buf, "MemTotal:        1048576 kB\n"));
    assert_non_null(strstr(buf, "MemFree:          741376 kB\n"));
    /* free + inactive file pages */
    assert_non_null(strstr(buf, "MemAvailable:     792576 kB\n"));
    assert_non_null(strstr(buf, "Cached:           102400 kB\n"));
    assert_non_null(strstr(buf, "Shmem:                 4 kB\n"));
    assert_non_null(strstr(buf, "SwapTotal:             0 kB\n"));
    /* usage above the limit (page cache accounting) reads as full */
    sandbox_oci_meminfo_text(buf, sizeof(buf), 1ULL << 30, 2ULL << 30, "");
    assert_non_null(strstr(buf, "MemFree:               0 kB\n"));
    assert_non_null(strstr(buf, "MemAvailable:          0 kB\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oci_profile_shape),
        cmocka_unit_test(test_meminfo_text),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
