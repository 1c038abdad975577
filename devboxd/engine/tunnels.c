/* Tunnel records: enable_tunnel / remove_tunnel and the TunnelView kept in
 * the devbox record (struct devbox.tunnel, persisted in devbox.json). The
 * listener that serves tunnel URLs is tunnel_proxy.c. */
#define _GNU_SOURCE
#include "tunnels.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

#define ERRLEN 512

static const char *const spec_fields[] = {"auth_mode", "http_keep_alive",
                                          "wake_on_http", NULL};

int tunnel_check_spec(const cJSON *spec, const char *where, char *err,
                      size_t errlen)
{
    const char *mode = NULL;
    int b = 0;
    const char *sep = where[0] != '\0' ? "." : "";

    if (spec == NULL || cJSON_IsNull(spec))
        return 0;
    if (!cJSON_IsObject(spec)) {
        snprintf(err, errlen,
                 "%s must be an object {auth_mode?, http_keep_alive?, "
                 "wake_on_http?}",
                 where[0] != '\0' ? where : "the body");
        return -1;
    }
    if (util_check_fields(spec, where, spec_fields, err, errlen) != 0)
        return -1;
    if (util_opt_string(spec, "auth_mode", &mode, err, errlen) != 0)
        return -1;
    if (mode != NULL && strcmp(mode, "open") != 0 &&
        strcmp(mode, "authenticated") != 0) {
        snprintf(err, errlen,
                 "%s%sauth_mode \"%.64s\" is not valid; use \"open\" or "
                 "\"authenticated\"",
                 where, sep, mode);
        return -1;
    }
    if (util_opt_bool(spec, "http_keep_alive", &b, err, errlen) != 0 ||
        util_opt_bool(spec, "wake_on_http", &b, err, errlen) != 0)
        return -1;
    return 0;
}

/* Random lower-case letters and digits: the key goes into a host name,
 * whose case clients may change. */
static int spec_bool(const cJSON *spec, const char *name, int dflt)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(spec, name);

    return cJSON_IsBool(it) ? cJSON_IsTrue(it) : dflt;
}

static const char *spec_mode(const cJSON *spec)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(spec, "auth_mode");

    return cJSON_IsString(it) ? it->valuestring : "open";
}

cJSON *tunnel_new_view(const cJSON *spec)
{
    cJSON *v = cJSON_CreateObject();
    char key[TUNNEL_KEY_LEN + 1];
    char token[TUNNEL_TOKEN_LEN + 1];
    const char *mode = spec_mode(spec);

    util_random_text(key, TUNNEL_KEY_LEN,
                     "abcdefghijklmnopqrstuvwxyz0123456789");
    cJSON_AddStringToObject(v, "tunnel_key", key);
    cJSON_AddStringToObject(v, "auth_mode", mode);
    if (strcmp(mode, "authenticated") == 0) {
        util_random_text(token, TUNNEL_TOKEN_LEN, "0123456789abcdef");
        cJSON_AddStringToObject(v, "auth_token", token);
    }
    cJSON_AddNumberToObject(v, "create_time_ms", (double)util_now_ms());
    cJSON_AddBoolToObject(v, "http_keep_alive",
                          spec_bool(spec, "http_keep_alive", 1));
    cJSON_AddBoolToObject(v, "wake_on_http",
                          spec_bool(spec, "wake_on_http", 0));
    return v;
}

static int same_spec(const cJSON *view, const cJSON *spec)
{
    return strcmp(spec_mode(view), spec_mode(spec)) == 0 &&
           spec_bool(view, "http_keep_alive", 1) ==
               spec_bool(spec, "http_keep_alive", 1) &&
           spec_bool(view, "wake_on_http", 0) ==
               spec_bool(spec, "wake_on_http", 0);
}

int tunnel_enable(struct engine *eng, struct devbox *box, const cJSON *spec,
                  cJSON **view, char *err, size_t errlen)
{
    int status = 400;

    *view = NULL;
    pthread_mutex_lock(&eng->lock);
    if (box->status == DBX_SHUTDOWN || box->status == DBX_FAILURE)
        snprintf(err, errlen,
                 "devbox %s is %s; a tunnel needs a live devbox (create a new "
                 "one)",
                 box->id, dbx_status_name(box->status));
    else if (box->tunnel != NULL && !same_spec(box->tunnel, spec))
        snprintf(err, errlen,
                 "devbox %s already has a tunnel (auth_mode %s); a devbox "
                 "has one tunnel: call remove_tunnel first to change it",
                 box->id, spec_mode(box->tunnel));
    else
        status = 0;
    /* One tunnel per devbox: asking again for the same one returns it. */
    if (status == 0 && box->tunnel == NULL) {
        box->tunnel = tunnel_new_view(spec);
        engine_log_locked(eng, box, "entrypoint", "info", "tunnel enabled",
                          NULL, 0);
        engine_save_locked(eng, box);
    }
    if (status == 0)
        *view = tunnel_view_out(box->tunnel);
    pthread_mutex_unlock(&eng->lock);
    return status;
}

void tunnel_remove(struct engine *eng, struct devbox *box)
{
    pthread_mutex_lock(&eng->lock);
    if (box->tunnel != NULL) {
        cJSON_Delete(box->tunnel);
        box->tunnel = NULL;
        engine_log_locked(eng, box, "entrypoint", "info", "tunnel removed",
                          NULL, 0);
        engine_save_locked(eng, box);
        /* Relayed connections see the tunnel gone at their next check. */
        pthread_cond_broadcast(&eng->changed);
    }
    pthread_mutex_unlock(&eng->lock);
}

static char *url_template;
/* The same tunnels by path on a plain address ("http://127.0.0.1:P/tunnel/
 * {port}-{tunnel_key}"): what clients without *.localhost name resolution
 * (Node fetch, Python, anything inside a devbox) use. */
static char *path_url_template;
/* The lower-case host that template names (its Host is accepted for path
 * routing besides loopback literals and localhost). */
static char *path_host;

/* ---------------------------------------------------------- PTY tunnels */

struct pty_tunnel {
    char key[TUNNEL_KEY_LEN + 1];
    char token[TUNNEL_TOKEN_LEN + 1];
    char box_id[40];
    int64_t create_time_ms;
    struct pty_tunnel *next; /* newest first */
};

/* Guarded by eng->lock (one engine per process). */
static struct pty_tunnel *pty_tunnels;

/* Lock held: drops the oldest of a devbox's PTY tunnels beyond the cap. */
static void pty_trim_locked(const char *box_id)
{
    struct pty_tunnel **pp = &pty_tunnels;
    int seen = 0;

    while (*pp != NULL) {
        struct pty_tunnel *t = *pp;

        if (strcmp(t->box_id, box_id) == 0 && ++seen > TUNNEL_PTY_MAX) {
            *pp = t->next;
            free(t);
            continue;
        }
        pp = &t->next;
    }
}

const char *tunnel_pty_find_locked(const char *key, char *token)
{
    struct pty_tunnel *t;

    for (t = pty_tunnels; t != NULL; t = t->next) {
        if (strcmp(t->key, key) == 0) {
            memcpy(token, t->token, sizeof(t->token));
            return t->box_id;
        }
    }
    return NULL;
}

void tunnel_pty_clear(void)
{
    while (pty_tunnels != NULL) {
        struct pty_tunnel *t = pty_tunnels;

        pty_tunnels = t->next;
        free(t);
    }
}

int tunnel_pty_create(struct engine *eng, struct devbox *box, cJSON **view,
                      char *err, size_t errlen)
{
    struct pty_tunnel *t = NULL;
    int status = 0;

    *view = NULL;
    pthread_mutex_lock(&eng->lock);
    if (box->status != DBX_RUNNING) {
        snprintf(err, errlen,
                 "devbox %s is %s; a PTY tunnel needs a running devbox%s",
                 box->id, dbx_status_name(box->status),
                 box->status == DBX_SUSPENDED ? " (resume it first)" : "");
        status = 400;
        goto out;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        status = 500;
        goto out;
    }
    util_random_text(t->key, TUNNEL_KEY_LEN,
                     "abcdefghijklmnopqrstuvwxyz0123456789");
    util_random_text(t->token, TUNNEL_TOKEN_LEN, "0123456789abcdef");
    snprintf(t->box_id, sizeof(t->box_id), "%s", box->id);
    t->create_time_ms = util_now_ms();
    t->next = pty_tunnels;
    pty_tunnels = t;
    pty_trim_locked(box->id);
    *view = cJSON_CreateObject();
    cJSON_AddStringToObject(*view, "tunnel_key", t->key);
    cJSON_AddStringToObject(*view, "auth_token", t->token);
    if (url_template != NULL)
        cJSON_AddStringToObject(*view, "url_template", url_template);
    if (path_url_template != NULL)
        cJSON_AddStringToObject(*view, "path_url_template", path_url_template);
out:
    pthread_mutex_unlock(&eng->lock);
    return status;
}

/* ------------------------------------------------- where tunnels live */

/* Written once at start-up, before the listener threads start (with
 * url_template above). */
static char
    *template_domain; /* lower-case DOMAIN of a given template, or NULL */

static int template_domain_of(const char *tmpl, char *domain, size_t n,
                              char *err, size_t errlen)
{
    const char *p = tmpl;
    size_t len;
    const char *colon;

    if (strncmp(p, "http://", 7) == 0)
        p += 7;
    else if (strncmp(p, "https://", 8) == 0)
        p += 8;
    else
        goto bad;
    if (strncmp(p, "{port}-{tunnel_key}.", 20) != 0)
        goto bad;
    p += 20;
    len = strcspn(p, ":");
    if (len == 0 || len >= n || p[len - 1] == '.' || p[0] == '.' ||
        p[0] == '-' ||
        strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01234567"
                  "89.-") != len)
        goto bad;
    colon = p + len;
    if (*colon == ':' &&
        (colon[1] == '\0' || strlen(colon + 1) > 5 ||
         strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
         atoi(colon + 1) < 1 || atoi(colon + 1) > 65535))
        goto bad;
    for (size_t i = 0; i < len; i++)
        domain[i] = (char)tolower((unsigned char)p[i]);
    domain[len] = '\0';
    return 0;
bad:
    snprintf(err, errlen,
             "--tunnel-url-template \"%.80s\" must look like "
             "http://{port}-{tunnel_key}.DOMAIN[:PORT] or https://… (DOMAIN of "
             "letters, "
             "digits, '-' and '.'; no path), at most %d bytes",
             tmpl, TUNNEL_TEMPLATE_MAX);
    return -1;
}

/* path_url_template and path_host from the subdomain template: its
 * scheme, DOMAIN and port, or listen_host:tunnel_port by default. */
static int set_path_template(const char *tmpl, const char *domain,
                             const char *listen_host, int tunnel_port)
{
    char *t = NULL;
    char *h = NULL;
    int rc = -1;

    if (tmpl != NULL) {
        const char *rest = strchr(tmpl, '.'); /* after {port}-{tunnel_key} */
        const char *scheme =
            strncmp(tmpl, "https://", 8) == 0 ? "https" : "http";

        if (asprintf(&t, "%s://%s/tunnel/{port}-{tunnel_key}", scheme,
                     rest + 1) < 0)
            t = NULL;
        h = strdup(domain);
    } else {
        int v6 = strchr(listen_host, ':') != NULL;

        if (asprintf(&t, "http://%s%s%s:%d/tunnel/{port}-{tunnel_key}",
                     v6 ? "[" : "", listen_host, v6 ? "]" : "",
                     tunnel_port) < 0)
            t = NULL;
        h = strdup(listen_host);
    }
    if (t == NULL || h == NULL)
        goto out;
    for (char *p = h; *p != '\0'; p++)
        *p = (char)tolower((unsigned char)*p);
    path_url_template = t;
    path_host = h;
    t = NULL;
    h = NULL;
    rc = 0;
out:
    free(t);
    free(h);
    return rc;
}

int tunnel_set_url_template(const char *tmpl, const char *listen_host,
                            int tunnel_port, char *err, size_t errlen)
{
    char domain[TUNNEL_TEMPLATE_MAX + 1];
    char *t = NULL;
    char *d = NULL;

    if (tmpl != NULL) {
        if (strlen(tmpl) > TUNNEL_TEMPLATE_MAX) {
            snprintf(err, errlen,
                     "--tunnel-url-template is longer than %d bytes",
                     TUNNEL_TEMPLATE_MAX);
            return -1;
        }
        if (template_domain_of(tmpl, domain, sizeof(domain), err, errlen) != 0)
            return -1;
        t = strdup(tmpl);
        d = strdup(domain);
    } else if (asprintf(&t, "http://{port}-{tunnel_key}.localhost:%d",
                        tunnel_port) < 0) {
        t = NULL;
    }
    if (t == NULL || (tmpl != NULL && d == NULL)) {
        free(t);
        free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    tunnel_url_template_clear();
    url_template = t;
    template_domain = d;
    if (set_path_template(tmpl, d, listen_host, tunnel_port) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

const char *tunnel_url_template(void)
{
    return url_template != NULL ? url_template : "";
}

const char *tunnel_template_domain(void)
{
    return template_domain;
}

const char *tunnel_path_url_template(void)
{
    return path_url_template != NULL ? path_url_template : "";
}

const char *tunnel_path_host(void)
{
    return path_host;
}

void tunnel_url_template_clear(void)
{
    free(url_template);
    free(template_domain);
    free(path_url_template);
    free(path_host);
    url_template = NULL;
    template_domain = NULL;
    path_url_template = NULL;
    path_host = NULL;
}

cJSON *tunnel_view_out(const cJSON *tunnel)
{
    cJSON *v = cJSON_Duplicate(tunnel, 1);

    if (v != NULL && url_template != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(v, "url_template");
        cJSON_AddStringToObject(v, "url_template", url_template);
    }
    if (v != NULL && path_url_template != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(v, "path_url_template");
        cJSON_AddStringToObject(v, "path_url_template", path_url_template);
    }
    return v;
}
