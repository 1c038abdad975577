/* Merging an overlay upper layer onto a lower one (see layer_merge.h). */
#define _GNU_SOURCE
#include "layer_merge.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util.h"

#define OPAQUE_XATTR "trusted.overlay.opaque"
#define MAX_DEPTH 256

static int is_opaque(const char *path)
{
    char v[4] = "";

    return lgetxattr(path, OPAQUE_XATTR, v, sizeof(v)) == 1 && v[0] == 'y';
}

static int is_whiteout(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

static int fail(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "merging the build's layers: %s %s: %s", what, path,
             strerror(errno));
    return -1;
}

/* Replaces whatever is at dst by src (renamed). */
static int replace(const char *src, const char *dst, char *err, size_t errlen)
{
    struct stat st;

    if (lstat(dst, &st) == 0) {
        if (S_ISDIR(st.st_mode) ? util_rmtree(dst) != 0 : unlink(dst) != 0)
            return fail(err, errlen, "cannot remove", dst);
    }
    if (rename(src, dst) != 0)
        return fail(err, errlen, "cannot move", src);
    return 0;
}

/* The directory src replaces a file or whiteout at dst: it must hide what
 * the base has at that path, as the lower entry did. */
static int replace_opaque(const char *src, const char *dst, char *err,
                          size_t errlen)
{
    if (replace(src, dst, err, errlen) != 0)
        return -1;
    if (lsetxattr(dst, OPAQUE_XATTR, "y", 1, 0) != 0)
        return fail(err, errlen, "cannot mark opaque", dst);
    return 0;
}

/* The upper directory's owner, mode and times on the merged one. */
static int take_meta(const struct stat *st, const char *dst, char *err,
                     size_t errlen)
{
    struct timespec t[2];

    t[0] = st->st_atim;
    t[1] = st->st_mtim;
    if (lchown(dst, st->st_uid, st->st_gid) != 0 ||
        chmod(dst, st->st_mode & 07777) != 0 ||
        utimensat(AT_FDCWD, dst, t, AT_SYMLINK_NOFOLLOW) != 0)
        return fail(err, errlen, "cannot set the owner and mode of", dst);
    return 0;
}

static int merge_dir(const char *upper, const char *lower, int depth, char *err,
                     size_t errlen);

static int merge_entry(const char *src, const char *dst, int depth, char *err,
                       size_t errlen)
{
    struct stat us;
    struct stat ls;
    int have_lower;

    if (lstat(src, &us) != 0)
        return fail(err, errlen, "cannot stat", src);
    have_lower = lstat(dst, &ls) == 0;
    if (!S_ISDIR(us.st_mode) || is_opaque(src) || !have_lower)
        return replace(src, dst, err, errlen); /* whiteouts included */
    if (!S_ISDIR(ls.st_mode) || is_whiteout(&ls))
        return replace_opaque(src, dst, err, errlen);
    if (merge_dir(src, dst, depth + 1, err, errlen) != 0)
        return -1;
    return take_meta(&us, dst, err, errlen);
}

static int merge_dir(const char *upper, const char *lower, int depth, char *err,
                     size_t errlen)
{
    DIR *d = NULL;
    struct dirent *de = NULL;
    int rc = 0;

    if (depth > MAX_DEPTH) {
        snprintf(err, errlen,
                 "merging the build's layers: %s is nested "
                 "deeper than %d directories",
                 upper, MAX_DEPTH);
        return -1;
    }
    d = opendir(upper);
    if (d == NULL)
        return fail(err, errlen, "cannot open", upper);
    while (rc == 0 && (de = readdir(d)) != NULL) {
        char *src = NULL;
        char *dst = NULL;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (asprintf(&src, "%s/%s", upper, de->d_name) < 0)
            src = NULL;
        if (asprintf(&dst, "%s/%s", lower, de->d_name) < 0)
            dst = NULL;
        if (src == NULL || dst == NULL) {
            snprintf(err, errlen, "merging the build's layers: out of memory");
            rc = -1;
        } else {
            rc = merge_entry(src, dst, depth, err, errlen);
        }
        free(src);
        free(dst);
    }
    closedir(d);
    return rc;
}

int layer_merge(const char *upper, const char *lower, char *err, size_t errlen)
{
    struct stat st;

    if (merge_dir(upper, lower, 0, err, errlen) != 0)
        return -1;
    if (lstat(upper, &st) == 0 && take_meta(&st, lower, err, errlen) != 0)
        return -1;
    return util_rmtree(upper) == 0 ? 0
                                   : fail(err, errlen, "cannot remove", upper);
}
