/* Temporary files of file writes into a devbox: notes under the devbox's
 * record directory, and the clean-up of what an interrupted devboxd left.
 * See file_writes.h and docs/devboxd.md, "Files". */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "file_writes.h"
#include "util.h"

#define TMP_SUFFIX ".devboxd-tmp"

static atomic_uint note_seq;

static char *notes_dir(struct engine *eng, const char *box_id)
{
    char *dir = NULL;

    if (asprintf(&dir, "%s/devboxes/%s/writes", eng->state_dir, box_id) < 0)
        return NULL;
    return dir;
}

char *file_writes_begin(struct engine *eng, const char *box_id,
                        const char *path, const char *tmp)
{
    cJSON *rec = cJSON_CreateObject();
    char *dir = notes_dir(eng, box_id);
    char *note = NULL;
    char *text = NULL;
    int fd = -1;
    int ok = 0;

    if (rec == NULL || dir == NULL || util_mkdirs(dir) != 0)
        goto out;
    if (asprintf(&note, "%s/%ld-%u.json", dir, (long)gettid(),
                 atomic_fetch_add(&note_seq, 1)) < 0) {
        note = NULL;
        goto out;
    }
    cJSON_AddStringToObject(rec, "path", path);
    cJSON_AddStringToObject(rec, "tmp", tmp);
    text = cJSON_PrintUnformatted(rec);
    if (text == NULL)
        goto out;
    /* No fsync: the note must outlive devboxd's process, not a power cut
     * (the temporary file it names is not fsynced before the rename
     * either). */
    fd = open(note, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        goto out;
    ok = util_write_all(fd, text, strlen(text)) == 0;
out:
    if (fd >= 0)
        close(fd);
    if (!ok && note != NULL) {
        unlink(note);
        free(note);
        note = NULL;
    }
    cJSON_Delete(rec);
    free(text);
    free(dir);
    return note;
}

void file_writes_end(char *note)
{
    if (note == NULL)
        return;
    unlink(note);
    free(note);
}

/* 1 when name is one of write_file's temporary names (".X.TID.devboxd-tmp"):
 * a note is devboxd's own file, but only such a file is ever removed. */
static int is_tmp_name(const char *name)
{
    size_t len = strlen(name);
    size_t slen = strlen(TMP_SUFFIX);

    return name[0] == '.' && len > slen + 1 && strchr(name, '/') == NULL &&
           strcmp(name + len - slen, TMP_SUFFIX) == 0;
}

/* Removes one temporary file inside the devbox, as the devbox's user
 * (sandbox_open keeps the resolution inside its root). 1 when removed. */
static int remove_tmp(struct sandbox *sb, const char *path, const char *tmp)
{
    char *parent = strdup(path);
    char *slash = parent != NULL ? strrchr(parent, '/') : NULL;
    const char *dir = slash == NULL ? "." : slash == parent ? "/" : parent;
    uid_t uid = sandbox_host_uid(sb);
    uid_t old_uid;
    gid_t old_gid;
    int dfd = -1;
    int rc = 0;

    if (parent == NULL)
        goto out;
    if (slash != NULL && slash != parent)
        *slash = '\0';
    dfd = sandbox_open(sb, dir, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        goto out;
    old_gid = (gid_t)syscall(SYS_setfsgid, uid);
    old_uid = (uid_t)syscall(SYS_setfsuid, uid);
    rc = unlinkat(dfd, tmp, 0) == 0;
    syscall(SYS_setfsuid, old_uid);
    syscall(SYS_setfsgid, old_gid);
out:
    if (dfd >= 0)
        close(dfd);
    free(parent);
    return rc;
}

int file_writes_clean(struct engine *eng, struct devbox *box,
                      struct sandbox *sb)
{
    char *dir = notes_dir(eng, box->id);
    DIR *d = dir != NULL ? opendir(dir) : NULL;
    struct dirent *de;
    int removed = 0;

    while (d != NULL && (de = readdir(d)) != NULL) {
        char note[4200];
        cJSON *rec = NULL;
        const char *path = NULL;
        const char *tmp = NULL;

        if (de->d_name[0] == '.')
            continue;
        snprintf(note, sizeof(note), "%s/%s", dir, de->d_name);
        rec = util_read_json(note, 64 * 1024);
        path = util_json_str(rec, "path");
        tmp = util_json_str(rec, "tmp");
        if (path != NULL && tmp != NULL && is_tmp_name(tmp))
            removed += remove_tmp(sb, path, tmp);
        cJSON_Delete(rec);
        unlink(note);
    }
    if (d != NULL)
        closedir(d);
    free(dir);
    return removed;
}
