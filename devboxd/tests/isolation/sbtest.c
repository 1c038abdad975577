#define _GNU_SOURCE
#include "sbtest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sbt_image(void)
{
    static char path[4096];
    char *tool = NULL;
    char *argv[3] = {NULL, "starter", NULL};
    posix_spawn_file_actions_t fa;
    int p[2] = {-1, -1};
    pid_t pid;
    int rc;

    if (path[0] != '\0')
        return path;
    tool = sandbox_helper_path("devboxd-image");
    if (tool == NULL || pipe2(p, O_CLOEXEC) != 0) {
        free(tool);
        return NULL;
    }
    argv[0] = tool;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    rc = sandbox_spawn(&pid, tool, &fa, argv);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc == 0)
        rc = sandbox_collect(pid, p[0], path, sizeof(path));
    close(p[0]);
    free(tool);
    if (rc != 0 || path[0] != '/') {
        fprintf(stderr, "devboxd-image starter failed (%d): %s\n", rc, path);
        path[0] = '\0';
        return NULL;
    }
    return path;
}

int sbt_setup(struct sbt_env *e)
{
    struct sb_runtime rt;
    char err[512] = "";
    int rc;

    snprintf(e->state, sizeof(e->state), "/tmp/sbtest-XXXXXX");
    if (mkdtemp(e->state) == NULL)
        return -errno;
    memset(&rt, 0, sizeof(rt));
    rt.state_dir = e->state;
    rt.cgroup_name = "devboxd-test";
    /* devboxd takes it from its settings; the suite from its environment. */
    rt.claims_dir = getenv("RLMCP_UID_CLAIMS_DIR");
    rc = sandbox_init(&rt, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "sandbox_init: %s\n", err);
    return rc;
}

void sbt_teardown(struct sbt_env *e)
{
    char cmd[512];

    sandbox_shutdown_runtime();
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", e->state);
    if (e->state[0] != '\0' && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", e->state);
}

char *sbt_devbox_dir(struct sbt_env *e, const char *id)
{
    char *dir = NULL;

    if (asprintf(&dir, "%s/%s", e->state, id) < 0)
        return NULL;
    return dir;
}

struct sandbox *sbt_start(struct sbt_env *e, const char *id,
                          const struct sb_limits *lim, enum sb_network net)
{
    struct sb_spec spec;
    struct sandbox *sb = NULL;
    char err[512] = "";
    char *dir = sbt_devbox_dir(e, id);
    static const char *const env[] = {"RLMCP_TEST=1", NULL};

    memset(&spec, 0, sizeof(spec));
    spec.id = id;
    spec.dir = dir;
    spec.image = sbt_image();
    spec.net = net;
    spec.env = env;
    if (lim != NULL)
        spec.limits = *lim;
    if (sandbox_start(&spec, &sb, err, sizeof(err)) != 0)
        fprintf(stderr, "sandbox_start(%s): %s\n", id, err);
    free(dir);
    return sb;
}

void sbt_destroy(struct sbt_env *e, struct sandbox *sb, const char *id)
{
    char err[512] = "";
    char *dir = sbt_devbox_dir(e, id);

    sandbox_release(sb);
    if (dir != NULL && sandbox_destroy_dir(dir, err, sizeof(err)) != 0)
        fprintf(stderr, "sandbox_destroy_dir: %s\n", err);
    free(dir);
}

static char *slurp(int fd)
{
    struct stat st;
    char *buf = NULL;
    ssize_t n;

    if (fstat(fd, &st) != 0)
        return NULL;
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL)
        return NULL;
    n = pread(fd, buf, (size_t)st.st_size, 0);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static int run(struct sandbox *sb, const char *shell, const char *cmd,
               char **out, int timeout_ms, bool quiet)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char err[512] = "";
    char path[] = "/tmp/sbtest-out-XXXXXX";
    int fd;
    int status = -1;
    int rc;

    fd = mkstemp(path);
    if (fd < 0)
        return -1000 - errno;
    unlink(path);
    memset(&req, 0, sizeof(req));
    req.command = cmd;
    req.shell_name = shell;
    req.stdout_fd = fd;
    req.stderr_fd = quiet ? -1 : fd;
    rc = sandbox_exec(sb, &req, &p, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "sandbox_exec: %s\n", err);
        close(fd);
        return -1000 + rc;
    }
    rc = sandbox_exec_wait(p, timeout_ms, &status);
    if (rc == -ETIMEDOUT) {
        sandbox_exec_kill(p, 9);
        sandbox_exec_wait(p, 10000, &status);
    }
    sandbox_exec_free(p);
    if (out != NULL)
        *out = slurp(fd);
    close(fd);
    return rc != 0 ? -1000 + rc : status;
}

int sbt_run(struct sandbox *sb, const char *shell, const char *cmd, char **out,
            int timeout_ms)
{
    return run(sb, shell, cmd, out, timeout_ms, false);
}

int sbt_run_quiet(struct sandbox *sb, const char *cmd, int timeout_ms)
{
    return run(sb, NULL, cmd, NULL, timeout_ms, true);
}
