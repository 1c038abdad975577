/* Unit tests of build context archives (build_context.h): the name and
 * symlink rules, and unpacking archives written by libarchive itself into
 * a temporary directory: files, modes and links land inside; a symlink
 * leading out through other links, a hard link through a symlink, names
 * with ".." and archives over the limit are refused. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "build_context.h"
#include "util.h"

struct ent {
    const char *name;
    int type; /* AE_IFREG, AE_IFDIR, AE_IFLNK; 'h' a hard link */
    const char *link;
    const char *data;
    int mode;
};

/* A gzip'd pax archive of ents in a memfd, at offset 0. */
static int make_archive(const struct ent *ents, size_t n)
{
    int fd = memfd_create("ctx", MFD_CLOEXEC);
    struct archive *a = archive_write_new();
    size_t i;

    assert_true(fd >= 0);
    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open_fd(a, fd), ARCHIVE_OK);
    for (i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        size_t len = ents[i].data != NULL ? strlen(ents[i].data) : 0;

        archive_entry_set_pathname(e, ents[i].name);
        if (ents[i].type == 'h') {
            archive_entry_set_hardlink(e, ents[i].link);
        } else {
            archive_entry_set_filetype(e, (unsigned)ents[i].type);
            archive_entry_set_perm(e,
                                   ents[i].mode ? (mode_t)ents[i].mode : 0644);
            if (ents[i].type == AE_IFLNK)
                archive_entry_set_symlink(e, ents[i].link);
            if (ents[i].type == AE_IFREG)
                archive_entry_set_size(e, (la_int64_t)len);
        }
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (len > 0)
            assert_int_equal(archive_write_data(a, ents[i].data, len),
                             (la_ssize_t)len);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    return fd;
}

static char *tmp_dir(void)
{
    char tmpl[] = "/tmp/test-build-context-XXXXXX";
    char *d = mkdtemp(tmpl);

    assert_non_null(d);
    return strdup(d);
}

static int unpack(const struct ent *ents, size_t n, uint64_t max, char **dir,
                  char *err, size_t errlen)
{
    int fd = make_archive(ents, n);
    int rc;

    *dir = tmp_dir();
    rc = build_context_unpack(fd, *dir, max, err, errlen);
    close(fd);
    return rc;
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(build_context_name_ok("app/x"), 0);
    assert_int_equal(build_context_name_ok("app/.hidden..x"), 0);
    assert_int_equal(build_context_name_ok("/etc/x"), -1);
    assert_int_equal(build_context_name_ok("../x"), -1);
    assert_int_equal(build_context_name_ok("a/../b"), -1);
    assert_int_equal(build_context_link_ok("app/l", "x"), 0);
    assert_int_equal(build_context_link_ok("app/l", "../top"), 0);
    assert_int_equal(build_context_link_ok("app/l", "../../out"), -1);
    assert_int_equal(build_context_link_ok("l", ".."), -1);
    assert_int_equal(build_context_link_ok("l", "/etc"), -1);
    assert_int_equal(build_context_link_ok("./a/./b/l", "./../../x"), 0);
    assert_int_equal(build_context_link_ok("l", ""), -1);
}

static void test_unpack_good(void **state)
{
    static const struct ent ents[] = {
        {"./", AE_IFDIR, NULL, NULL, 0755},
        {"./app/", AE_IFDIR, NULL, NULL, 0755},
        {"./app/hello.txt", AE_IFREG, NULL, "hello\n", 0644},
        {"./app/run.sh", AE_IFREG, NULL, "#!/bin/sh\n", 04755},
        {"./app/link", AE_IFLNK, "hello.txt", NULL, 0777},
        {"./app/up", AE_IFLNK, "../top.txt", NULL, 0777},
        {"./top.txt", 'h', "./app/hello.txt", NULL, 0},
    };
    char err[512] = "";
    char *dir = NULL;
    char *p = NULL;
    char *text = NULL;
    struct stat st;

    (void)state;
    assert_int_equal(unpack(ents, 7, 1 << 20, &dir, err, sizeof(err)), 0);
    assert_true(asprintf(&p, "%s/app/link", dir) > 0);
    text = util_read_file(p, 100, NULL);
    assert_string_equal(text, "hello\n");
    free(text);
    free(p);
    assert_true(asprintf(&p, "%s/app/up", dir) > 0);
    text = util_read_file(p, 100, NULL);
    assert_string_equal(text, "hello\n");
    free(text);
    free(p);
    assert_true(asprintf(&p, "%s/app/run.sh", dir) > 0);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755); /* no setuid */
    free(p);
    util_rmtree(dir);
    free(dir);
}

static void test_unpack_refused(void **state)
{
    /* d/e -> .. is the top, so s -> d/e/.. is above it. */
    static const struct ent chain[] = {
        {"d/", AE_IFDIR, NULL, NULL, 0755},
        {"d/e", AE_IFLNK, "..", NULL, 0777},
        {"s", AE_IFLNK, "d/e/..", NULL, 0777},
    };
    /* A hard link through a symlink: link() would follow it. */
    static const struct ent hard[] = {
        {"d/", AE_IFDIR, NULL, NULL, 0755},
        {"d/f", AE_IFREG, NULL, "x", 0644},
        {"l", AE_IFLNK, "d", NULL, 0777},
        {"h", 'h', "l/f", NULL, 0},
    };
    static const struct ent through[] = {
        {"l", AE_IFLNK, "d", NULL, 0777},
        {"d/", AE_IFDIR, NULL, NULL, 0755},
        {"l/f", AE_IFREG, NULL, "x", 0644},
    };
    static const struct ent dotdot[] = {
        {"a/../../x", AE_IFREG, NULL, "x", 0644}};
    static const struct ent big[] = {
        {"big", AE_IFREG, NULL, "0123456789", 0644}};
    char err[512] = "";
    char *dir = NULL;

    (void)state;
    assert_int_equal(unpack(chain, 3, 1 << 20, &dir, err, sizeof(err)), -1);
    assert_non_null(
        strstr(err, "symlink \"s\" leads outside the build context"));
    util_rmtree(dir);
    free(dir);
    assert_int_equal(unpack(hard, 4, 1 << 20, &dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "hard link \"h\" -> \"l/f\""));
    util_rmtree(dir);
    free(dir);
    assert_int_equal(unpack(through, 3, 1 << 20, &dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot unpack \"l/f\""));
    util_rmtree(dir);
    free(dir);
    assert_int_equal(unpack(dotdot, 1, 1 << 20, &dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "leaves the build context"));
    util_rmtree(dir);
    free(dir);
    assert_int_equal(unpack(big, 1, 9, &dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "unpacks to more than"));
    util_rmtree(dir);
    free(dir);
}

/* The engine's side of build_context_open: the object "obj_good" is the
 * archive fd (a dup), any other is missing. */
struct objects {
    int fd;
    int calls;
};

static int open_object(void *ud, const char *id, char *err, size_t errlen)
{
    struct objects *o = ud;

    o->calls++;
    if (strcmp(id, "obj_good") == 0)
        return dup(o->fd);
    snprintf(err, errlen, "object %s not found (deleted or expired)", id);
    return -1;
}

static void test_open(void **state)
{
    static const struct ent ents[] = {
        {"app/hello.txt", AE_IFREG, NULL, "hello\n", 0644}};
    static const struct ent bad[] = {{"../x", AE_IFREG, NULL, "x", 0644}};
    struct objects o = {make_archive(ents, 1), 0};
    cJSON *body = NULL;
    char err[512] = "";
    int fd = 7;

    (void)state;
    /* No build_context: nothing is opened. */
    body = cJSON_Parse("{\"name\": \"x\"}");
    assert_int_equal(build_context_open(body, 1 << 20, open_object, &o, &fd,
                                        err, sizeof(err)),
                     0);
    assert_int_equal(fd, -1);
    assert_int_equal(o.calls, 0);
    cJSON_Delete(body);

    /* The object the engine opens is the build's context, checked whole. */
    body = cJSON_Parse("{\"build_context\": {\"type\": \"object\", "
                       "\"object_id\": \"obj_good\"}}");
    assert_int_equal(build_context_open(body, 1 << 20, open_object, &o, &fd,
                                        err, sizeof(err)),
                     0);
    assert_true(fd >= 0);
    assert_int_equal(o.calls, 1);
    close(fd);
    assert_int_equal(
        build_context_open(body, 3, open_object, &o, &fd, err, sizeof(err)),
        -1);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(err, "unpacks to more than"));
    cJSON_Delete(body);

    /* The engine's reason an object cannot be opened, and what to do. */
    body = cJSON_Parse("{\"build_context\": {\"type\": \"object\", "
                       "\"object_id\": \"obj_gone\"}}");
    assert_int_equal(build_context_open(body, 1 << 20, open_object, &o, &fd,
                                        err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err,
                           "build_context.object_id: object obj_gone "
                           "not found (deleted or expired); upload a tar"));
    cJSON_Delete(body);

    /* A bad archive is refused before any build. */
    close(o.fd);
    o.fd = make_archive(bad, 1);
    body = cJSON_Parse("{\"build_context\": {\"type\": \"object\", "
                       "\"object_id\": \"obj_good\"}}");
    assert_int_equal(build_context_open(body, 1 << 20, open_object, &o, &fd,
                                        err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "leaves the build context"));
    cJSON_Delete(body);
    close(o.fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_unpack_good),
        cmocka_unit_test(test_unpack_refused),
        cmocka_unit_test(test_open),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
