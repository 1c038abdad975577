/*
 * fsops.c - file operations the Runloop API has no endpoint for (listing a
 * directory, removing, setting a mode, renaming into place): each runs one
 * short shell script on the devbox through POST /execute, paths passed
 * single-quoted, and reports its outcome through the exit status.
 */
#define _GNU_SOURCE
#include "fsops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const wait_completed[] = {"completed"};

static bool completed(const cJSON *v)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(v, "status");

    return cJSON_IsString(st) && strcmp(st->valuestring, "completed") == 0;
}

/* Report a non-2xx answer, via the devbox's state when it has one. */
static int fail_status(const struct rlmcp_h *h, const char *id, long status,
                       const char *msg, const char *what)
{
    return rlmcp_h_fail_on_devbox(h, id, status, msg, what);
}

int fs_run_script(const struct rlmcp_h *h, const char *id, const char *script,
                  const char *what, cJSON **view_out)
{
    struct rlmcp_h_req_opts o = {0};
    cJSON *body = cJSON_CreateObject();
    cJSON *view = NULL;
    char *path = NULL;
    char *wpath = NULL;
    char *msg = NULL;
    long status = 0;
    int tries = 0;
    int rc = RLMCP_ENOMEM;

    *view_out = NULL;
    path = rlmcp_h_sprintf("/v1/devboxes/%s/execute?last_n=10000", id);
    wpath = rlmcp_h_sprintf("/v1/devboxes/%s/executions/", id);
    if (body == NULL || path == NULL || wpath == NULL)
        goto out;
    cJSON_AddStringToObject(body, "command", script);
    cJSON_AddNumberToObject(body, "optimistic_timeout", 25);
    o.timeout_ms = 60000;
    rc = rlmcp_h_request_status(h, "POST", path, body, &o, what, &status, &view,
                                &msg);
    if (rc != RLMCP_OK)
        goto out;
    if (status < 200 || status > 299) {
        rc = fail_status(h, id, status, msg, what);
        goto out;
    }
    /* These scripts take milliseconds; allow a loaded devbox a minute. */
    while (!completed(view) && tries++ < 3) {
        const cJSON *eid =
            cJSON_GetObjectItemCaseSensitive(view, "execution_id");
        cJSON *wbody = cJSON_CreateObject();
        char *p = NULL;
        if (!cJSON_IsString(eid) || wbody == NULL) {
            cJSON_Delete(wbody);
            break;
        }
        cJSON_AddItemToObject(wbody, "statuses",
                              cJSON_CreateStringArray(wait_completed, 1));
        p = rlmcp_h_sprintf("%s%s/wait_for_status?last_n=10000", wpath,
                            eid->valuestring);
        cJSON_Delete(view);
        view = NULL;
        rc = p != NULL ? rlmcp_h_request(h, "POST", p, wbody, &o, what, &view)
                       : RLMCP_ENOMEM;
        free(p);
        cJSON_Delete(wbody);
        if (rc != RLMCP_OK)
            goto out;
    }
    if (!completed(view)) {
        rc =
            rlmcp_h_fail(h, RLMCP_ERR_TIMEOUT,
                         "%s: the devbox did not finish within a minute", what);
        goto out;
    }
    *view_out = view;
    view = NULL;
    rc = RLMCP_OK;
out:
    cJSON_Delete(body);
    cJSON_Delete(view);
    free(path);
    free(wpath);
    free(msg);
    return rc;
}

int fs_exit_status(const cJSON *view)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(view, "exit_status");

    return cJSON_IsNumber(x) ? x->valueint : -1;
}

const char *fs_text(const cJSON *view, const char *which)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(view, which);

    return cJSON_IsString(t) ? t->valuestring : "";
}

char *fs_resolved(const char *path)
{
    if (path[0] == '/')
        return rlmcp_h_sprintf("%s", path);
    return rlmcp_h_sprintf("/home/user/%s", path);
}

int fs_fail_missing(const struct rlmcp_h *h, const char *what, const char *path)
{
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_NOT_FOUND,
        "Check the path: absolute, or relative to /home/user. list_files "
        "shows what a directory holds.",
        "%s: no file or directory '%s' on the devbox", what, path);
}

/* ---- list_files ---------------------------------------------------------- */

static const char *type_name(char t)
{
    switch (t) {
    case 'f':
        return "file";
    case 'd':
        return "directory";
    case 'l':
        return "symlink";
    case 'p':
        return "fifo";
    case 's':
        return "socket";
    case 'c':
        return "char_device";
    case 'b':
        return "block_device";
    default:
        return "other";
    }
}

/* One "type/size/mode/name" record into {name, type, size_bytes, mode}. */
static cJSON *entry_of(const char *rec)
{
    char type = rec[0];
    char *end = NULL;
    long long size = 0;
    const char *mode = NULL;
    const char *name = NULL;
    cJSON *e = NULL;
    char m[8];

    if (type == '\0' || rec[1] != '/')
        return NULL;
    size = strtoll(rec + 2, &end, 10);
    if (end == NULL || *end != '/')
        return NULL;
    mode = end + 1;
    name = strchr(mode, '/');
    if (name == NULL || name - mode > 4)
        return NULL;
    snprintf(m, sizeof(m), "%04o", (unsigned)strtoul(mode, NULL, 8));
    e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name + 1);
    cJSON_AddStringToObject(e, "type", type_name(type));
    cJSON_AddNumberToObject(e, "size_bytes", (double)size);
    cJSON_AddStringToObject(e, "mode", m);
    return e;
}

static int cmp_name(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a;
    const cJSON *y = *(const cJSON *const *)b;

    return strcmp(cJSON_GetObjectItemCaseSensitive(x, "name")->valuestring,
                  cJSON_GetObjectItemCaseSensitive(y, "name")->valuestring);
}

/* The NUL-separated records (base64 on the wire) as a sorted array. */
static cJSON *entries_of(const char *b64, size_t *n_out)
{
    size_t len = 0;
    unsigned char *raw = rlmcp_h_b64_decode(b64, strlen(b64), &len);
    cJSON **items = NULL;
    cJSON *arr = cJSON_CreateArray();
    size_t n = 0;
    size_t i = 0;
    size_t off = 0;

    if (raw == NULL || arr == NULL)
        goto fail;
    items = calloc(len / 8 + 1, sizeof(*items));
    if (items == NULL)
        goto fail;
    while (off < len) {
        const char *rec = (const char *)raw + off;
        size_t l = strnlen(rec, len - off);
        cJSON *e = NULL;
        if (off + l == len)
            break; /* no terminator: a cut record */
        e = entry_of(rec);
        if (e != NULL)
            items[n++] = e;
        off += l + 1;
    }
    qsort(items, n, sizeof(*items), cmp_name);
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, items[i]);
    free(items);
    free(raw);
    *n_out = n;
    return arr;
fail:
    free(raw);
    cJSON_Delete(arr);
    return NULL;
}

cJSON *fs_list_result(const cJSON *view, long long max_entries)
{
    const char *out = fs_text(view, "stdout");
    const char *nl = strchr(out, '\n');
    cJSON *res = NULL;
    cJSON *arr = NULL;
    char *dir = NULL;
    size_t n = 0;

    if (nl == NULL)
        return NULL;
    dir = strndup(out, (size_t)(nl - out));
    arr = entries_of(nl + 1, &n);
    if (dir == NULL || arr == NULL)
        goto out;
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "path", dir);
    /* The script lists one more than the cap to tell "more" apart. */
    if ((long long)n > max_entries) {
        cJSON_DeleteItemFromArray(arr, (int)n - 1);
        n--;
    }
    cJSON_AddNumberToObject(res, "count", (double)n);
    cJSON_AddBoolToObject(res, "truncated",
                          (long long)n >= max_entries &&
                              strstr(fs_text(view, "stderr"), "MORE") != NULL);
    cJSON_AddItemToObject(res, "entries", arr);
    arr = NULL;
out:
    free(dir);
    cJSON_Delete(arr);
    return res;
}

/*
 * A script about path: $p is the path; when nothing is there it exits
 * FS_MISSING, else body runs with the resolved path (realpath -s) in $r.
 * Takes body (malloc'd, may be NULL: out of memory); returns malloc'd.
 */
static char *path_script(const char *path, char *body)
{
    char *q = rlmcp_h_shell_quote(path);
    char *s = NULL;

    if (q != NULL && body != NULL)
        s = rlmcp_h_sprintf(
            "p=%s; if [ ! -e \"$p\" ] && [ ! -L \"$p\" ]; then exit %d; fi; "
            "r=$(realpath -s -- \"$p\") || exit 1; %s",
            q, FS_MISSING, body);
    free(q);
    free(body);
    return s;
}

char *fs_list_script(const char *path, long long max_entries)
{
    /*
     * Line 1: the resolved path; line 2: base64 of NUL-terminated
     * "type/size/mode/name" records (any byte in a name survives). A
     * directory lists its entries, anything else itself.
     */
    return path_script(
        path,
        rlmcp_h_sprintf(
            "printf '%%s\\n' \"$r\"; "
            "if [ -d \"$r\" ]; then set -- -mindepth 1 -maxdepth 1; "
            "else set -- -maxdepth 0; fi; "
            "n=$(find \"$r\" \"$@\" -printf x | wc -c); "
            "[ \"$n\" -gt %lld ] && echo MORE >&2; "
            "find \"$r\" \"$@\" -printf '%%y/%%s/%%m/%%f\\0' 2>/dev/null | "
            "head -z -n %lld | base64 -w0",
            max_entries, max_entries + 1));
}

/* ---- remove_file -------------------------------------------------------- */

char *fs_remove_script(const char *path, bool recursive)
{
    /* realpath -s: a symlink is removed itself, never what it points to. */
    return path_script(
        path, rlmcp_h_sprintf(
                  "[ \"$r\" = / ] && exit %d; "
                  "if [ -d \"$r\" ] && [ ! -L \"$r\" ]; then %s; "
                  "else rm -f -- \"$r\" || exit 1; fi; printf '%%s\\n' \"$r\"",
                  FS_ROOT,
                  recursive ? "rm -rf -- \"$r\" || exit 1"
                            : "[ -z \"$(ls -A -- \"$r\")\" ] || exit 5; "
                              "rmdir -- \"$r\" || exit 1"));
}

/* ---- write_file's atomic replace ----------------------------------------- */

char *fs_commit_script(const char *tmp, const char *path, const char *mode,
                       const char *user, const char *stage)
{
    char *qt = rlmcp_h_shell_quote(tmp);
    char *qp = rlmcp_h_shell_quote(path);
    char *qm = mode != NULL ? rlmcp_h_shell_quote(mode) : NULL;
    char *qu = user != NULL ? rlmcp_h_shell_quote(user) : NULL;
    char *qs = stage != NULL ? rlmcp_h_shell_quote(stage) : NULL;
    char *own = NULL;
    char *perm = NULL;
    char *s = NULL;

    if (qt == NULL || qp == NULL || (mode != NULL && qm == NULL) ||
        (user != NULL && (qu == NULL || qs == NULL)))
        goto out;
    /*
     * With a user, the contents were staged in the default user's home:
     * they are copied beside the target and given to that user, through
     * the default user's sudo when it is someone else (as
     * execute_command's user 'root'; the steps after it too, so a
     * directory only that user or root may write, or a sticky one such as
     * /tmp, takes the file). An unknown user leaves the old file.
     */
    if (qu != NULL)
        own = rlmcp_h_sprintf(
            "u=%s; s=%s; if ! id -u -- \"$u\" >/dev/null 2>&1; then rm -f -- "
            "\"$s\"; echo \"no user '$u' in the devbox: give an existing "
            "user (e.g. user or root) or create it first (sudo useradd -m "
            "$u)\" >&2; exit 3; fi; [ \"$(id -un)\" = \"$u\" ] || "
            "m='sudo -n'; $m cp -- \"$s\" \"$t\" || { rm -f -- \"$s\"; "
            "exit 1; }; rm -f -- \"$s\"; $m chown -- \"$u\": \"$t\" || { $m "
            "rm -f -- \"$t\"; exit 1; }; ",
            qu, qs);
    else
        own = strdup("");
    /*
     * Otherwise the contents were written beside the target. Either way
     * they get the requested mode (else the replaced file's) and are
     * renamed over it: readers see the old file or the new one, never a
     * part.
     */
    if (qm != NULL)
        perm = rlmcp_h_sprintf("$m chmod %s -- \"$t\" || { $m rm -f -- "
                               "\"$t\"; exit 1; }; ",
                               qm);
    else
        perm = strdup("if [ -e \"$p\" ]; then $m chmod --reference=\"$p\" "
                      "-- \"$t\" 2>/dev/null; fi; ");
    if (own == NULL || perm == NULL)
        goto out;
    s = rlmcp_h_sprintf("t=%s; p=%s; m=; %s%s$m mv -f -- \"$t\" \"$p\" || "
                        "{ $m rm -f -- \"$t\"; exit 1; }; realpath -s -- "
                        "\"$p\"",
                        qt, qp, own, perm);
out:
    free(qt);
    free(qp);
    free(qm);
    free(qu);
    free(qs);
    free(own);
    free(perm);
    return s;
}
