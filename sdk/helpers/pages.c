/*
 * pages.c - helpers for list tools: URL-encoding query values, picking the
 * fields an agent decides on, and turning a Runloop list page into a tool
 * result with a cursor for the next page.
 */
#include <stdlib.h>
#include <string.h>

#include "rlmcp_helpers.h"

char *rlmcp_h_url_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1);
    char *p = out;
    size_t i;

    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                    c == '.' || c == '~';
        if (keep) {
            *p++ = (char)c;
            continue;
        }
        *p++ = '%';
        *p++ = hex[c >> 4];
        *p++ = hex[c & 15];
    }
    *p = '\0';
    return out;
}

int rlmcp_h_add_query(char **path, const char *name, const char *value)
{
    char *enc = NULL;
    char *next = NULL;

    if (*path == NULL)
        return RLMCP_ENOMEM;
    if (value == NULL)
        return RLMCP_OK;
    enc = rlmcp_h_url_encode(value);
    if (enc != NULL)
        next = rlmcp_h_sprintf("%s&%s=%s", *path, name, enc);
    free(enc);
    if (next == NULL)
        return RLMCP_ENOMEM;
    free(*path);
    *path = next;
    return RLMCP_OK;
}

int rlmcp_h_list(const struct rlmcp_h *h, const char *path, const char *key,
                 const char *const *keep, const char *what)
{
    cJSON *page = NULL;
    cJSON *res = NULL;
    int rc;

    if (path == NULL)
        return RLMCP_ENOMEM;
    rc = rlmcp_h_request(h, "GET", path, NULL, NULL, what, &page);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_page_result(h, page, key, keep, what, &res);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(h, res);
    cJSON_Delete(page);
    cJSON_Delete(res);
    return rc;
}

int rlmcp_h_arg_page(const struct rlmcp_h *h, const cJSON *args,
                     long long max_limit, const char **after, long long *limit)
{
    int rc = rlmcp_h_arg_id(h, args, "starting_after", false, after);

    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "limit", false, 1, max_limit, limit);
    return rc;
}

static int filter_arg(const struct rlmcp_h *h, const cJSON *args,
                      const struct rlmcp_h_list_filter *f, const char **out)
{
    if (f->id)
        return rlmcp_h_arg_id(h, args, f->arg, false, out);
    return rlmcp_h_arg_str(h, args, f->arg, false, out);
}

int rlmcp_h_list_args(const struct rlmcp_h *h, const cJSON *args,
                      const char *base,
                      const struct rlmcp_h_list_filter *filters, size_t n,
                      long long max_limit, const char *key,
                      const char *const *keep, const char *what)
{
    const char *after = NULL, *value = NULL;
    long long limit = 20;
    char *path = NULL;
    size_t i;
    int rc = RLMCP_OK;

    /* Every argument is checked before the path is built. */
    for (i = 0; i < n && rc == RLMCP_OK; i++)
        rc = filter_arg(h, args, &filters[i], &value);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_page(h, args, max_limit, &after, &limit);
    if (rc != RLMCP_OK)
        return rc;
    path = rlmcp_h_sprintf("%s?limit=%lld", base, limit);
    for (i = 0; i < n && rc == RLMCP_OK; i++) {
        value = NULL;
        rc = filter_arg(h, args, &filters[i], &value);
        if (rc == RLMCP_OK)
            rc = rlmcp_h_add_query(&path, filters[i].arg, value);
    }
    if (rc == RLMCP_OK)
        rc = rlmcp_h_add_query(&path, "starting_after", after);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_list(h, path, key, keep, what);
    free(path);
    return rc;
}

cJSON *rlmcp_h_pick(const cJSON *obj, const char *const *keys)
{
    cJSON *out = NULL;
    size_t i;

    if (keys == NULL)
        return cJSON_Duplicate(obj, true);
    out = cJSON_CreateObject();
    for (i = 0; out != NULL && keys[i] != NULL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, keys[i]);
        if (v == NULL || cJSON_IsNull(v))
            continue;
        cJSON_AddItemToObject(out, keys[i], cJSON_Duplicate(v, true));
    }
    return out;
}

int rlmcp_h_result_pick(const struct rlmcp_h *h, const cJSON *obj,
                        const char *const *keys, const char *const *set)
{
    cJSON *res = rlmcp_h_pick(obj, keys);
    cJSON *str = NULL;
    size_t i;
    int rc = RLMCP_ENOMEM;

    for (i = 0; res != NULL && set != NULL && set[i] != NULL; i += 2) {
        if (set[i + 1] == NULL)
            continue;
        str = cJSON_CreateString(set[i + 1]);
        if (str == NULL)
            goto out;
        if (cJSON_GetObjectItemCaseSensitive(res, set[i]) != NULL)
            cJSON_ReplaceItemInObjectCaseSensitive(res, set[i], str);
        else
            cJSON_AddItemToObject(res, set[i], str);
    }
    if (res != NULL)
        rc = rlmcp_h_result_json(h, res);
out:
    cJSON_Delete(res);
    return rc;
}

int rlmcp_h_page_result(const struct rlmcp_h *h, const cJSON *page,
                        const char *key, const char *const *keep,
                        const char *what, cJSON **out)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(page, key);
    const cJSON *it = NULL;
    const cJSON *last_id = NULL;
    const cJSON *total = NULL;
    cJSON *res = NULL;
    cJSON *arr = NULL;
    bool more;

    *out = NULL;
    if (!cJSON_IsArray(items))
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "%s: the Runloop API answered without a '%s' "
                            "list",
                            what, key);
    res = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(res, key);
    if (arr == NULL) {
        cJSON_Delete(res);
        return RLMCP_ENOMEM;
    }
    cJSON_ArrayForEach(it, items)
    {
        last_id = cJSON_GetObjectItemCaseSensitive(it, "id");
        cJSON_AddItemToArray(arr, rlmcp_h_pick(it, keep));
    }
    more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(page, "has_more"));
    /* An empty page ends the listing, whatever has_more says. */
    if (cJSON_GetArraySize(items) == 0)
        more = false;
    cJSON_AddBoolToObject(res, "has_more", more);
    if (more && cJSON_IsString(last_id))
        cJSON_AddStringToObject(res, "next_starting_after",
                                last_id->valuestring);
    total = cJSON_GetObjectItemCaseSensitive(page, "total_count");
    if (cJSON_IsNumber(total))
        cJSON_AddNumberToObject(res, "total_count", total->valuedouble);
    *out = res;
    return RLMCP_OK;
}
