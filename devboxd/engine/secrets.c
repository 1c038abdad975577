/* devboxd account secrets: their durable store, the calls behind the
 * /v1/secrets routes (rest/api_secrets.c),
 * and the `secrets` of a devbox create. Values are never put in a reply,
 * a log line or an error message. */
#define _GNU_SOURCE
#include "secrets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layer_records.h"
#include "store.h"
#include "util.h"

static pthread_mutex_t secrets_lock = PTHREAD_MUTEX_INITIALIZER;

/* ----------------------------------------------------------- records */

int secrets_name_valid(const char *s)
{
    size_t i;

    if (s == NULL || s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];

        if (i >= SECRET_NAME_MAX)
            return 0;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return 1;
}

/* Lock held. The record of a valid name, or NULL. */
static cJSON *load_locked(struct engine *eng, const char *name)
{
    char *dir = store_dir(eng->state_dir, "secrets");
    cJSON *rec = NULL;

    if (!secrets_name_valid(name))
        goto out;
    rec = store_load(dir, name, 4 * SECRET_VALUE_MAX + 4096);
    if (rec != NULL &&
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "value"))) {
        cJSON_Delete(rec);
        rec = NULL;
    }
out:
    free(dir);
    return rec;
}

static int save_locked(struct engine *eng, const cJSON *rec)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(rec, "name");
    char *dir = store_dir(eng->state_dir, "secrets");
    char *text = cJSON_PrintUnformatted(rec);
    char file[SECRET_NAME_MAX + 8];
    int rc = -1;

    if (dir != NULL && text != NULL && cJSON_IsString(name)) {
        snprintf(file, sizeof(file), "%s.json", name->valuestring);
        rc = store_write(dir, file, text, strlen(text));
    }
    if (text != NULL) {
        explicit_bzero(text, strlen(text));
        free(text);
    }
    free(dir);
    return rc;
}

/* Lock held. Every secret, newest first. */
static cJSON *load_all_locked(struct engine *eng)
{
    char *dir = store_dir(eng->state_dir, "secrets");
    cJSON *all = store_load_all(dir, 4 * SECRET_VALUE_MAX + 4096);
    int i;

    for (i = cJSON_GetArraySize(all) - 1; i >= 0; i--) {
        const cJSON *rec = cJSON_GetArrayItem(all, i);

        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "value")) ||
            !secrets_name_valid(util_json_str(rec, "name")))
            cJSON_DeleteItemFromArray(all, i);
    }
    free(dir);
    return all;
}

/* SecretView: everything but the value. */
static cJSON *secret_view(const void *item)
{
    const cJSON *rec = item;
    cJSON *v = cJSON_CreateObject();
    static const char *const keys[] = {"id", "name", "create_time_ms",
                                       "update_time_ms", NULL};
    size_t i;

    for (i = 0; keys[i] != NULL; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(rec, keys[i]);

        if (it != NULL)
            cJSON_AddItemToObject(v, keys[i], cJSON_Duplicate(it, 0));
    }
    return v;
}

static void scrub_delete(cJSON *rec)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, "value");

    if (cJSON_IsString(v))
        explicit_bzero(v->valuestring, strlen(v->valuestring));
    cJSON_Delete(rec);
}

static void scrub_delete_all(cJSON *all)
{
    cJSON *it = NULL;

    cJSON_ArrayForEach(it, all)
    {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "value");

        if (cJSON_IsString(v))
            explicit_bzero(v->valuestring, strlen(v->valuestring));
    }
    cJSON_Delete(all);
}

char *secrets_value(struct engine *eng, const char *name_or_id, char *id_out)
{
    cJSON *rec = NULL;
    cJSON *all = NULL;
    const cJSON *it = NULL;
    char *value = NULL;

    pthread_mutex_lock(&secrets_lock);
    if (strncmp(name_or_id, "sec_", 4) == 0) {
        all = load_all_locked(eng);
        cJSON_ArrayForEach(it, all)
        {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");

            if (cJSON_IsString(id) && strcmp(id->valuestring, name_or_id) == 0)
                rec = cJSON_Duplicate(it, 1);
        }
        scrub_delete_all(all);
    }
    if (rec == NULL)
        rec = load_locked(eng, name_or_id);
    pthread_mutex_unlock(&secrets_lock);
    if (rec == NULL)
        return NULL;
    value = strdup(cJSON_GetObjectItemCaseSensitive(rec, "value")->valuestring);
    if (id_out != NULL)
        snprintf(id_out, 40, "%s", util_json_str(rec, "id"));
    scrub_delete(rec);
    return value;
}

/* ------------------------------------------------------------ calls */

static int check_value(const cJSON *body, const char **value, char *err,
                       size_t errlen)
{
    static const char *const fields[] = {"name", "value", NULL};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "value");

    if (util_check_fields(body, "", fields, err, errlen) != 0)
        return 400;
    if (!cJSON_IsString(v)) {
        snprintf(err, errlen,
                 "'value' is required and must be a string (the secret's "
                 "value)");
        return 400;
    }
    if (strlen(v->valuestring) > SECRET_VALUE_MAX) {
        snprintf(err, errlen,
                 "'value' is %zu bytes; a secret holds at most %d bytes",
                 strlen(v->valuestring), SECRET_VALUE_MAX);
        return 400;
    }
    *value = v->valuestring;
    return 0;
}

int secrets_check_name(const char *name, char *err, size_t errlen)
{
    if (secrets_name_valid(name))
        return 0;
    snprintf(err, errlen,
             "secret name \"%.140s\" is not valid: use 1 to %d letters, digits "
             "and _, not starting with a digit (an environment variable name, "
             "e.g. API_KEY)",
             name, SECRET_NAME_MAX);
    return 400;
}

int secrets_create(struct engine *eng, const cJSON *body, cJSON **view,
                   char *err, size_t errlen)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
    const char *value = NULL;
    cJSON *rec = NULL;
    cJSON *all = NULL;
    char id[40];
    int64_t now = util_now_ms();
    int status;

    *view = NULL;
    if (!cJSON_IsString(name)) {
        snprintf(err, errlen,
                 "'name' is required and must be a string, e.g. \"API_KEY\"");
        return 400;
    }
    status = secrets_check_name(name->valuestring, err, errlen);
    if (status == 0)
        status = check_value(body, &value, err, errlen);
    if (status != 0)
        return status;
    pthread_mutex_lock(&secrets_lock);
    rec = load_locked(eng, name->valuestring);
    if (rec != NULL) {
        snprintf(err, errlen,
                 "a secret named %s already exists; pick another name, or "
                 "update that secret's value instead",
                 name->valuestring);
        status = 409;
        goto out;
    }
    all = load_all_locked(eng);
    if (cJSON_GetArraySize(all) >= SECRETS_MAX) {
        snprintf(err, errlen,
                 "the account already holds %d secrets, the most the local "
                 "engine keeps; delete unused ones first",
                 SECRETS_MAX);
        status = 400;
        goto out;
    }
    util_new_id("sec", id, sizeof(id));
    rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "id", id);
    cJSON_AddStringToObject(rec, "name", name->valuestring);
    cJSON_AddStringToObject(rec, "value", value);
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)now);
    cJSON_AddNumberToObject(rec, "update_time_ms", (double)now);
    status = store_result(save_locked(eng, rec), secret_view, rec, view, err,
                          errlen, "cannot store secret %s under %s",
                          name->valuestring, eng->state_dir);
out:
    pthread_mutex_unlock(&secrets_lock);
    scrub_delete_all(all);
    scrub_delete(rec);
    return status;
}

int secrets_update(struct engine *eng, const char *name, const cJSON *body,
                   cJSON **view, char *err, size_t errlen)
{
    const cJSON *bname = cJSON_GetObjectItemCaseSensitive(body, "name");
    const char *value = NULL;
    cJSON *rec = NULL;
    int status;

    *view = NULL;
    status = secrets_check_name(name, err, errlen);
    if (status == 0)
        status = check_value(body, &value, err, errlen);
    if (status != 0)
        return status;
    if (bname != NULL &&
        !(cJSON_IsString(bname) && strcmp(bname->valuestring, name) == 0)) {
        snprintf(err, errlen,
                 "a secret cannot be renamed: leave 'name' out of the update "
                 "(create a new secret and delete %s instead)",
                 name);
        return 400;
    }
    pthread_mutex_lock(&secrets_lock);
    rec = load_locked(eng, name);
    if (rec == NULL) {
        snprintf(err, errlen, "secret %s not found; create it first", name);
        status = 404;
        goto out;
    }
    cJSON_ReplaceItemInObjectCaseSensitive(rec, "value",
                                           cJSON_CreateString(value));
    cJSON_ReplaceItemInObjectCaseSensitive(
        rec, "update_time_ms", cJSON_CreateNumber((double)util_now_ms()));
    status = store_result(save_locked(eng, rec), secret_view, rec, view, err,
                          errlen, "cannot store secret %s", name);
out:
    pthread_mutex_unlock(&secrets_lock);
    scrub_delete(rec);
    return status;
}

static int not_found(const char *name, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "secret %s not found; list the secrets to see which exist", name);
    return 404;
}

/* The record of secret name with the lock held, or NULL with *status and
 * err (the name is not valid or no secret has it) without the lock. */
static cJSON *lock_record(struct engine *eng, const char *name, int *status,
                          char *err, size_t errlen)
{
    cJSON *rec = NULL;

    *status = secrets_check_name(name, err, errlen);
    if (*status != 0)
        return NULL;
    pthread_mutex_lock(&secrets_lock);
    rec = load_locked(eng, name);
    if (rec == NULL) {
        pthread_mutex_unlock(&secrets_lock);
        *status = not_found(name, err, errlen);
    }
    return rec;
}

int secrets_delete(struct engine *eng, const char *name, cJSON **view,
                   char *err, size_t errlen)
{
    cJSON *rec = NULL;
    int status;

    *view = NULL;
    rec = lock_record(eng, name, &status, err, errlen);
    if (rec == NULL)
        return status;
    status =
        store_result(store_delete(eng->state_dir, "secrets", name), secret_view,
                     rec, view, err, errlen, "cannot delete secret %s", name);
    pthread_mutex_unlock(&secrets_lock);
    scrub_delete(rec);
    if (status == 0)
        engine_forget_ended_secrets(eng);
    return status;
}

int secrets_get(struct engine *eng, const char *name, cJSON **view, char *err,
                size_t errlen)
{
    cJSON *rec = NULL;
    int status;

    *view = NULL;
    rec = lock_record(eng, name, &status, err, errlen);
    if (rec == NULL)
        return status;
    pthread_mutex_unlock(&secrets_lock);
    *view = secret_view(rec);
    scrub_delete(rec);
    return 0;
}

cJSON *secrets_list(struct engine *eng)
{
    cJSON *all = NULL;
    cJSON *views = cJSON_CreateArray();
    const cJSON *it = NULL;

    pthread_mutex_lock(&secrets_lock);
    all = load_all_locked(eng);
    pthread_mutex_unlock(&secrets_lock);
    cJSON_ArrayForEach(it, all)
    {
        cJSON_AddItemToArray(views, secret_view(it));
    }
    scrub_delete_all(all);
    return views;
}

/* ------------------------------------------------------ devbox create */

int secrets_check_spec(const cJSON *body, char *err, size_t errlen)
{
    const cJSON *map = NULL;
    const cJSON *env = NULL;
    const cJSON *it = NULL;

    if (util_opt_string_map(body, "secrets", &map, err, errlen) != 0)
        return -1;
    env = cJSON_GetObjectItemCaseSensitive(body, "environment_variables");
    cJSON_ArrayForEach(it, map)
    {
        if (!secrets_name_valid(it->string)) {
            snprintf(err, errlen,
                     "secrets key \"%.140s\" is not a valid variable name "
                     "(letters, digits and _, not starting with a digit)",
                     it->string);
            return -1;
        }
        if (!secrets_name_valid(it->valuestring)) {
            snprintf(
                err, errlen,
                "secrets.%s names \"%.140s\", which is not a valid secret "
                "name; use the name of an existing secret (list the secrets)",
                it->string, it->valuestring);
            return -1;
        }
        if (cJSON_GetObjectItemCaseSensitive(env, it->string) != NULL) {
            snprintf(err, errlen,
                     "%s is set by both environment_variables and secrets; "
                     "keep one",
                     it->string);
            return -1;
        }
    }
    return 0;
}

int secrets_resolve_create(struct engine *eng, const cJSON *body, cJSON *spec,
                           char *err, size_t errlen)
{
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(body, "secrets");
    const cJSON *it = NULL;
    cJSON *env = NULL;

    if (!cJSON_IsObject(map) || cJSON_GetArraySize(map) == 0)
        return 0;
    env = cJSON_GetObjectItemCaseSensitive(spec, "_secret_env");
    if (env == NULL)
        env = cJSON_AddObjectToObject(spec, "_secret_env");
    cJSON_ArrayForEach(it, map)
    {
        char *value = secrets_value(eng, it->valuestring, NULL);

        if (value == NULL) {
            snprintf(err, errlen,
                     "secrets.%s names the secret %s, which does not exist; "
                     "create the secret first or fix the name",
                     it->string, it->valuestring);
            return 400;
        }
        cJSON_AddStringToObject(env, it->string, value);
        explicit_bzero(value, strlen(value));
        free(value);
    }
    return 0;
}
