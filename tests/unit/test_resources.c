/*
 * test_resources.c - URI template matching (host/protocol/resources.c) and the
 * completion values drawn from an API list page (host/protocol/complete.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "complete.h"
#include "resources.h"

static void test_template_match(void **state)
{
    (void)state;
    assert_true(resources_template_match("devbox://{devbox_id}/{+path}",
                                         "devbox://dbx_1/home/user/a.txt"));
    assert_true(resources_template_match("devbox://{devbox_id}/{+path}",
                                         "devbox://dbx_1/a"));
    assert_false(resources_template_match("devbox://{devbox_id}/{+path}",
                                          "devbox://dbx_1/"));
    assert_false(resources_template_match("devbox://{devbox_id}/{+path}",
                                          "devbox:///a"));
    assert_false(resources_template_match("devbox://{devbox_id}/{+path}",
                                          "file:///etc/passwd"));
    /* Simple expansion stops at '/'. */
    assert_true(resources_template_match("test://template/{id}/data",
                                         "test://template/42/data"));
    assert_false(resources_template_match("test://template/{id}/data",
                                          "test://template/4/2/data"));
    assert_true(resources_template_match(
        "devbox://{devbox_id}/executions/{execution_id}/stdout",
        "devbox://dbx_1/executions/exe_2/stdout"));
    assert_false(resources_template_match(
        "devbox://{devbox_id}/executions/{execution_id}/stdout",
        "devbox://dbx_1/executions/exe_2/stdout/x"));
    assert_false(resources_template_match("a://{x", "a://b"));
}

static void test_complete_kinds(void **state)
{
    (void)state;
    assert_int_equal(complete_kind_of("devbox_id"), COMPLETE_DEVBOX_ID);
    assert_int_equal(complete_kind_of("snapshot_name"), COMPLETE_SNAPSHOT_NAME);
    assert_int_equal(complete_kind_of("snapshot_id"), COMPLETE_SNAPSHOT_ID);
    assert_int_equal(complete_kind_of("blueprint_name"),
                     COMPLETE_BLUEPRINT_NAME);
    assert_int_equal(complete_kind_of("blueprint_id"), COMPLETE_BLUEPRINT_ID);
    assert_int_equal(complete_kind_of("path"), COMPLETE_NONE);
    assert_int_equal(complete_kind_of(""), COMPLETE_NONE);
}

static cJSON *values_of(cJSON *res)
{
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(res, "completion"), "values");
}

/* The completion drawn from page for prefix prints as want. */
static void expect_completion(enum complete_kind kind, const cJSON *page,
                              const char *prefix, const char *want)
{
    cJSON *res = complete_from_page(kind, page, prefix);
    char *text = cJSON_PrintUnformatted(res);

    assert_string_equal(text, want);
    free(text);
    cJSON_Delete(res);
}

static void test_complete_page(void **state)
{
    cJSON *page = cJSON_Parse(
        "{\"devboxes\":[{\"id\":\"dbx_a1\",\"status\":\"running\"},"
        "{\"id\":\"dbx_a2\",\"status\":\"shutdown\"},{\"id\":\"dbx_b\"},"
        "{\"id\":\"dbx_a3\",\"status\":\"suspended\"},{\"id\":7}],"
        "\"has_more\":false}");
    cJSON *bp = cJSON_Parse("{\"blueprints\":[{\"id\":\"bpt_1\",\"name\":"
                            "\"py\"},{\"id\":\"bpt_2\",\"name\":\"py\"},"
                            "{\"id\":\"bpt_3\",\"name\":null}],"
                            "\"has_more\":true}");
    cJSON *res = NULL;

    (void)state;
    expect_completion(COMPLETE_DEVBOX_ID, page, "dbx_a",
                      "{\"completion\":{\"values\":[\"dbx_a1\","
                      "\"dbx_a3\"],\"total\":2,\"hasMore\":false}}");
    /* Names repeat across blueprints (builds): each once; has_more kept. */
    expect_completion(COMPLETE_BLUEPRINT_NAME, bp, "",
                      "{\"completion\":{\"values\":[\"py\"],"
                      "\"total\":1,\"hasMore\":true}}");
    res = complete_from_page(COMPLETE_BLUEPRINT_ID, bp, "bpt_");
    assert_int_equal(cJSON_GetArraySize(values_of(res)), 3);
    cJSON_Delete(res);
    /* No page (the API failed): an empty answer. */
    res = complete_from_page(COMPLETE_SNAPSHOT_NAME, NULL, "x");
    assert_int_equal(cJSON_GetArraySize(values_of(res)), 0);
    cJSON_Delete(res);
    cJSON_Delete(page);
    cJSON_Delete(bp);
}

static void test_complete_cap(void **state)
{
    cJSON *page = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(page, "snapshots");
    cJSON *res = NULL;
    const cJSON *comp = NULL;
    char name[32];
    int i;

    (void)state;
    for (i = 0; i < 150; i++) {
        cJSON *o = cJSON_CreateObject();
        snprintf(name, sizeof(name), "snap-%03d", i);
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddItemToArray(arr, o);
    }
    res = complete_from_page(COMPLETE_SNAPSHOT_NAME, page, "snap-");
    comp = cJSON_GetObjectItemCaseSensitive(res, "completion");
    assert_int_equal(cJSON_GetArraySize(values_of(res)), COMPLETE_MAX_VALUES);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(comp, "total")->valueint,
                     150);
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "hasMore")));
    cJSON_Delete(res);
    cJSON_Delete(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_match),
        cmocka_unit_test(test_complete_kinds),
        cmocka_unit_test(test_complete_page),
        cmocka_unit_test(test_complete_cap),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
