/* Retention of ended devboxes' records: see retention.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "retention.h"
#include "util.h"

/* A number from the environment within [min, max], def when unset. */
static int env_setting(const char *name, double def, double min, double max,
                       double *out, char *err, size_t errlen)
{
    const char *v = getenv(name);
    char *end = NULL;
    double x;

    *out = def;
    if (v == NULL || v[0] == '\0')
        return 0;
    errno = 0;
    x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(x) || x < min ||
        x > max) {
        snprintf(err, errlen,
                 "%s must be a number from %.10g to %.10g, got \"%.40s\"", name,
                 min, max, v);
        return -1;
    }
    *out = x;
    return 0;
}

int retention_init(struct engine *eng, char *err, size_t errlen)
{
    double days = 0;
    double max = 0;

    /* Fractions of a day are allowed (0.5 = 12 h); 0 records keeps none. */
    if (env_setting("RLMCP_RECORD_RETENTION_DAYS", RETENTION_DAYS_DEFAULT,
                    0.00001, 36500, &days, err, errlen) != 0 ||
        env_setting("RLMCP_RECORD_RETENTION_MAX", RETENTION_MAX_DEFAULT, 0,
                    10000000, &max, err, errlen) != 0)
        return -1;
    if (max != floor(max)) {
        snprintf(
            err, errlen,
            "RLMCP_RECORD_RETENTION_MAX must be a whole number of records");
        return -1;
    }
    eng->retain_ms = (int64_t)(days * 86400000.0);
    eng->retain_max = (size_t)max;
    return 0;
}

static int is_ended(const struct devbox *box)
{
    return box->status == DBX_SHUTDOWN || box->status == DBX_FAILURE;
}

/* Nothing holds the devbox: no request (refs), file call or snapshot copy
 * (io_refs), worker (busy), sandbox or execution waiter. */
static int is_idle(const struct devbox *box)
{
    const struct execution *ex;

    if (box->refs > 0 || box->io_refs > 0 || box->busy || box->sb != NULL)
        return 0;
    for (ex = box->execs; ex != NULL; ex = ex->next) {
        if (ex->refs > 0 || ex->status != EXEC_COMPLETED || ex->proc != NULL)
            return 0;
    }
    return 1;
}

/* A stop that could not remove the devbox's files (its disk still
 * mounted) leaves them for the next start's clean-up: kept till then. */
static int has_sandbox_dir(struct engine *eng, const struct devbox *box)
{
    char *dir = engine_sandbox_dir(eng, box->id);
    int found = dir == NULL || access(dir, F_OK) == 0;

    free(dir);
    return found;
}

struct devbox *retention_collect_locked(struct engine *eng, int64_t now)
{
    struct devbox **pp = &eng->boxes;
    struct devbox *gone = NULL;
    size_t ended = 0;

    /* eng->boxes is newest first (by creation): the first retain_max ended
     * ones are kept. */
    while (*pp != NULL) {
        struct devbox *box = *pp;
        int drop = 0;

        if (is_ended(box)) {
            ended++;
            drop = (ended > eng->retain_max ||
                    now - box->end_time_ms > eng->retain_ms) &&
                   now - box->end_time_ms >= RETENTION_GRACE_MS &&
                   is_idle(box) && !has_sandbox_dir(eng, box);
        }
        if (!drop) {
            pp = &box->next;
            continue;
        }
        *pp = box->next;
        box->next = gone;
        gone = box;
    }
    return gone;
}

void retention_remove(struct engine *eng, struct devbox *gone)
{
    while (gone != NULL) {
        struct devbox *box = gone;
        char *dir = engine_box_dir(eng, box->id);

        gone = box->next;
        if (dir != NULL && util_rmtree(dir) != 0 && errno != ENOENT)
            fprintf(stderr,
                    "devboxd: cannot remove the record of devbox %s (%s): %s\n",
                    box->id, dir, strerror(errno));
        free(dir);
        engine_box_free(box);
    }
}
