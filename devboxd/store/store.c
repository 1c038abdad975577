/* devboxd record stores: durable JSON records and data files in one
 * directory of the state dir per kind (secrets, MCP configs, objects). See
 * store.h. */
#define _GNU_SOURCE
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

char *store_dir(const char *state_dir, const char *kind)
{
    char *dir = NULL;

    if (asprintf(&dir, "%s/%s", state_dir, kind) < 0)
        return NULL;
    return dir;
}

int store_id_valid(const char *id, const char *prefix)
{
    size_t plen = strlen(prefix);
    size_t i;

    if (id == NULL || strncmp(id, prefix, plen) != 0 || id[plen] != '_' ||
        strlen(id) > STORE_ID_MAX)
        return 0;
    for (i = plen + 1; id[i] != '\0'; i++) {
        char c = id[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            return 0;
    }
    return i > plen + 1;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

int store_write(const char *dir, const char *file, const char *data, size_t len)
{
    char path[4200];

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (util_mkdirs(dir) != 0)
        return -1;
    return util_write_atomic(path, data, len, 0600);
}

int store_remove(const char *dir, const char *file)
{
    char path[4200];

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (unlink(path) != 0 && errno != ENOENT)
        return -1;
    return fsync_dir(dir);
}

int store_delete(const char *state_dir, const char *kind, const char *name)
{
    char *dir = NULL;
    char file[NAME_MAX + 1];
    int saved;
    int rc;

    if ((size_t)snprintf(file, sizeof(file), "%s.json", name) >= sizeof(file)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    dir = store_dir(state_dir, kind);
    if (dir == NULL) {
        errno = ENOMEM;
        return -1;
    }
    rc = store_remove(dir, file);
    saved = errno;
    free(dir);
    errno = saved;
    return rc;
}

static int by_create_time_desc(const void *a, const void *b)
{
    const cJSON *ra = *(const cJSON *const *)a;
    const cJSON *rb = *(const cJSON *const *)b;
    double ta = cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(ra, "create_time_ms"));
    double tb = cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rb, "create_time_ms"));

    if (ta != tb)
        return ta < tb ? 1 : -1;
    return strcmp(util_json_str(ra, "id"), util_json_str(rb, "id"));
}

cJSON *store_load(const char *dir, const char *name, size_t max_bytes)
{
    char path[4200];

    if (dir == NULL)
        return NULL;
    snprintf(path, sizeof(path), "%s/%s.json", dir, name);
    return util_read_json(path, max_bytes);
}

/* Appends the record in dir/file when it parses with a string id. */
static int load_one(const char *dir, const char *file, size_t max_bytes,
                    cJSON ***recs, size_t *n, size_t *cap)
{
    char path[4200];
    cJSON *rec = NULL;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    rec = util_read_json(path, max_bytes);
    if (rec == NULL ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "id"))) {
        cJSON_Delete(rec);
        return 0;
    }
    if (*n == *cap) {
        size_t grown_cap = *cap ? *cap * 2 : 16;
        cJSON **grown = realloc(*recs, grown_cap * sizeof(**recs));

        if (grown == NULL) {
            cJSON_Delete(rec);
            return -1;
        }
        *recs = grown;
        *cap = grown_cap;
    }
    (*recs)[(*n)++] = rec;
    return 0;
}

cJSON *store_load_all(const char *dir, size_t max_bytes)
{
    cJSON *all = cJSON_CreateArray();
    DIR *d = dir != NULL ? opendir(dir) : NULL;
    struct dirent *e = NULL;
    cJSON **recs = NULL;
    size_t n = 0;
    size_t cap = 0;
    size_t i;

    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);

        /* Temp files start with '.'. */
        if (e->d_name[0] == '.' || len < 6 ||
            strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (load_one(dir, e->d_name, max_bytes, &recs, &n, &cap) != 0)
            break;
    }
    if (d != NULL)
        closedir(d);
    if (n > 0)
        qsort(recs, n, sizeof(*recs), by_create_time_desc);
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(all, recs[i]);
    free(recs);
    return all;
}

int store_result(int rc, cJSON *(*view)(const void *), const cJSON *rec,
                 cJSON **out, char *err, size_t errlen, const char *fmt, ...)
{
    int saved = errno;
    size_t len;
    va_list ap;

    if (rc == 0) {
        *out = view(rec);
        return 0;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    len = strnlen(err, errlen);
    snprintf(err + len, errlen - len, ": %s", strerror(saved));
    return 500;
}
