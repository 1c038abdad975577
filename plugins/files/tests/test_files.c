/*
 * test_files.c - the files plugin against the fake host table.
 */
#define _GNU_SOURCE /* asprintf */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void);

static int setup(void **state)
{
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(),
                             "{\"max_read_bytes\":64,\"max_write_bytes\":16,"
                             "\"max_upload_bytes\":8,"
                             "\"max_download_bytes\":32}"),
                     RLMCP_OK);
    return 0;
}

static int teardown(void **state)
{
    fh_unload();
    return 0;
}

static const char *rstr(const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(fh_result(), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void registers(void **state)
{
    assert_int_equal(fh_tool_count(), 6);
    assert_non_null(strstr(fh_tool("list_files")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("remove_file")->annotations_json,
                           "\"destructiveHint\":true"));
    assert_non_null(strstr(fh_tool("read_file")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("download_file")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("write_file")->annotations_json,
                           "\"readOnlyHint\":false"));
}

#define EXEC_PATH "/v1/devboxes/dbx_1/execute?last_n=10000"

static void write_file(void **state)
{
    cJSON *body;
    const char *cmd;

    /* Written beside the target, then renamed over it (mode applied). */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/write_file_contents", 200,
             "{\"exit_status\":0}");
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":0,\"stdout\":\"/home/user/a.py\\n\"}");
    assert_int_equal(fh_call("write_file", "{\"devbox_id\":\"dbx_1\","
                                           "\"file_path\":\"/home/user/a.py\","
                                           "\"contents\":\"print(1)\","
                                           "\"mode\":\"0755\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "size_bytes")->valueint,
                     8);
    assert_string_equal(rstr("resolved_path"), "/home/user/a.py");
    body = fh_request_json(fh_request_at(0));
    assert_true(strncmp(cJSON_GetObjectItem(body, "file_path")->valuestring,
                        "/home/user/.a.py.rlmcp-",
                        strlen("/home/user/.a.py.rlmcp-")) == 0);
    assert_string_equal(cJSON_GetObjectItem(body, "contents")->valuestring,
                        "print(1)");
    body = fh_request_json(fh_request_at(1));
    cmd = cJSON_GetObjectItem(body, "command")->valuestring;
    assert_non_null(strstr(cmd, "chmod '0755'"));
    assert_non_null(strstr(cmd, "mv -f -- \"$t\" \"$p\""));
    assert_non_null(strstr(cmd, "p='/home/user/a.py'"));

    /* With a user: staged in the default user's home, then copied beside
     * the target, given to that user and renamed over it. */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/write_file_contents", 200,
             "{\"exit_status\":0}");
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":0,\"stdout\":\"/srv/a.txt\\n\"}");
    assert_int_equal(fh_call("write_file", "{\"devbox_id\":\"dbx_1\","
                                           "\"file_path\":\"/srv/a.txt\","
                                           "\"contents\":\"x\","
                                           "\"user\":\"www-data\"}"),
                     RLMCP_OK);
    body = fh_request_json(fh_request_at(0));
    assert_true(strncmp(cJSON_GetObjectItem(body, "file_path")->valuestring,
                        "..rlmcp-stage.rlmcp-",
                        strlen("..rlmcp-stage.rlmcp-")) == 0);
    body = fh_request_json(fh_request_at(1));
    cmd = cJSON_GetObjectItem(body, "command")->valuestring;
    assert_non_null(strstr(cmd, "u='www-data'"));
    assert_non_null(strstr(cmd, "t='/srv/.a.txt.rlmcp-"));
    assert_non_null(strstr(cmd, "m='sudo -n'"));
    assert_non_null(strstr(cmd, "$m chown -- \"$u\": \"$t\""));
    assert_non_null(strstr(cmd, "$m mv -f -- \"$t\" \"$p\""));

    /* Not a user name: refused before anything is written. */
    fh_reset();
    fh_call("write_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\","
                          "\"contents\":\"x\",\"user\":\"a b\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "'a b'"));
    assert_int_equal(fh_request_count(), 0);

    fh_reset();
    fh_call("write_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\","
                          "\"contents\":\"x\",\"mode\":\"rwx\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);

    fh_reset();
    fh_call("write_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\","
                          "\"contents\":\"0123456789abcdefX\"}");
    assert_string_equal(fh_error_code(), "too_large");
    assert_non_null(strstr(fh_error_message(), "17 bytes"));
    assert_non_null(strstr(fh_error_message(), "16"));
    assert_int_equal(fh_request_count(), 0);

    fh_reset();
    fh_call("write_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "contents"));
}

static void read_text_and_binary(void **state)
{
    static const unsigned char png[] = {0x89, 'P',  'N', 'G', '\r', '\n',
                                        0x1a, '\n', 0,   1,   2,    0xff};
    cJSON *body;
    size_t n = 0;
    unsigned char *dec;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/download_file", 200, "héllo\n");
    assert_int_equal(fh_call("read_file", "{\"devbox_id\":\"dbx_1\","
                                          "\"file_path\":\"notes.txt\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("encoding"), "utf-8");
    assert_string_equal(rstr("content"), "héllo\n");
    assert_string_equal(rstr("mime_type"), "text/plain");
    assert_string_equal(rstr("resolved_path"), "/home/user/notes.txt");
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "path")->valuestring,
                        "notes.txt");
    assert_string_equal(fh_request_at(0)->accept, "application/octet-stream");
    assert_int_equal(fh_request_at(0)->max_body, 65);

    fh_reset();
    fh_route_bytes("POST", "/v1/devboxes/dbx_1/download_file", 200, png,
                   sizeof(png), 1);
    assert_int_equal(fh_call("read_file", "{\"devbox_id\":\"dbx_1\","
                                          "\"file_path\":\"/tmp/img\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("encoding"), "base64");
    assert_string_equal(rstr("mime_type"), "image/png");
    dec = rlmcp_h_b64_decode(rstr("content"), strlen(rstr("content")), &n);
    assert_non_null(dec);
    assert_int_equal(n, sizeof(png));
    assert_memory_equal(dec, png, n);
    free(dec);
}

/* A full disk and a read-only one: codes of their own whose remedies say
 * what frees space or what to do instead, never "fix the argument" or
 * "retry". */
static void write_full_and_read_only_disk(void **state)
{
    (void)state;
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/write_file_contents", 423,
             "{\"message\":\"devbox dbx_1: its disk is read-only\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_call("write_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\","
                          "\"contents\":\"x\"}");
    assert_string_equal(fh_error_code(), "disk_read_only");
    assert_non_null(strstr(fh_error_message(), "its disk is read-only"));
    assert_non_null(strstr(fh_error_remedy(), "download_file"));
    assert_null(strstr(fh_error_remedy(), "Fix the argument"));
    assert_null(strstr(fh_error_remedy(), "retry"));

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/write_file_contents", 507,
             "{\"message\":\"the engine's disk is full: devboxd's state "
             "filesystem (/s) has 0 MiB free\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_call("write_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\","
                          "\"contents\":\"x\"}");
    assert_string_equal(fh_error_code(), "storage_full");
    assert_non_null(strstr(fh_error_message(), "the engine's disk is full"));
    assert_non_null(strstr(fh_error_remedy(), "shut down devboxes"));
    assert_null(strstr(fh_error_remedy(), "retry"));
}

static void read_too_large_and_missing(void **state)
{
    char big[100];

    memset(big, 'x', sizeof(big) - 1);
    big[99] = '\0';
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/download_file", 200, big);
    fh_call("read_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/big\"}");
    assert_string_equal(fh_error_code(), "too_large");
    assert_non_null(strstr(fh_error_message(), "64"));

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/download_file", 404,
             "{\"message\":\"file not found: /nope\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_call("read_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/nope\"}");
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_message(), "no file or directory '/nope'"));
    /* The remedy is about the path, not about devbox ids. */
    assert_non_null(strstr(fh_error_remedy(), "Check the path"));
    assert_null(strstr(fh_error_remedy(), "list_devboxes"));

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/download_file", 400,
             "{\"message\":\"not running\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"suspended\"}");
    fh_call("read_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/x\"}");
    assert_string_equal(fh_error_code(), "devbox_not_running");
}

static void list_and_remove(void **state)
{
    static const char recs[] = "f/5/644/b.txt\0d/4096/755/a dir\0"
                               "l/7/777/link\0";
    char *b64 = rlmcp_h_b64_encode(recs, sizeof(recs) - 1, NULL);
    char *reply = NULL;
    const cJSON *arr, *e;
    const char *cmd;

    assert_true(asprintf(&reply,
                         "{\"execution_id\":\"exe_1\",\"status\":"
                         "\"completed\",\"exit_status\":0,\"stdout\":"
                         "\"/home/user\\n%s\",\"stderr\":\"\"}",
                         b64) > 0);
    fh_reset();
    fh_route("POST", EXEC_PATH, 200, reply);
    assert_int_equal(fh_call("list_files", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("path"), "/home/user");
    arr = cJSON_GetObjectItem(fh_result(), "entries");
    assert_int_equal(cJSON_GetArraySize(arr), 3);
    e = cJSON_GetArrayItem(arr, 0); /* sorted by name */
    assert_string_equal(cJSON_GetObjectItem(e, "name")->valuestring, "a dir");
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring,
                        "directory");
    assert_string_equal(cJSON_GetObjectItem(e, "mode")->valuestring, "0755");
    e = cJSON_GetArrayItem(arr, 1);
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, "file");
    assert_int_equal(cJSON_GetObjectItem(e, "size_bytes")->valueint, 5);
    e = cJSON_GetArrayItem(arr, 2);
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, "symlink");
    cmd = cJSON_GetObjectItem(fh_request_json(fh_request_at(0)), "command")
              ->valuestring;
    assert_non_null(strstr(cmd, "p='/home/user'"));

    /* A missing path: not_found about the path. */
    fh_reset();
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":3,\"stdout\":\"\",\"stderr\":\"\"}");
    fh_call("list_files", "{\"devbox_id\":\"dbx_1\",\"path\":\"/nope\"}");
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_remedy(), "Check the path"));

    /* remove_file: a non-empty directory needs recursive. */
    fh_reset();
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":5,\"stdout\":\"\",\"stderr\":\"\"}");
    fh_call("remove_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"d\"}");
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_remedy(), "recursive=true"));
    cmd = cJSON_GetObjectItem(fh_request_json(fh_request_at(0)), "command")
              ->valuestring;
    assert_null(strstr(cmd, "rm -rf"));
    fh_reset();
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":0,\"stdout\":\"/home/user/d\\n\"}");
    assert_int_equal(fh_call("remove_file", "{\"devbox_id\":\"dbx_1\","
                                            "\"file_path\":\"d\","
                                            "\"recursive\":true}"),
                     RLMCP_OK);
    assert_string_equal(rstr("resolved_path"), "/home/user/d");
    cmd = cJSON_GetObjectItem(fh_request_json(fh_request_at(0)), "command")
              ->valuestring;
    assert_non_null(strstr(cmd, "rm -rf"));
    free(reply);
    free(b64);
}

static void upload_download_roundtrip(void **state)
{
    static const unsigned char bin[] = {0, 1, 2, 0xfe, 0xff, 'A', 0};
    char *b64 = rlmcp_h_b64_encode(bin, sizeof(bin), NULL);
    char args[256];
    const struct fh_request *r;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/upload_file", 200, "");
    snprintf(args, sizeof(args),
             "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/home/user/b.bin\","
             "\"content_base64\":\"%s\"}",
             b64);
    assert_int_equal(fh_call("upload_file", args), RLMCP_OK);
    assert_null(fh_error_code());
    r = fh_request_at(0);
    assert_int_equal(r->n_parts, 2);
    assert_string_equal(r->part_path, "/home/user/b.bin");
    assert_int_equal(r->part_file_len, sizeof(bin));
    assert_memory_equal(r->part_file, bin, sizeof(bin));
    assert_null(r->body);

    fh_reset();
    fh_route_bytes("POST", "/v1/devboxes/dbx_1/download_file", 200, bin,
                   sizeof(bin), 1);
    assert_int_equal(fh_call("download_file", "{\"devbox_id\":\"dbx_1\","
                                              "\"file_path\":\"/home/user/"
                                              "b.bin\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("content_base64"), b64);
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "size_bytes")->valueint,
                     sizeof(bin));
    free(b64);

    fh_reset();
    fh_call("upload_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\","
                           "\"content_base64\":\"not base64!\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    fh_call("upload_file", "{\"devbox_id\":\"dbx_1\",\"file_path\":\"/a\","
                           "\"content_base64\":\"MDEyMzQ1Njc4\"}");
    assert_string_equal(fh_error_code(), "too_large");
    assert_int_equal(fh_request_count(), 0);
}

static void bad_config(void **state)
{
    /* Checked by the host against schemas/config.json. */
    static const struct fh_bad_config bad[] = {
        {"{\"max_read_bytes\":0}", "config.max_read_bytes: must be >= 1"},
        {"{\"max_list_entries\":2000000000}", "config.max_list_entries"},
        {"{\"max_write_bytes\":1.5}", "config.max_write_bytes"},
        {"{\"max_file_bytes\":5}", "unknown property 'max_file_bytes'"},
    };
    char *why = NULL;

    fh_unload();
    why = fh_init_refusals(rlmcp_plugin_descriptor(), bad,
                           sizeof(bad) / sizeof(bad[0]));
    if (why != NULL)
        fail_msg("%s", why);
    setup(state);
}

/* ---- the helper library ---------------------------------------------------
 */

static void helpers_base64(void **state)
{
    static const char *const in[] = {"",     "f",     "fo",    "foo",
                                     "foob", "fooba", "foobar"};
    static const char *const out[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    size_t i, n;

    for (i = 0; i < 7; i++) {
        char *e = rlmcp_h_b64_encode(in[i], strlen(in[i]), NULL);
        unsigned char *d = rlmcp_h_b64_decode(out[i], strlen(out[i]), &n);
        assert_string_equal(e, out[i]);
        assert_int_equal(n, strlen(in[i]));
        assert_memory_equal(d, in[i], n);
        free(e);
        free(d);
    }
    assert_null(rlmcp_h_b64_decode("Zm9v!", 5, &n));
    assert_null(rlmcp_h_b64_decode("Z", 1, &n));
    assert_null(rlmcp_h_b64_decode("Zg==Zg", 6, &n));
}

static void helpers_capture(void **state)
{
    struct rlmcp_h_capture c;
    bool t = false;
    char *s;
    size_t i;

    assert_true(rlmcp_h_capture_init(&c, 10));
    rlmcp_h_capture_add(&c, "abc", 3);
    s = rlmcp_h_capture_text(&c, NULL, &t);
    assert_string_equal(s, "abc");
    assert_false(t);
    free(s);
    rlmcp_h_capture_add(&c, "defghij", 7);
    s = rlmcp_h_capture_text(&c, NULL, &t);
    assert_string_equal(s, "abcdefghij");
    assert_false(t);
    free(s);
    /* many small writes wrap the ring */
    for (i = 0; i < 1000; i++)
        rlmcp_h_capture_add(&c, i == 999 ? "Z" : "y", 1);
    s = rlmcp_h_capture_text(
        &c, "full output: get_execution_logs execution_id=e1", &t);
    assert_true(t);
    assert_memory_equal(s, "abcde", 5);
    assert_string_equal(s + strlen(s) - 5, "yyyyZ");
    assert_non_null(strstr(s, "[truncated 1000 bytes; full output: "
                              "get_execution_logs execution_id=e1]"));
    free(s);
    rlmcp_h_capture_free(&c);

    /* no cut inside a UTF-8 character */
    assert_true(rlmcp_h_capture_init(&c, 4));
    rlmcp_h_capture_add(&c,
                        "a\xc3\xa9"
                        "bbbbbb\xc3\xa9",
                        11);
    s = rlmcp_h_capture_text(&c, NULL, &t);
    assert_true(t);
    assert_true(rlmcp_h_is_text(s, strlen(s)));
    free(s);
    rlmcp_h_capture_free(&c);
}

static void helpers_misc(void **state)
{
    char *q = rlmcp_h_shell_quote("a'b");
    assert_string_equal(q, "'a'\\''b'");
    free(q);
    assert_true(rlmcp_h_is_text("plain", 5));
    assert_false(rlmcp_h_is_text("a\0b", 3));
    assert_false(rlmcp_h_is_text("\xc3", 1));
    assert_false(rlmcp_h_is_text("\xed\xa0\x80", 3));
    assert_string_equal(rlmcp_h_mime_guess("x.PDF", "", 0), "application/pdf");
    assert_string_equal(rlmcp_h_mime_guess("x", "\x1f\x8b\x08", 3),
                        "application/gzip");
    assert_string_equal(rlmcp_h_mime_guess("x", "\x01\xff", 2),
                        "application/octet-stream");
    assert_true(rlmcp_h_id_valid("dbx_1-a.b"));
    assert_false(rlmcp_h_id_valid(".."));
    assert_false(rlmcp_h_id_valid("a/b"));
    assert_false(rlmcp_h_id_valid(""));
    assert_string_equal(rlmcp_h_code_for_status(401), "unauthenticated");
    assert_string_equal(rlmcp_h_code_for_status(403), "permission_denied");
    assert_string_equal(rlmcp_h_code_for_status(404), "not_found");
    assert_string_equal(rlmcp_h_code_for_status(409), "conflict");
    assert_string_equal(rlmcp_h_code_for_status(422), "invalid_argument");
    assert_string_equal(rlmcp_h_code_for_status(429), "rate_limited");
    assert_string_equal(rlmcp_h_code_for_status(500), "internal");
    assert_string_equal(rlmcp_h_code_for_status(503), "unavailable");
    assert_string_equal(rlmcp_h_code_for_status(408), "timeout");
    assert_string_equal(rlmcp_h_code_for_status(507), "storage_full");
    assert_string_equal(rlmcp_h_code_for_status(423), "disk_read_only");
    assert_non_null(
        strstr(rlmcp_h_remedy_for_code("storage_full"), "shut down devboxes"));
    assert_null(strstr(rlmcp_h_remedy_for_code("disk_read_only"), "retry"));
    q = rlmcp_h_error_message("{\"message\":{\"a\":1}}", 19);
    assert_string_equal(q, "{\"a\":1}");
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers),
        cmocka_unit_test(write_file),
        cmocka_unit_test(read_text_and_binary),
        cmocka_unit_test(read_too_large_and_missing),
        cmocka_unit_test(write_full_and_read_only_disk),
        cmocka_unit_test(upload_download_roundtrip),
        cmocka_unit_test(bad_config),
        cmocka_unit_test(list_and_remove),
        cmocka_unit_test(helpers_base64),
        cmocka_unit_test(helpers_capture),
        cmocka_unit_test(helpers_misc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
