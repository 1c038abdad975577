/*
 * toolsets.c - dynamic toolset discovery (toolsets.h).
 */
#define _GNU_SOURCE /* FNM_CASEFOLD */
#include "toolsets.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "registry.h"
#include "strbuf.h"

void toolsets_free(struct toolsets *ts)
{
    size_t i = 0;

    if (ts == NULL)
        return;
    for (i = 0; i < ts->n; i++) {
        free(ts->sets[i].name);
        free(ts->sets[i].description);
    }
    free(ts->sets);
    for (i = 0; i < ts->n_full_list_clients; i++)
        free(ts->full_list_clients[i]);
    free(ts->full_list_clients);
    free(ts->list_json);
    free(ts->enable_json);
    free(ts);
}

/* "files (read_file, write_file): Read and write files." for one toolset. */
static int describe_toolset(struct strbuf *b, const struct toolset *set,
                            size_t idx, struct tool_entry *const *chosen,
                            size_t n)
{
    bool first = true;
    size_t i = 0;
    int rc = 0;

    rc |= strbuf_add(b, " ", 1);
    rc |= strbuf_add(b, set->name, strlen(set->name));
    rc |= strbuf_add(b, " (", 2);
    for (i = 0; i < n; i++) {
        if (chosen[i]->toolset != idx + 1)
            continue;
        if (!first)
            rc |= strbuf_add(b, ", ", 2);
        rc |= strbuf_add(b, chosen[i]->name, strlen(chosen[i]->name));
        first = false;
    }
    rc |= strbuf_add(b, "): ", 3);
    rc |= strbuf_add(b, set->description, strlen(set->description));
    return rc == 0 ? 0 : -1;
}

/* {"type":"array","items":{"type":"string"}} */
static cJSON *string_array_schema(void)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "type", "array");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "items"), "type",
                            "string");
    return o;
}

static void add_typed(cJSON *props, const char *name, const char *type)
{
    cJSON_AddStringToObject(cJSON_AddObjectToObject(props, name), "type", type);
}

/* The results' outputSchemas: no required member, so an error's
 * {"error": ...} structuredContent fits them too. */
static cJSON *list_output_schema(void)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *props = NULL;
    cJSON *arr = NULL;
    cJSON *item = NULL;

    cJSON_AddStringToObject(o, "type", "object");
    props = cJSON_AddObjectToObject(o, "properties");
    arr = cJSON_AddObjectToObject(props, "toolsets");
    cJSON_AddStringToObject(arr, "type", "array");
    item = cJSON_AddObjectToObject(arr, "items");
    cJSON_AddStringToObject(item, "type", "object");
    item = cJSON_AddObjectToObject(item, "properties");
    add_typed(item, "name", "string");
    add_typed(item, "description", "string");
    add_typed(item, "enabled", "boolean");
    cJSON_AddItemToObject(item, "tools", string_array_schema());
    add_typed(props, "all_tools_listed", "boolean");
    return o;
}

static cJSON *enable_output_schema(void)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *props = NULL;

    cJSON_AddStringToObject(o, "type", "object");
    props = cJSON_AddObjectToObject(o, "properties");
    add_typed(props, "toolset", "string");
    add_typed(props, "enabled", "boolean");
    add_typed(props, "list_changed", "boolean");
    cJSON_AddItemToObject(props, "tools", string_array_schema());
    add_typed(props, "note", "string");
    return o;
}

static char *meta_list_json(void)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *schema = NULL;
    cJSON *ann = NULL;
    char *s = NULL;

    cJSON_AddStringToObject(o, "name", TOOLSETS_LIST_TOOL);
    cJSON_AddStringToObject(
        o, "description",
        "List the toolsets, whether each is enabled in this session, and "
        "their tools.");
    schema = cJSON_AddObjectToObject(o, "inputSchema");
    cJSON_AddStringToObject(schema, "type", "object");
    cJSON_AddObjectToObject(schema, "properties");
    cJSON_AddItemToObject(o, "outputSchema", list_output_schema());
    ann = cJSON_AddObjectToObject(o, "annotations");
    cJSON_AddBoolToObject(ann, "readOnlyHint", true);
    cJSON_AddBoolToObject(ann, "openWorldHint", false);
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static char *meta_enable_json(const struct toolsets *ts,
                              struct tool_entry *const *chosen, size_t n)
{
    struct strbuf b = {0};
    cJSON *o = cJSON_CreateObject();
    cJSON *schema = NULL;
    cJSON *props = NULL;
    cJSON *prop = NULL;
    cJSON *names = NULL;
    cJSON *ann = NULL;
    char *s = NULL;
    const char *intro =
        "Add a toolset's tools to this session's tool list (one call; the "
        "list is re-sent). Toolsets:";
    size_t i = 0;
    int rc = strbuf_add(&b, intro, strlen(intro));

    for (i = 0; rc == 0 && i < ts->n; i++)
        rc = describe_toolset(&b, &ts->sets[i], i, chosen, n);
    if (rc != 0 || o == NULL)
        goto out;
    cJSON_AddStringToObject(o, "name", TOOLSETS_ENABLE_TOOL);
    cJSON_AddStringToObject(o, "description", strbuf_str(&b));
    schema = cJSON_AddObjectToObject(o, "inputSchema");
    cJSON_AddStringToObject(schema, "type", "object");
    props = cJSON_AddObjectToObject(schema, "properties");
    prop = cJSON_AddObjectToObject(props, "toolset");
    cJSON_AddStringToObject(prop, "type", "string");
    names = cJSON_AddArrayToObject(prop, "enum");
    for (i = 0; i < ts->n; i++)
        cJSON_AddItemToArray(names, cJSON_CreateString(ts->sets[i].name));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(schema, "required"),
                         cJSON_CreateString("toolset"));
    cJSON_AddItemToObject(o, "outputSchema", enable_output_schema());
    ann = cJSON_AddObjectToObject(o, "annotations");
    cJSON_AddBoolToObject(ann, "readOnlyHint", false);
    cJSON_AddBoolToObject(ann, "destructiveHint", false);
    cJSON_AddBoolToObject(ann, "idempotentHint", true);
    cJSON_AddBoolToObject(ann, "openWorldHint", false);
    s = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    free(b.p);
    return s;
}

struct toolsets *toolsets_build(const struct host_tools_config *sel,
                                struct tool_entry *const *chosen, size_t n)
{
    struct toolsets *ts = calloc(1, sizeof(*ts));
    size_t i = 0;

    if (ts == NULL)
        return NULL;
    ts->sets = calloc(sel->n_toolsets, sizeof(*ts->sets));
    ts->full_list_clients =
        calloc(sel->n_full_list_clients + 1, sizeof(*ts->full_list_clients));
    if (ts->sets == NULL || ts->full_list_clients == NULL)
        goto fail;
    for (i = 0; i < sel->n_toolsets; i++) {
        ts->sets[i].name = strdup(sel->toolsets[i].name);
        ts->sets[i].description = strdup(sel->toolsets[i].description);
        ts->n++;
        if (ts->sets[i].name == NULL || ts->sets[i].description == NULL)
            goto fail;
    }
    for (i = 0; i < n; i++) {
        if (chosen[i]->toolset != 0)
            ts->sets[chosen[i]->toolset - 1].n_tools++;
    }
    for (i = 0; i < sel->n_full_list_clients; i++) {
        ts->full_list_clients[i] = strdup(sel->full_list_clients[i]);
        ts->n_full_list_clients++;
        if (ts->full_list_clients[i] == NULL)
            goto fail;
    }
    ts->list_json = meta_list_json();
    ts->enable_json = meta_enable_json(ts, chosen, n);
    if (ts->list_json == NULL || ts->enable_json == NULL)
        goto fail;
    return ts;
fail:
    toolsets_free(ts);
    return NULL;
}

int toolsets_find(const struct toolsets *ts, const char *name)
{
    size_t i = 0;

    for (i = 0; ts != NULL && i < ts->n; i++) {
        if (strcmp(ts->sets[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

bool toolsets_full_list_client(const struct toolsets *ts,
                               const char *client_name)
{
    size_t i = 0;

    if (ts == NULL)
        return true;
    for (i = 0; client_name != NULL && i < ts->n_full_list_clients; i++) {
        if (fnmatch(ts->full_list_clients[i], client_name, FNM_CASEFOLD) == 0)
            return true;
    }
    return false;
}

uint64_t toolsets_mask(const struct toolsets *ts, char *const *names, size_t n)
{
    uint64_t mask = 0;
    size_t i = 0;

    for (i = 0; i < n; i++) {
        int at = toolsets_find(ts, names[i]);
        if (at >= 0)
            mask |= UINT64_C(1) << at;
    }
    return mask;
}

bool toolsets_is_meta(const struct toolsets *ts, const char *name)
{
    return ts != NULL && (strcmp(name, TOOLSETS_LIST_TOOL) == 0 ||
                          strcmp(name, TOOLSETS_ENABLE_TOOL) == 0);
}

static bool listed(const struct tool_entry *t, uint64_t mask)
{
    return t->toolset == 0 || (mask & (UINT64_C(1) << (t->toolset - 1))) != 0;
}

const char **toolsets_view(const struct registry *reg, uint64_t mask,
                           size_t *count)
{
    const struct toolsets *ts = registry_toolsets(reg);
    size_t n = registry_tool_count(reg);
    const char *meta_name[2] = {TOOLSETS_ENABLE_TOOL, TOOLSETS_LIST_TOOL};
    const char *meta_json[2] = {ts->enable_json, ts->list_json};
    const char **v = calloc(n + 3, sizeof(*v));
    size_t m = 0; /* meta tools placed so far (they are in name order) */
    size_t i = 0;

    *count = 0;
    if (v == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        const struct tool_entry *t = registry_tool_at(reg, i);
        while (m < 2 && strcmp(meta_name[m], t->name) < 0)
            v[(*count)++] = meta_json[m++];
        if (listed(t, mask))
            v[(*count)++] = t->list_json;
    }
    while (m < 2)
        v[(*count)++] = meta_json[m++];
    return v;
}

cJSON *toolsets_tool_names(const struct registry *reg, size_t idx)
{
    cJSON *names = cJSON_CreateArray();
    size_t n = registry_tool_count(reg);
    size_t i = 0;

    for (i = 0; names != NULL && i < n; i++) {
        const struct tool_entry *t = registry_tool_at(reg, i);
        if (t->toolset == idx + 1)
            cJSON_AddItemToArray(names, cJSON_CreateString(t->name));
    }
    return names;
}

cJSON *toolsets_list_result(const struct registry *reg, uint64_t mask,
                            bool full)
{
    const struct toolsets *ts = registry_toolsets(reg);
    cJSON *res = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(res, "toolsets");
    size_t i = 0;

    for (i = 0; arr != NULL && i < ts->n; i++) {
        cJSON *o = cJSON_CreateObject();
        bool on = full || (mask & (UINT64_C(1) << i)) != 0;

        cJSON_AddStringToObject(o, "name", ts->sets[i].name);
        cJSON_AddStringToObject(o, "description", ts->sets[i].description);
        cJSON_AddBoolToObject(o, "enabled", on);
        cJSON_AddItemToObject(o, "tools", toolsets_tool_names(reg, i));
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddBoolToObject(res, "all_tools_listed", full);
    return res;
}
