/* devboxd record stores (store.c): each kind of account-level record
 * (secrets, MCP configs, storage objects) is a directory of 0600 JSON
 * records, <state>/<kind>/<id>.json, written durably, outside every
 * devbox. */
#ifndef DEVBOXD_STORE_H
#define DEVBOXD_STORE_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Longest record id: "<prefix>_" and letters and digits. */
#define STORE_ID_MAX 40

/* "<state>/<kind>" (malloc'd), or NULL when out of memory. */
char *store_dir(const char *state_dir, const char *kind);
/* 1 when id is "<prefix>_" and 1 or more letters and digits, at most
 * STORE_ID_MAX bytes: safe as a file name. */
int store_id_valid(const char *id, const char *prefix);
/* Durable 0600 record write in dir (created 0700): temp file, fsync,
 * rename, fsync of the directory. 0 or -1 with errno. */
int store_write(const char *dir, const char *file, const char *data,
                size_t len);
/* The record "<dir>/<name>.json" (name already checked), or NULL when it
 * is missing, over max_bytes or unparsable. */
cJSON *store_load(const char *dir, const char *name, size_t max_bytes);
/* Every "<dir>/<x>.json" record with a string "id", newest create_time_ms
 * first (files over max_bytes or unparsable are skipped). */
cJSON *store_load_all(const char *dir, size_t max_bytes);
/* Removes dir/file and fsyncs dir. */
int store_remove(const char *dir, const char *file);
/* Removes the record "<state>/<kind>/<name>.json" (name already checked):
 * 0 or -1 with errno. */
int store_delete(const char *state_dir, const char *kind, const char *name);
/* The end of a store call on rec that returned rc (errno set on failure):
 * 0 with view(rec) in *out, or 500 with err: fmt's words, then errno's. */
int store_result(int rc, cJSON *(*view)(const void *), const cJSON *rec,
                 cJSON **out, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

#endif
