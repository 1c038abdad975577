/* devboxd code mounts (see code_mounts.h). */
#define _GNU_SOURCE
#include "code_mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define NOBODY 65534
#define TOKEN_MAX 1024
#define INSTALL_MAX 4096
#define SAFE_ALL "[safe]\n\tdirectory = *\n"
#define FILE_MAX (4ull << 30) /* any one file git writes */

/* ------------------------------------------------------------ checks */

/* GitHub's rules: an owner is letters, digits and single inner hyphens
 * (≤ 39); a repository name letters, digits, '.', '-', '_' (≤ 100), not
 * "." or "..". Nothing else reaches a URL, a path or a shell. */
static int owner_ok(const char *s)
{
    size_t n = strlen(s);
    size_t i;

    if (n == 0 || n > 39 || s[0] == '-' || s[n - 1] == '-')
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-'))
            return 0;
        if (c == '-' && s[i + 1] == '-')
            return 0;
    }
    return 1;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    size_t i;

    if (n == 0 || n > 100 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
        s[0] == '-')
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
            return 0;
    }
    return 1;
}

static int check_one(const cJSON *m, int i, char *err, size_t errlen)
{
    static const char *const fields[] = {"repo_name", "repo_owner", "token",
                                         "install_command", NULL};
    char where[48];
    const char *name = NULL;
    const char *owner = NULL;
    const char *token = NULL;
    const char *install = NULL;

    snprintf(where, sizeof(where), "code_mounts[%d].", i);
    if (!cJSON_IsObject(m)) {
        snprintf(err, errlen,
                 "code_mounts[%d] must be an object: "
                 "{repo_name, repo_owner, token?, install_command?}",
                 i);
        return -1;
    }
    if (util_check_fields(m, where, fields, err, errlen) != 0 ||
        util_opt_string(m, "repo_name", &name, err, errlen) != 0 ||
        util_opt_string(m, "repo_owner", &owner, err, errlen) != 0 ||
        util_opt_string(m, "token", &token, err, errlen) != 0 ||
        util_opt_string(m, "install_command", &install, err, errlen) != 0)
        return -1;
    if (owner == NULL || !owner_ok(owner)) {
        snprintf(err, errlen,
                 "code_mounts[%d].repo_owner must be a GitHub "
                 "user or organization name (letters, digits, inner "
                 "hyphens; at most 39)",
                 i);
        return -1;
    }
    if (name == NULL || !name_ok(name)) {
        snprintf(err, errlen,
                 "code_mounts[%d].repo_name must be a repository "
                 "name (letters, digits, '.', '-', '_'; at most 100; not "
                 "\".\" or \"..\"; without the owner)",
                 i);
        return -1;
    }
    if (token != NULL &&
        (strlen(token) > TOKEN_MAX || strpbrk(token, "\r\n") != NULL)) {
        snprintf(err, errlen,
                 "code_mounts[%d].token must be one line of at "
                 "most %d characters",
                 i, TOKEN_MAX);
        return -1;
    }
    if (install != NULL && strlen(install) > INSTALL_MAX) {
        snprintf(err, errlen,
                 "code_mounts[%d].install_command is over %d "
                 "bytes",
                 i, INSTALL_MAX);
        return -1;
    }
    return 0;
}

int code_mounts_check(const cJSON *body, char *err, size_t errlen)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "code_mounts");
    const cJSON *m = NULL;
    int i = 0;

    if (list == NULL || cJSON_IsNull(list))
        return 0;
    if (!cJSON_IsArray(list)) {
        snprintf(err, errlen,
                 "code_mounts must be a list of {repo_name, "
                 "repo_owner, token?, install_command?}");
        return -1;
    }
    if (cJSON_GetArraySize(list) > CODE_MOUNTS_MAX) {
        snprintf(err, errlen, "code_mounts has %d entries; give at most %d",
                 cJSON_GetArraySize(list), CODE_MOUNTS_MAX);
        return -1;
    }
    cJSON_ArrayForEach(m, list)
    {
        const cJSON *o = NULL;
        int k = 0;

        if (check_one(m, i, err, errlen) != 0)
            return -1;
        cJSON_ArrayForEach(o, list)
        {
            if (k++ < i && strcmp(util_json_str(o, "repo_name"),
                                  util_json_str(m, "repo_name")) == 0) {
                snprintf(err, errlen,
                         "code_mounts[%d] and [%d] both clone "
                         "into ~/%s; mount each repository name once",
                         k - 1, i, util_json_str(m, "repo_name"));
                return -1;
            }
        }
        i++;
    }
    return 0;
}

/* --------------------------------------------------------------- clone */

/* Set once by code_mounts_init, before any clone. */
static const char *clone_base = CODE_MOUNTS_DEFAULT_BASE;
static int clone_timeout_s = CODE_MOUNTS_DEFAULT_TIMEOUT_S;

static const char *base_url(void)
{
    return clone_base;
}

static int timeout_s(void)
{
    return clone_timeout_s;
}

char *code_mounts_url(const cJSON *mount)
{
    const char *base = base_url();
    size_t n = strlen(base);
    char *url = NULL;

    while (n > 0 && base[n - 1] == '/')
        n--;
    if (asprintf(&url, "%.*s/%s/%s", (int)n, base,
                 util_json_str(mount, "repo_owner"),
                 util_json_str(mount, "repo_name")) < 0)
        return NULL;
    return url;
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child: nobody, its own process group, a clean environment. */
static void exec_git(const char *dir, char *const *argv, char *const *envp,
                     int errfd)
{
    struct rlimit fsize = {FILE_MAX, FILE_MAX};
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);

    setpgid(0, 0);
    if (null < 0 || dup2(null, 0) < 0 || dup2(errfd, 1) < 0 ||
        dup2(errfd, 2) < 0 || chdir(dir) != 0 ||
        setrlimit(RLIMIT_FSIZE, &fsize) != 0 || setgroups(0, NULL) != 0 ||
        setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
        _exit(126);
    close_range(3, ~0U, 0);
    execvpe("git", argv, envp);
    _exit(127);
}

struct deadline {
    int64_t at_ms;
    code_mounts_stop_fn stop;
    void *ctx;
};

/* Runs git argv as nobody in dir until the deadline or a stop: 0 when it
 * exited 0, else -1 with its last output line (or why it was ended). */
static int run_git(const char *dir, char *const *argv, char *const *envp,
                   const struct deadline *dl, char *why, size_t whylen)
{
    char out[8192];
    size_t len = 0;
    int pipefd[2];
    int status = 0;
    int timed_out = 0;
    int stopped = 0;
    pid_t pid;

    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return -1;
    pid = fork();
    if (pid == 0)
        exec_git(dir, argv, envp, pipefd[1]);
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        snprintf(why, whylen, "cannot start git: %s", strerror(errno));
        return -1;
    }
    for (;;) {
        struct pollfd p = {pipefd[0], POLLIN, 0};
        int64_t left = dl->at_ms - mono_ms();
        ssize_t n;

        if (dl->stop != NULL && dl->stop(dl->ctx, why, whylen))
            stopped = 1;
        if (left <= 0 || stopped) {
            timed_out = !stopped;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        if (poll(&p, 1, left > 1000 ? 1000 : (int)left) <= 0)
            continue;
        n = read(pipefd[0], out + len, sizeof(out) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len > sizeof(out) / 2) { /* keep the tail */
            memmove(out, out + len - sizeof(out) / 4, sizeof(out) / 4);
            len = sizeof(out) / 4;
        }
    }
    close(pipefd[0]);
    kill(-pid, SIGKILL); /* helpers it left behind */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    out[len] = '\0';
    if (stopped)
        return -1;
    if (timed_out) {
        snprintf(why, whylen, "git ran past %d s (RLMCP_CODE_MOUNT_TIMEOUT_S)",
                 timeout_s());
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        out[--len] = '\0';
    {
        char *last = strrchr(out, '\n');

        snprintf(why, whylen, "%s", last != NULL ? last + 1 : out);
    }
    if (why[0] == '\0')
        snprintf(why, whylen, "git exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status)
                                   : 128 + WTERMSIG(status));
    return -1;
}

/* The token as an HTTP Authorization header value (malloc'd). */
static char *auth_header(const char *token)
{
    char *plain = NULL;
    unsigned char *b64 = NULL;
    char *out = NULL;
    int n;

    if (asprintf(&plain, "x-access-token:%s", token) < 0)
        return NULL;
    n = (int)strlen(plain);
    b64 = malloc((size_t)(4 * ((n + 2) / 3) + 1));
    if (b64 != NULL) {
        EVP_EncodeBlock(b64, (const unsigned char *)plain, n);
        if (asprintf(&out, "Authorization: Basic %s", b64) < 0)
            out = NULL;
    }
    explicit_bzero(plain, strlen(plain));
    free(plain);
    free(b64);
    return out;
}

/* Copies the bundle nobody wrote to out, refusing anything but a file. */
static int take_bundle(const char *from, const char *out, char *err,
                       size_t errlen)
{
    char buf[65536];
    struct stat st;
    int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int fd = -1;
    ssize_t n = 0;
    int rc = -1;

    if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "git wrote no bundle");
        goto out;
    }
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
        goto out;
    }
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if (util_write_all(fd, buf, (size_t)n) != 0)
            break;
    if (n == 0)
        rc = 0;
    else
        snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
out:
    if (in >= 0)
        close(in);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* The clone dirs of this state dir's devboxd: /tmp/devboxd-code-<dev>-<ino>-
 * (nobody must reach them; the state dir may be 0700), so a start removes
 * what a killed devboxd left without touching another devboxd's clones. */
static char clone_prefix[96] = "/tmp/devboxd-code-";

/* Removes the entries of dir owned by owner whose names start with prefix
 * and end with suffix: in /tmp, what another user made there stays. */
static void remove_matching(const char *dir, const char *prefix,
                            const char *suffix, uid_t owner)
{
    struct stat st;
    DIR *d = opendir(dir);
    struct dirent *e = NULL;
    size_t pl = strlen(prefix);
    size_t sl = strlen(suffix);
    char path[4352];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);

        if (nl < pl + sl || strncmp(e->d_name, prefix, pl) != 0 ||
            strcmp(e->d_name + nl - sl, suffix) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && st.st_uid == owner)
            util_rmtree(path);
    }
    closedir(d);
}

void code_mounts_init(const char *state_dir, const char *base, int timeout)
{
    struct stat st;
    char name[96];

    if (base != NULL && base[0] != '\0')
        clone_base = base;
    if (timeout > 0)
        clone_timeout_s = timeout;
    if (stat(state_dir, &st) != 0)
        return;
    snprintf(name, sizeof(name), "devboxd-code-%ju-%ju-", (uintmax_t)st.st_dev,
             (uintmax_t)st.st_ino);
    snprintf(clone_prefix, sizeof(clone_prefix), "/tmp/%s", name);
    remove_matching("/tmp", name, "", NOBODY);
    remove_matching(state_dir, "code-", ".bundle", getuid());
}

int code_mounts_bundle(const cJSON *mount, const char *out,
                       code_mounts_stop_fn stop, void *stop_ctx, char *err,
                       size_t errlen)
{
    char tmpl[sizeof(clone_prefix) + 8];
    char *dir = NULL;
    char *url = code_mounts_url(mount);
    char *header = NULL;
    char *env[12];
    char *owned[4] = {NULL, NULL, NULL, NULL};
    char why[512] = "";
    char *bundle = NULL;
    const char *token = util_json_str(mount, "token");
    struct deadline dl = {mono_ms() + (int64_t)timeout_s() * 1000, stop,
                          stop_ctx};
    size_t n = 0;
    int rc = -1;
    int k;
    char *clone[] = {"git", "clone", "--quiet",  "--bare",
                     "--",  url,     "repo.git", NULL};
    char *pack[] = {"git",    "-C",      "repo.git",       "bundle",
                    "create", "--quiet", "../repo.bundle", "--all",
                    NULL};

    snprintf(tmpl, sizeof(tmpl), "%sXXXXXX", clone_prefix);
    if (url == NULL || (dir = mkdtemp(tmpl)) == NULL ||
        chown(dir, NOBODY, NOBODY) != 0 || chmod(dir, 0700) != 0) {
        snprintf(err, errlen, "code mount: cannot make a clone dir: %s",
                 strerror(errno));
        goto out;
    }
    /* The base is the operator's, maybe a local path owned by another
     * user: git refuses those without safe.directory (global config). */
    if (asprintf(&owned[0], "%s/.gitconfig", dir) < 0 ||
        util_write_atomic(owned[0], SAFE_ALL, strlen(SAFE_ALL), 0644) != 0) {
        snprintf(err, errlen, "code mount: cannot write %s",
                 owned[0] ? owned[0] : dir);
        goto out;
    }
    if (asprintf(&owned[1], "HOME=%s", dir) < 0)
        goto out;
    env[n++] = owned[1];
    env[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    env[n++] = "LANG=C";
    env[n++] = "GIT_CONFIG_NOSYSTEM=1";
    env[n++] = "GIT_TERMINAL_PROMPT=0";
    env[n++] = "GIT_ASKPASS=/bin/false";
    env[n++] = "GIT_ALLOW_PROTOCOL=https:http:git:file";
    if (token != NULL && token[0] != '\0') {
        /* In git's environment (root and nobody can read it), never argv. */
        header = auth_header(token);
        if (header == NULL ||
            asprintf(&owned[2], "GIT_CONFIG_VALUE_0=%s", header) < 0)
            goto out;
        env[n++] = "GIT_CONFIG_COUNT=1";
        env[n++] = "GIT_CONFIG_KEY_0=http.extraHeader";
        env[n++] = owned[2];
    }
    env[n] = NULL;
    if (run_git(dir, clone, env, &dl, why, sizeof(why)) != 0 ||
        run_git(dir, pack, env, &dl, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "code mount %s/%s: cloning %s failed: %s",
                 util_json_str(mount, "repo_owner"),
                 util_json_str(mount, "repo_name"), url, why);
        goto out;
    }
    if (asprintf(&bundle, "%s/repo.bundle", dir) < 0)
        goto out;
    rc = take_bundle(bundle, out, err, errlen);
out:
    if (dir != NULL)
        util_rmtree(dir);
    if (header != NULL)
        explicit_bzero(header, strlen(header));
    if (owned[2] != NULL)
        explicit_bzero(owned[2], strlen(owned[2]));
    for (k = 0; k < 4; k++)
        free(owned[k]);
    free(header);
    free(bundle);
    free(url);
    return rc;
}

/* ------------------------------------------------------------- script */

char *code_mounts_script(const cJSON *mount, const char *bundle,
                         const char *home)
{
    const char *install = util_json_str(mount, "install_command");
    char *url = code_mounts_url(mount);
    char *qu = url != NULL ? util_shell_quote(url) : NULL;
    char *qb = util_shell_quote(bundle);
    char *qi = install != NULL && install[0] != '\0' ? util_shell_quote(install)
                                                     : NULL;
    char *s = NULL;

    /* repo_name is [A-Za-z0-9._-]: safe in a path unquoted. */
    if (qu == NULL || qb == NULL ||
        asprintf(&s,
                 "set -e\n"
                 "dest=%s/%s\n"
                 "if [ ! -e \"$dest\" ]; then\n"
                 "  git clone --quiet %s \"$dest\"\n"
                 "  git -C \"$dest\" remote set-url origin %s\n"
                 "  rm -f %s\n"
                 "%s%s%s"
                 "fi\n",
                 home, util_json_str(mount, "repo_name"), qb, qu, qb,
                 qi != NULL ? "  cd \"$dest\"\n  sh -c " : "",
                 qi != NULL ? qi : "", qi != NULL ? "\n" : "") < 0)
        s = NULL;
    free(url);
    free(qu);
    free(qb);
    free(qi);
    return s;
}

void code_mounts_redact(cJSON *body)
{
    cJSON *m = NULL;

    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(body, "code_mounts"))
    {
        if (cJSON_IsObject(m))
            cJSON_DeleteItemFromObjectCaseSensitive(m, "token");
    }
}
