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
