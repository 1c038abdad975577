/* devboxd SSH access (create_ssh_key), engine side: the key pair of each
 * devbox and the sshd command the tunnel listener runs inside it per
 * connection. See ssh_keys.h and docs/devboxd.md, "SSH". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"
#include "ssh_keys.h"
#include "tunnels.h"
#include "util.h"

#define SSH_KEYGEN "/usr/bin/ssh-keygen"
#define SSHD_INSIDE "/usr/sbin/sshd"
#define KEY_MAX 8192
#define CHECK_TIMEOUT_MS 30000
#define STR_(x) #x
#define STR(x) STR_(x)

struct ssh_key {
    char box_id[40];
    char key[TUNNEL_KEY_LEN + 1]; /* the SSH route's tunnel key */
    char *priv;                   /* OpenSSH PEM */
    char *pub;                    /* "ssh-ed25519 AAAA... comment" */
    struct ssh_key *next;
};

/* Guarded by eng->lock (one engine per process). */
static struct ssh_key *keys;

static void key_free(struct ssh_key *k)
{
    if (k == NULL)
        return;
    if (k->priv != NULL) {
        explicit_bzero(k->priv, strlen(k->priv));
        free(k->priv);
    }
    free(k->pub);
    free(k);
}

/* Lock held. Drops the records of devboxes that ended (their keys are
 * revoked: the SSH route no longer finds them). */
static void sweep_locked(struct engine *eng)
{
    struct ssh_key **pp = &keys;

    while (*pp != NULL) {
        struct ssh_key *k = *pp;
        struct devbox *b = engine_find_locked(eng, k->box_id);

        if (b == NULL || b->status == DBX_SHUTDOWN ||
            b->status == DBX_FAILURE) {
            *pp = k->next;
            key_free(k);
            continue;
        }
        pp = &k->next;
    }
}

void ssh_keys_forget_locked(const char *box_id)
{
    struct ssh_key **pp = &keys;

    while (*pp != NULL) {
        struct ssh_key *k = *pp;

        if (strcmp(k->box_id, box_id) == 0) {
            *pp = k->next;
            key_free(k); /* explicit_bzero of the private key */
            continue;
        }
        pp = &k->next;
    }
}

const char *ssh_keys_find_locked(const char *key, char *pub, size_t pub_len)
{
    struct ssh_key *k;

    for (k = keys; k != NULL; k = k->next) {
        if (strcmp(k->key, key) == 0) {
            snprintf(pub, pub_len, "%s", k->pub);
            return k->box_id;
        }
    }
    return NULL;
}

void ssh_keys_clear(void)
{
    while (keys != NULL) {
        struct ssh_key *k = keys;

        keys = k->next;
        key_free(k);
    }
}

/* A fresh ed25519 pair from the host's ssh-keygen, in a private temporary
 * directory removed at once. 0, or -1 with err. */
static int keygen(const char *comment, char **priv, char **pub, char *err,
                  size_t errlen)
{
    char dir[] = "/tmp/devboxd-ssh-XXXXXX";
    char path[64];
    char pubpath[80];
    char out[512] = "";
    char *argv[] = {"ssh-keygen",    "-q", "-t", "ed25519", "-N", "", "-C",
                    (char *)comment, "-f", path, NULL};
    posix_spawn_file_actions_t fa;
    int pp[2] = {-1, -1};
    pid_t pid = 0;
    int status = -1;
    int rc = -1;
    size_t n = 0;

    *priv = *pub = NULL;
    if (access(SSH_KEYGEN, X_OK) != 0) {
        snprintf(err, errlen,
                 "%s is missing on the host: install openssh-client "
                 "(scripts/bootstrap does)",
                 SSH_KEYGEN);
        return -1;
    }
    if (mkdtemp(dir) == NULL) {
        snprintf(err, errlen, "cannot make a directory for the key: %s",
                 strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/key", dir);
    snprintf(pubpath, sizeof(pubpath), "%s.pub", path);
    if (pipe2(pp, O_CLOEXEC) != 0 || posix_spawn_file_actions_init(&fa) != 0) {
        snprintf(err, errlen, "cannot run ssh-keygen: %s", strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 2);
    errno = sandbox_spawn(&pid, SSH_KEYGEN, &fa, argv);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[1]);
    pp[1] = -1;
    if (errno != 0) {
        snprintf(err, errlen, "cannot run ssh-keygen: %s", strerror(errno));
        goto out;
    }
    status = sandbox_collect(pid, pp[0], out, sizeof(out));
    if (status != 0) {
        snprintf(err, errlen, "ssh-keygen failed (status %d): %s", status, out);
        goto out;
    }
    *priv = util_read_file(path, KEY_MAX, &n);
    *pub = util_read_file(pubpath, KEY_MAX, &n);
    if (*priv == NULL || *pub == NULL) {
        snprintf(err, errlen, "cannot read the key ssh-keygen made");
        goto out;
    }
    (*pub)[strcspn(*pub, "\r\n")] = '\0';
    rc = 0;
out:
    if (pp[0] >= 0)
        close(pp[0]);
    if (pp[1] >= 0)
        close(pp[1]);
    unlink(path);
    unlink(pubpath);
    rmdir(dir);
    if (rc != 0) {
        free(*priv);
        free(*pub);
        *priv = *pub = NULL;
    }
    return rc;
}

/* Whether the devbox's image has an OpenSSH server: 0, or 400 with what
 * to do, or 500. The caller holds an io ref on box->sb. */
static int check_sshd(struct sandbox *sb, const char *box_id, char *err,
                      size_t errlen)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    int st = -1;
    int rc;

    memset(&req, 0, sizeof(req));
    req.command = "test -x " SSHD_INSIDE;
    req.stdout_fd = -1;
    req.stderr_fd = -1;
    if (sandbox_exec(sb, &req, &p, err, errlen) != 0)
        return 500;
    rc = sandbox_exec_wait(p, CHECK_TIMEOUT_MS, &st);
    sandbox_exec_free(p);
    if (rc != 0) {
        snprintf(err, errlen,
                 "devbox %s did not answer whether it has an SSH server; retry",
                 box_id);
        return 500;
    }
    if (st != 0) {
        snprintf(err, errlen,
                 "devbox %s has no OpenSSH server (%s): use the starter or "
                 "universal "
                 "image, or install openssh-server in its blueprint",
                 box_id, SSHD_INSIDE);
        return 400;
    }
    return 0;
}

/* The url of the SSH route: the path template filled with port 22 and
 * the key. malloc'd. */
static char *route_url(const char *key)
{
    const char *tmpl = tunnel_path_url_template();
    const char *p = strstr(tmpl, "{port}-{tunnel_key}");
    char *url = NULL;

    if (p == NULL)
        return NULL;
    if (asprintf(&url, "%.*s%d-%s/", (int)(p - tmpl), tmpl, SSH_TUNNEL_PORT,
                 key) < 0)
        return NULL;
    return url;
}

/* The devbox's user (launch_parameters.user_parameters.username, valid
 * per sandbox_valid_user: [a-z0-9_-]), who sshd runs as and the only one
 * it lets in; "user" by default. */
static const char *ssh_user_of(const cJSON *spec)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *up = cJSON_GetObjectItemCaseSensitive(lp, "user_parameters");
    const char *name = util_json_str(up, "username");

    return name != NULL && *name != '\0' ? name : SSH_USER;
}

static cJSON *view_of(const char *box_id, const struct ssh_key *k,
                      const char *user)
{
    cJSON *v = cJSON_CreateObject();
    char *url = route_url(k->key);

    cJSON_AddStringToObject(v, "id", box_id);
    cJSON_AddStringToObject(v, "ssh_private_key", k->priv);
    cJSON_AddStringToObject(v, "ssh_user", user);
    cJSON_AddStringToObject(v, "url", url != NULL ? url : "");
    free(url);
    return v;
}

int ssh_keys_create(struct engine *eng, struct devbox *box, cJSON **view,
                    char *err, size_t errlen)
{
    struct ssh_key *k = NULL;
    struct ssh_key *found = NULL;
    struct sandbox *sb = NULL;
    char comment[64];
    char id[sizeof(k->box_id)];
    int status = 0;

    *view = NULL;
    pthread_mutex_lock(&eng->lock);
    /* The id, for the parts below that run without the lock. */
    snprintf(id, sizeof(id), "%s", box->id);
    sweep_locked(eng);
    if (box->status != DBX_RUNNING || box->sb == NULL) {
        snprintf(err, errlen,
                 "devbox %s is %s; an SSH key needs a running devbox%s",
                 box->id, dbx_status_name(box->status),
                 box->status == DBX_SUSPENDED ? " (resume it first)" : "");
        pthread_mutex_unlock(&eng->lock);
        return 400;
    }
    for (found = keys; found != NULL; found = found->next) {
        if (strcmp(found->box_id, id) == 0)
            break;
    }
    if (found != NULL) {
        *view = view_of(id, found, ssh_user_of(box->spec));
        pthread_mutex_unlock(&eng->lock);
        return 0;
    }
    sb = box->sb;
    box->io_refs++; /* keeps sb from being stopped during the check */
    pthread_mutex_unlock(&eng->lock);

    status = check_sshd(sb, id, err, errlen);
    pthread_mutex_lock(&eng->lock);
    box->io_refs--;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    if (status != 0)
        return status;

    k = calloc(1, sizeof(*k));
    if (k == NULL) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    snprintf(comment, sizeof(comment), "%s@devboxd", id);
    if (keygen(comment, &k->priv, &k->pub, err, errlen) != 0) {
        key_free(k);
        return 500;
    }
    util_random_text(k->key, TUNNEL_KEY_LEN,
                     "abcdefghijklmnopqrstuvwxyz0123456789");
    snprintf(k->box_id, sizeof(k->box_id), "%s", id);

    pthread_mutex_lock(&eng->lock);
    /* A concurrent call may have made one meanwhile: the first stays. */
    for (found = keys; found != NULL; found = found->next) {
        if (strcmp(found->box_id, id) == 0)
            break;
    }
    if (found == NULL) {
        k->next = keys;
        keys = k;
        found = k;
        k = NULL;
    }
    *view = view_of(id, found, ssh_user_of(box->spec));
    pthread_mutex_unlock(&eng->lock);
    key_free(k);
    return 0;
}

/* Appends to the sshd_config word list w one double-quoted word, with '"'
 * and '\' escaped as sshd's parser wants. -1 when out of memory. */
static int add_word(char **w, size_t *len, const char *name, const char *value)
{
    size_t need = *len + 4 + strlen(name) + 2 * strlen(value) + 1;
    char *o = realloc(*w, need);
    const char *p = NULL;

    if (o == NULL)
        return -1;
    *w = o;
    o += *len;
    if (*len > 0)
        *o++ = ' ';
    *o++ = '"';
    o = stpcpy(o, name);
    *o++ = '=';
    for (p = value; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            *o++ = '\\';
        *o++ = *p;
    }
    *o++ = '"';
    *o = '\0';
    *len = (size_t)(o - *w);
    return 0;
}

/* "-o 'SetEnv ...' " (shell-quoted) with the devbox's environment_variables
 * and secrets, as its executions get them; "" when it has none. malloc'd,
 * NULL when out of memory. */
static char *setenv_option(const cJSON *spec)
{
    static const char *const maps[] = {"environment_variables", "_secret_env"};
    char *words = NULL;
    char *opt = NULL;
    char *q = NULL;
    char *out = NULL;
    size_t len = 0;
    size_t i;

    for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
        const cJSON *it = NULL;

        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(spec, maps[i]))
        {
            /* One config line: a value with a line break cannot go there. */
            if (!cJSON_IsString(it) || strpbrk(it->valuestring, "\r\n") != NULL)
                continue;
            if (add_word(&words, &len, it->string, it->valuestring) != 0)
                goto out;
        }
    }
    if (words == NULL) {
        out = strdup("");
        goto out;
    }
    if (asprintf(&opt, "SetEnv=%s", words) < 0) {
        opt = NULL;
        goto out;
    }
    q = util_shell_quote(opt);
    if (q != NULL && asprintf(&out, "-o %s ", q) < 0)
        out = NULL;
out:
    if (words != NULL) {
        explicit_bzero(words, strlen(words));
        free(words);
    }
    if (opt != NULL) {
        explicit_bzero(opt, strlen(opt));
        free(opt);
    }
    if (q != NULL) {
        explicit_bzero(q, strlen(q));
        free(q);
    }
    return out;
}

char *ssh_keys_sshd_command(const char *pub, const cJSON *spec)
{
    char *q = util_shell_quote(pub);
    char *env = setenv_option(spec);
    const char *user = ssh_user_of(spec);
    /* As root, sshd separates privileges: it wants its empty, root-owned
     * /run/sshd (the devbox's tmpfs has none). */
    const char *privsep = strcmp(user, "root") == 0
                              ? "mkdir -p -m 0755 /run/sshd || exit 1; "
                              : "";
    char *cmd = NULL;
    int n = -1;

    if (q == NULL || env == NULL)
        goto out;
    /* /run is the devbox's tmpfs: nothing here outlives the boot. The host
     * key is made once per boot (a temporary name, then a rename, so that
     * two first connections do not race). The socket is stdout; sshd -i
     * reads stdin, so stdin becomes the socket too. sftp (scp) is sshd's
     * own, internal-sftp. */
    n = asprintf(
        &cmd,
        "%sd=/run/devbox/ssh; umask 077; mkdir -p \"$d\" || exit 1; "
        "if [ ! -s \"$d/host_key\" ]; then "
        "ssh-keygen -q -t ed25519 -N '' -C devbox -f \"$d/hk.$$\" </dev/null "
        ">/dev/null 2>&1 "
        "&& mv -f \"$d/hk.$$\" \"$d/host_key\" || exit 1; rm -f "
        "\"$d/hk.$$.pub\"; fi; "
        "printf '%%s\\n' %s > \"$d/authorized_keys.$$\" && "
        "mv -f \"$d/authorized_keys.$$\" \"$d/authorized_keys\" || exit 1; "
        "exec " SSHD_INSIDE " -i -e -f /dev/null -h \"$d/host_key\" "
        "-o AuthorizedKeysFile=\"$d/authorized_keys\" -o "
        "AuthenticationMethods=publickey "
        "-o PasswordAuthentication=no -o KbdInteractiveAuthentication=no "
        "-o UsePAM=no -o PidFile=none -o LogLevel=ERROR -o AllowUsers=%s"
        " -o LoginGraceTime=" STR(
            SSH_LOGIN_GRACE_S) " -o PrintMotd=no -o 'Subsystem=sftp "
                               "internal-sftp' %s0<&1 2>/dev/null",
        privsep, q, user, env);
out:
    free(q);
    if (env != NULL) {
        explicit_bzero(env, strlen(env));
        free(env);
    }
    return n < 0 ? NULL : cmd;
}
