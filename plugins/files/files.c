/*
 * files.c - file tools: write_file / read_file (text, binary falls back to
 * base64 with a MIME hint) and upload_file / download_file (base64).
 *
 * Also list_files and remove_file (fsops.c).
 *
 * Config (all optional, bytes):
 *   max_read_bytes (1 MiB)  max_write_bytes (10 MiB)
 *   max_upload_bytes (10 MiB)  max_download_bytes (10 MiB)
 *   max_list_entries (1000, entries)
 * Above a limit the tool fails with too_large before moving the data.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "fsops.h"
#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

struct fs {
    const struct rlmcp_host_api *api;
    long long max_read, max_write, max_upload, max_download;
    long long max_list;
};

/* A file tool's arguments (aj, al as the handler got them) into *args
 * (caller frees), with its devbox_id and file_path (borrowed from *args). */
static int file_args(const struct rlmcp_h *h, const char *aj, size_t al,
                     cJSON **args, const char **id, const char **path)
{
    int rc = rlmcp_h_args(h, aj, al, args);

    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, *args, "devbox_id", true, id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, *args, "file_path", true, path);
    if (rc == RLMCP_OK && strlen(*path) > 4096)
        rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'file_path' is longer than 4096 bytes");
    return rc;
}

static int too_large(const struct rlmcp_h *h, const char *what,
                     unsigned long long size, long long limit)
{
    return rlmcp_h_fail(h, RLMCP_ERR_TOO_LARGE,
                        "%s: %llu bytes exceed this server's limit of %lld "
                        "bytes",
                        what, size, limit);
}

static cJSON *written(const char *id, const char *path, const char *resolved,
                      size_t n)
{
    cJSON *r = cJSON_CreateObject();
    char *abs = resolved == NULL ? fs_resolved(path) : NULL;

    cJSON_AddStringToObject(r, "devbox_id", id);
    cJSON_AddStringToObject(r, "file_path", path);
    cJSON_AddStringToObject(r, "resolved_path",
                            resolved != NULL ? resolved
                            : abs != NULL    ? abs
                                             : path);
    free(abs);
    cJSON_AddNumberToObject(r, "size_bytes", (double)n);
    return r;
}

/* Is the devbox there and running? (A 404 then means the file.) */
static bool devbox_running(const struct rlmcp_h *h, const char *id)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    cJSON *dbx = NULL;
    bool running = false;

    if (path == NULL)
        return false;
    req.method = "GET";
    req.path = path;
    if (h->api->runloop_request(h->call, &req, &resp) == RLMCP_OK &&
        resp->status >= 200 && resp->status <= 299)
        dbx = cJSON_ParseWithLength(resp->body, resp->body_len);
    running = dbx != NULL && strcmp(rlmcp_h_devbox_status(dbx), "running") == 0;
    h->api->http_resp_free(resp);
    cJSON_Delete(dbx);
    free(path);
    return running;
}

/*
 * Send a prepared request; non-2xx goes through the devbox-state check,
 * except a 404 on a running devbox for file_path (when given): the file
 * is missing, and the remedy says so.
 */
static int send_req(const struct rlmcp_h *h, const char *id,
                    const char *file_path, struct rlmcp_http_req *req,
                    const char *what, struct rlmcp_http_resp **resp_out)
{
    char *msg = NULL;
    int rc;

    *resp_out = NULL;
    rc = h->api->runloop_request(h->call, req, resp_out);
    if (rc != RLMCP_OK)
        return rlmcp_h_fail_rc(h, rc, what);
    if ((*resp_out)->status >= 200 && (*resp_out)->status <= 299)
        return RLMCP_OK;
    msg = rlmcp_h_error_message((*resp_out)->body, (*resp_out)->body_len);
    if ((*resp_out)->status == 404 && file_path != NULL &&
        devbox_running(h, id))
        rc = fs_fail_missing(h, what, file_path);
    else
        rc = rlmcp_h_fail_on_devbox(h, id, (*resp_out)->status, msg, what);
    free(msg);
    h->api->http_resp_free(*resp_out);
    *resp_out = NULL;
    return rc;
}

/* ---- write_file --------------------------------------------------------- */

static bool mode_ok(const char *m)
{
    size_t n = strlen(m);
    size_t i = 0;

    if (n == 4 && m[0] == '0') {
        m++;
        n--;
    }
    if (n != 3)
        return false;
    for (i = 0; i < n; i++) {
        if (m[i] < '0' || m[i] > '7')
            return false;
    }
    return true;
}

/* A login name as useradd takes it (Debian's relaxed rule, no '$'). */
static bool user_ok(const char *u)
{
    size_t n = strlen(u);
    size_t i;

    if (n == 0 || n > 32 || u[0] == '-' || (u[0] >= '0' && u[0] <= '9'))
        return false;
    for (i = 0; i < n; i++) {
        char c = u[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

/* A fresh name beside path: ".<name>.rlmcp-<pid>-<n>" in its directory. */
static char *tmp_beside(const char *path)
{
    static atomic_uint seq;
    const char *slash = strrchr(path, '/');
    unsigned n = atomic_fetch_add(&seq, 1);
    int dir_len = slash != NULL ? (int)(slash - path + 1) : 0;
    const char *base = slash != NULL ? slash + 1 : path;

    return rlmcp_h_sprintf("%.*s.%.64s.rlmcp-%ld-%llu-%u", dir_len, path, base,
                           (long)getpid(), (unsigned long long)rlmcp_h_now_ms(),
                           n);
}

/* The first line of a script's stdout (a resolved path); malloc'd. */
static char *first_line(const cJSON *view)
{
    char *line = strdup(fs_text(view, "stdout"));
    char *nl = line != NULL ? strchr(line, '\n') : NULL;

    if (nl != NULL)
        *nl = '\0';
    return line;
}

/* Rename the written temporary file over path (mode applied). */
static int commit_write(const struct rlmcp_h *h, const char *id,
                        const char *tmp, const char *path, const char *mode,
                        const char *user, const char *stage, const char *what,
                        char **resolved_out)
{
    char *script = fs_commit_script(tmp, path, mode, user, stage);
    cJSON *view = NULL;
    int rc;

    *resolved_out = NULL;
    if (script == NULL)
        return RLMCP_ENOMEM;
    rc = fs_run_script(h, id, script, what, &view);
    free(script);
    if (rc != RLMCP_OK)
        goto out;
    if (fs_exit_status(view) != 0) {
        rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                          "%s: could not put the file in place: %s", what,
                          fs_text(view, "stderr"));
        goto out;
    }
    *resolved_out = first_line(view);
out:
    cJSON_Delete(view);
    return rc;
}

static int t_write(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct fs *fs = ud;
    struct rlmcp_h h = {fs->api, call};
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    cJSON *args = NULL, *body = NULL, *res = NULL;
    const char *id = NULL, *path = NULL, *contents = NULL, *mode = NULL;
    const char *user = NULL;
    char *url = NULL, *what = NULL, *text = NULL, *tmp = NULL;
    char *stage = NULL, *resolved = NULL;
    size_t n;
    int rc;

    rc = file_args(&h, aj, al, &args, &id, &path);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "contents", false, &contents);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "mode", false, &mode);
    if (rc == RLMCP_OK && mode != NULL && !mode_ok(mode))
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'mode' must be octal permissions such as "
                          "0644 or 755, not '%s'",
                          mode);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "user", false, &user);
    if (rc == RLMCP_OK && user != NULL && !user_ok(user))
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'user' must be a user name such as user "
                          "or root (letters, digits, '_', '-', '.', at most "
                          "32, not starting with '-' or a digit), not "
                          "'%.64s'",
                          user);
    if (rc == RLMCP_OK && path[strlen(path) - 1] == '/')
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'file_path' ends with '/': give the "
                          "file's path, not a directory");
    if (rc != RLMCP_OK)
        goto out;
    tmp = tmp_beside(path);
    /* For another owner the contents go where the default user may write
     * (its home: relative paths are), and the commit moves them. */
    if (user != NULL)
        stage = tmp_beside(".rlmcp-stage");
    if (tmp == NULL || (user != NULL && stage == NULL)) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    n = strlen(contents);
    what = rlmcp_h_sprintf("writing %s on devbox %s", path, id);
    url = rlmcp_h_sprintf("/v1/devboxes/%s/write_file_contents", id);
    if (what == NULL || url == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    if ((long long)n > fs->max_write) {
        rc = too_large(&h, what, n, fs->max_write);
        goto out;
    }
    body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "file_path", stage != NULL ? stage : tmp);
    cJSON_AddStringToObject(body, "contents", contents);
    text = cJSON_PrintUnformatted(body);
    if (text == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    req.method = "POST";
    req.path = url;
    req.body = text;
    req.body_len = strlen(text);
    req.timeout_ms = 120000;
    rc = send_req(&h, id, NULL, &req, what, &resp);
    if (rc == RLMCP_OK)
        rc =
            commit_write(&h, id, tmp, path, mode, user, stage, what, &resolved);
    if (rc != RLMCP_OK)
        goto out;
    res = written(id, path, resolved, n);
    rc = rlmcp_h_result_json(&h, res);
out:
    fs->api->http_resp_free(resp);
    free(url);
    free(what);
    free(text);
    free(tmp);
    free(stage);
    free(resolved);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- read_file / download_file ---------------------------------------------
 */

static int fetch(struct fs *fs, const struct rlmcp_h *h, const char *id,
                 const char *path, long long limit,
                 struct rlmcp_http_resp **resp_out)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    char *url = NULL, *text = NULL;
    char *what = rlmcp_h_sprintf("reading %s on devbox %s", path, id);
    int rc = RLMCP_ENOMEM;

    if (what == NULL)
        goto out;
    rc = rlmcp_h_download_req(id, path, limit, 120000, &req, &url, &text);
    if (rc == RLMCP_OK)
        rc = send_req(h, id, path, &req, what, resp_out);
    if (rc != RLMCP_OK)
        goto out;
    if (rlmcp_h_resp_over(*resp_out, limit)) {
        fs->api->http_resp_free(*resp_out);
        *resp_out = NULL;
        rc = rlmcp_h_fail(h, RLMCP_ERR_TOO_LARGE,
                          "%s: the file is larger than this server's limit "
                          "of %lld bytes",
                          what, limit);
    }
out:
    free(url);
    free(what);
    free(text);
    return rc;
}

static int read_common(struct fs *fs, rlmcp_call *call, const char *aj,
                       size_t al, bool download)
{
    struct rlmcp_h h = {fs->api, call};
    struct rlmcp_http_resp *resp = NULL;
    cJSON *args = NULL, *res = NULL;
    const char *id = NULL, *path = NULL;
    char *b64 = NULL;
    char *resolved = NULL;
    bool text;
    int rc;

    rc = file_args(&h, aj, al, &args, &id, &path);
    if (rc == RLMCP_OK)
        rc = fetch(fs, &h, id, path, download ? fs->max_download : fs->max_read,
                   &resp);
    if (rc != RLMCP_OK)
        goto out;
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "file_path", path);
    resolved = fs_resolved(path);
    if (resolved != NULL)
        cJSON_AddStringToObject(res, "resolved_path", resolved);
    text = !download && rlmcp_h_is_text(resp->body, resp->body_len);
    if (text) {
        cJSON_AddStringToObject(res, "encoding", "utf-8");
        cJSON_AddStringToObject(res, "content", resp->body);
    } else {
        b64 = rlmcp_h_b64_encode(resp->body, resp->body_len, NULL);
        if (b64 == NULL) {
            rc = RLMCP_ENOMEM;
            goto out;
        }
        if (!download)
            cJSON_AddStringToObject(res, "encoding", "base64");
        cJSON_AddStringToObject(res, download ? "content_base64" : "content",
                                b64);
    }
    cJSON_AddNumberToObject(res, "size_bytes", (double)resp->body_len);
    cJSON_AddStringToObject(
        res, "mime_type", rlmcp_h_mime_guess(path, resp->body, resp->body_len));
    rc = rlmcp_h_result_json(&h, res);
out:
    fs->api->http_resp_free(resp);
    free(b64);
    free(resolved);
    cJSON_Delete(args);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

static int t_read(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return read_common(ud, call, aj, al, false);
}

static int t_download(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return read_common(ud, call, aj, al, true);
}

/* ---- the devbox://{devbox_id}/{+path} resource ---------------------------
 */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decode the path part of a URI into "/" + path; NULL on a bad
 * escape or an encoded NUL. */
static char *uri_path_decode(const char *in)
{
    size_t n = strlen(in);
    char *out = malloc(n + 2);
    size_t o = 0;
    size_t i;

    if (out == NULL)
        return NULL;
    out[o++] = '/';
    for (i = 0; i < n; i++) {
        int hi = 0;
        int lo = 0;

        if (in[i] != '%') {
            out[o++] = in[i];
            continue;
        }
        if (i + 2 < n) {
            hi = hexval(in[i + 1]);
            lo = hi >= 0 ? hexval(in[i + 2]) : -1;
        } else {
            hi = -1;
        }
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            return NULL;
        }
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[o] = '\0';
    return out;
}

/* An absolute path with no empty, "." or ".." segment and no trailing '/'. */
static const char *path_problem(const char *abs)
{
    const char *seg = abs + 1;

    if (strlen(abs) > 4096)
        return "is longer than 4096 bytes";
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t len = end != NULL ? (size_t)(end - seg) : strlen(seg);

        if (len == 0)
            return end != NULL || seg == abs + 1
                       ? "has an empty segment ('//' or nothing after the "
                         "devbox id)"
                       : "ends with '/': name a file, not a directory";
        if ((len == 1 && seg[0] == '.') ||
            (len == 2 && seg[0] == '.' && seg[1] == '.'))
            return "has a '.' or '..' segment: write the plain absolute path";
        if (end == NULL)
            return NULL;
        seg = end + 1;
    }
}

static int r_read(rlmcp_call *call, const char *uri, void *ud)
{
    struct fs *fs = ud;
    struct rlmcp_h h = {fs->api, call};
    struct rlmcp_http_resp *resp = NULL;
    const char *rest = NULL;
    const char *problem = NULL;
    const char *mime = NULL;
    char id[130];
    char *path = NULL;
    bool text;
    int rc;

    rc = rlmcp_h_devbox_uri(&h, uri, id, sizeof(id), &rest);
    if (rc != RLMCP_OK)
        goto out;
    path = uri_path_decode(rest);
    if (path == NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "'%.256s': the path has a bad %%-escape (or an "
                          "encoded NUL); escape as %%XX with two hex digits",
                          uri);
        goto out;
    }
    problem = path_problem(path);
    if (problem != NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "'%.256s': the path %s (devbox://{devbox_id}/"
                          "{path} reads the absolute path /{path})",
                          uri, problem);
        goto out;
    }
    rc = fetch(fs, &h, id, path, fs->max_read, &resp);
    if (rc != RLMCP_OK)
        goto out;
    mime = rlmcp_h_mime_guess(path, resp->body, resp->body_len);
    text = rlmcp_h_is_text(resp->body, resp->body_len);
    rc = fs->api->resource_contents(call, uri, mime, resp->body, resp->body_len,
                                    !text);
out:
    fs->api->http_resp_free(resp);
    free(path);
    return rlmcp_h_ret(rc);
}

static int register_resource(rlmcp_plugin *self,
                             const struct rlmcp_host_api *api, struct fs *fs)
{
    struct rlmcp_resource_def def = RLMCP_RESOURCE_DEF_INIT;
    int rc;

    def.uri_template = "devbox://{devbox_id}/{+path}";
    def.name = "devbox-file";
    def.title = "A file on a devbox";
    def.description = "The file at absolute path /{path} on a running devbox: "
                      "text as text, anything else as a base64 blob, with a "
                      "MIME type guessed from its name and bytes. Files "
                      "over the server's max_read_bytes are refused.";
    def.read = r_read;
    def.user_data = fs;
    rc = api->register_resource(self, &def);
    if (rc != RLMCP_OK)
        api->set_error(self, "registering the devbox file resource failed: %s",
                       api->strerror(rc));
    return rc;
}

/* ---- upload_file
 * -------------------------------------------------------------- */

/* Decode content_base64 within the upload limit (checked before decoding). */
static int decode_upload(struct fs *fs, const struct rlmcp_h *h,
                         const char *what, const char *b64,
                         unsigned char **data_out, size_t *n_out)
{
    size_t b64_len = strlen(b64);

    /* Refuse before decoding: the decoded size is at least this. */
    if (b64_len / 4 * 3 > (size_t)fs->max_upload + 3)
        return too_large(h, what, (unsigned long long)(b64_len / 4 * 3),
                         fs->max_upload);
    *data_out = rlmcp_h_b64_decode(b64, b64_len, n_out);
    if (*data_out == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'content_base64' is not valid base64");
    if ((long long)*n_out > fs->max_upload)
        return too_large(h, what, *n_out, fs->max_upload);
    return RLMCP_OK;
}

/* POST the multipart upload: the path, then the file named after it. */
static int post_upload(const struct rlmcp_h *h, const char *id,
                       const char *path, const unsigned char *data, size_t n,
                       const char *url, const char *what)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_part parts[2];
    struct rlmcp_http_resp *resp = NULL;
    const char *base = strrchr(path, '/');
    int rc;

    base = base != NULL && base[1] != '\0' ? base + 1 : "upload";
    memset(parts, 0, sizeof(parts));
    parts[0].struct_size = sizeof(parts[0]);
    parts[0].name = "path";
    parts[0].data = path;
    parts[0].len = strlen(path);
    parts[1].struct_size = sizeof(parts[1]);
    parts[1].name = "file";
    parts[1].filename = base;
    parts[1].content_type = "application/octet-stream";
    parts[1].data = data;
    parts[1].len = n;
    req.method = "POST";
    req.path = url;
    req.parts = parts;
    req.n_parts = 2;
    req.timeout_ms = 120000;
    rc = send_req(h, id, NULL, &req, what, &resp);
    h->api->http_resp_free(resp);
    return rc;
}

static int t_upload(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct fs *fs = ud;
    struct rlmcp_h h = {fs->api, call};
    cJSON *args = NULL, *res = NULL;
    const char *id = NULL, *path = NULL, *b64 = NULL;
    unsigned char *data = NULL;
    char *url = NULL, *what = NULL;
    size_t n = 0;
    int rc;

    rc = file_args(&h, aj, al, &args, &id, &path);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "content_base64", false, &b64);
    if (rc != RLMCP_OK)
        goto out;
    what = rlmcp_h_sprintf("uploading %s to devbox %s", path, id);
    url = rlmcp_h_sprintf("/v1/devboxes/%s/upload_file", id);
    if (what == NULL || url == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = decode_upload(fs, &h, what, b64, &data, &n);
    if (rc == RLMCP_OK)
        rc = post_upload(&h, id, path, data, n, url, what);
    if (rc != RLMCP_OK)
        goto out;
    res = written(id, path, NULL, n);
    rc = rlmcp_h_result_json(&h, res);
out:
    free(data);
    free(url);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- list_files / remove_file ------------------------------------------- */

/* The script's common outcomes: missing path, or its own error text. */
static int script_failed(const struct rlmcp_h *h, const cJSON *view,
                         const char *what, const char *path)
{
    int x = fs_exit_status(view);

    if (x == FS_MISSING)
        return fs_fail_missing(h, what, path);
    if (x == FS_NOT_EMPTY)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_CONFLICT,
            "Pass recursive=true to remove the directory with everything in "
            "it.",
            "%s: the directory is not empty", what);
    if (x == FS_ROOT)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "%s: refusing to remove /", what);
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT, "%s: %s", what,
                        fs_text(view, "stderr")[0] != '\0'
                            ? fs_text(view, "stderr")
                            : "the devbox refused it");
}

/* Run the script about path (what and script NULL: out of memory) into
 * *view; a failed run is reported with script_failed. */
static int run_path_script(const struct rlmcp_h *h, const char *id,
                           const char *script, const char *what,
                           const char *path, cJSON **view)
{
    int rc;

    if (what == NULL || script == NULL)
        return RLMCP_ENOMEM;
    rc = fs_run_script(h, id, script, what, view);
    if (rc == RLMCP_OK && fs_exit_status(*view) != 0)
        rc = script_failed(h, *view, what, path);
    return rc;
}

static int t_list(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct fs *fs = ud;
    struct rlmcp_h h = {fs->api, call};
    cJSON *args = NULL, *view = NULL, *res = NULL;
    const char *id = NULL, *path = NULL;
    char *script = NULL, *what = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "path", false, &path);
    if (rc != RLMCP_OK)
        goto out;
    if (path == NULL || path[0] == '\0')
        path = "/home/user";
    what = rlmcp_h_sprintf("listing %s on devbox %s", path, id);
    script = fs_list_script(path, fs->max_list);
    rc = run_path_script(&h, id, script, what, path, &view);
    if (rc != RLMCP_OK)
        goto out;
    res = fs_list_result(view, fs->max_list);
    if (res == NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                          "%s: the devbox's answer could not be read (are "
                          "realpath, find and base64 installed?)",
                          what);
        goto out;
    }
    rc = rlmcp_h_result_json(&h, res);
out:
    free(script);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

static int t_remove(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct fs *fs = ud;
    struct rlmcp_h h = {fs->api, call};
    cJSON *args = NULL, *view = NULL, *res = NULL;
    const char *id = NULL, *path = NULL;
    char *script = NULL, *what = NULL, *resolved = NULL;
    bool recursive = false;
    int rc;

    rc = file_args(&h, aj, al, &args, &id, &path);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(&h, args, "recursive", &recursive);
    if (rc != RLMCP_OK)
        goto out;
    what = rlmcp_h_sprintf("removing %s on devbox %s", path, id);
    script = fs_remove_script(path, recursive);
    rc = run_path_script(&h, id, script, what, path, &view);
    if (rc != RLMCP_OK)
        goto out;
    resolved = first_line(view);
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddStringToObject(res, "file_path", path);
    cJSON_AddStringToObject(res, "resolved_path",
                            resolved != NULL ? resolved : path);
    cJSON_AddBoolToObject(res, "removed", true);
    rc = rlmcp_h_result_json(&h, res);
out:
    free(script);
    free(what);
    free(resolved);
    cJSON_Delete(args);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- registration
 * ----------------------------------------------------------------- */

static const struct rlmcp_h_tool specs[] = {
    {"write_file", "Write a text file",
     "Create or overwrite a UTF-8 text file on a devbox, atomically: "
     "readers see the old file or the new one, never a part. Parent "
     "directories must exist; mode sets its permissions (e.g. 0755). "
     "Returns the resolved absolute path. For binary data use upload_file.",
     schema_write_file, schema_file_written_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":"
     "true,\"openWorldHint\":true}",
     t_write, false},
    {"read_file", "Read a file",
     "Read a file from a devbox. Text comes back as is (encoding utf-8); a "
     "binary file comes back base64-encoded (encoding base64) with a "
     "mime_type hint. resolved_path is the absolute path read.",
     schema_read_file, schema_read_file_out,
     "{\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":"
     "true,\"openWorldHint\":true}",
     t_read, false},
    {"upload_file", "Upload a file (base64)",
     "Upload bytes (standard base64) to a path on a devbox, creating or "
     "overwriting the file. Use it for binary files and archives; unpack "
     "archives with execute_command.",
     schema_upload_file, schema_file_written_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":"
     "true,\"openWorldHint\":true}",
     t_upload, false},
    {"download_file", "Download a file (base64)",
     "Download a file from a devbox as standard base64 (any content), with "
     "its size and a mime_type hint. Save results before the devbox is shut "
     "down.",
     schema_download_file, schema_download_file_out,
     "{\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":"
     "true,\"openWorldHint\":true}",
     t_download, false},
    {"list_files", "List a directory",
     "List a directory on a devbox: each entry's name, type (file, "
     "directory, symlink, ...), size_bytes and mode (octal), sorted by "
     "name. A symlink is listed as itself. At most the server's "
     "max_list_entries are returned (truncated says so).",
     schema_list_files, schema_list_files_out,
     "{\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":"
     "true,\"openWorldHint\":true}",
     t_list, false},
    {"remove_file", "Remove a file or directory",
     "Remove a file, a symlink (never what it points to) or an empty "
     "directory on a devbox; a directory with contents only with "
     "recursive=true. A missing path is a not_found error.",
     schema_remove_file, schema_remove_file_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":"
     "false,\"openWorldHint\":true}",
     t_remove, false},
};

static int fs_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    static const struct rlmcp_h_cfg_default lims[] = {
        {"max_read_bytes", 1 << 20, offsetof(struct fs, max_read)},
        {"max_write_bytes", 10 << 20, offsetof(struct fs, max_write)},
        {"max_upload_bytes", 10 << 20, offsetof(struct fs, max_upload)},
        {"max_download_bytes", 10 << 20, offsetof(struct fs, max_download)},
        {"max_list_entries", 1000, offsetof(struct fs, max_list)},
    };
    struct fs *fs = state;
    int rc;

    fs->api = api;
    /* Types and ranges are schemas/config.json's, checked by the host. */
    rlmcp_h_cfg_defaults(cfg, lims, sizeof(lims) / sizeof(lims[0]), fs);
    rc = rlmcp_h_register_tools(self, api, specs,
                                sizeof(specs) / sizeof(specs[0]), fs, 0);
    if (rc == RLMCP_OK)
        rc = register_resource(self, api, fs);
    return rc;
}

RLMCP_H_PLUGIN_DEFINE("files", "0.1.0",
                      "Files on devboxes: read/write text, "
                      "upload/download base64",
                      struct fs, fs_setup, rlmcp_h_shutdown_free, schema_config)
