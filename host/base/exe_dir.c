/*
 * exe_dir.c - where the running executable is, and what lies beside it
 * (plugins, modules, configuration in a build or relocated install tree).
 */
#define _GNU_SOURCE /* asprintf */
#include "exe_dir.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

char *exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    char *slash = NULL;

    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    slash = strrchr(buf, '/');
    if (slash == NULL)
        return NULL;
    *slash = '\0';
    return strdup(buf);
}

char *exe_dir_beside(const char *const *rel, size_t n)
{
    char *dir = exe_dir();
    char *out = NULL;
    size_t i = 0;

    for (i = 0; dir != NULL && i < n; i++) {
        if (asprintf(&out, "%s%s", dir, rel[i]) < 0)
            out = NULL;
        if (out != NULL && is_dir(out))
            break;
        free(out);
        out = NULL;
    }
    free(dir);
    return out;
}
