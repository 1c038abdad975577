/*
 * registry.h - the host's table of selected tools, resources and prompts.
 *
 * Built by the loader while plugins run init(), then filtered by the
 * deployment's `tools:` selection (read_only > exclude > allow, aliases) and
 * frozen. After registry_freeze() it is read-only and shared by all threads
 * without locks. Entries are sorted by exposed name.
 */
#ifndef RLMCP_HOST_REGISTRY_H
#define RLMCP_HOST_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "rlmcp/plugin.h"

struct loaded_plugin; /* loader.h */

/* A parameter renamed by a deployment alias: exposed -> original. */
struct param_alias {
    char *exposed;
    char *original;
};

struct tool_entry {
    char *name;          /* exposed name (after aliasing) */
    char *plugin_name;   /* the plugin that registered it */
    char *original_name; /* the name the plugin registered */
    char *title;         /* may be NULL */
    char *description;
    cJSON *input_schema;  /* as exposed (parameter aliases applied) */
    cJSON *output_schema; /* may be NULL */
    cJSON *annotations;   /* may be NULL */
    char *list_json;      /* this tool's tools/list object, serialised */
    bool read_only;       /* annotations.readOnlyHint == true */
    uint32_t flags;       /* RLMCP_TOOL_* */
    uint32_t timeout_ms;  /* effective: def or deployment default */
    rlmcp_tool_fn handler;
    void *user_data;
    void (*user_data_free)(void *user_data);
    struct param_alias *param_aliases; /* may be NULL */
    size_t n_param_aliases;
    pthread_mutex_t serial_lock; /* taken around calls when SERIAL */
    struct loaded_plugin *plugin;
};

struct resource_entry {
    char *uri;          /* NULL for a template */
    char *uri_template; /* NULL for a fixed resource */
    char *name;
    char *title;
    char *description;
    char *mime_type;
    uint32_t flags;
    rlmcp_resource_fn read;
    void *user_data;
    void (*user_data_free)(void *user_data);
    struct loaded_plugin *plugin;
};

struct prompt_entry {
    char *name;
    char *title;
    char *description;
    cJSON *arguments; /* array or NULL */
    rlmcp_prompt_fn get;
    void *user_data;
    void (*user_data_free)(void *user_data);
    struct loaded_plugin *plugin;
};

struct registry;

/* Lookups: NULL when absent. Valid until registry_free. */
const struct tool_entry *registry_find_tool(const struct registry *reg,
                                            const char *name);
size_t registry_tool_count(const struct registry *reg);
const struct tool_entry *registry_tool_at(const struct registry *reg,
                                          size_t i); /* sorted by name */

size_t registry_resource_count(const struct registry *reg);
const struct resource_entry *registry_resource_at(const struct registry *reg,
                                                  size_t i);
size_t registry_prompt_count(const struct registry *reg);
const struct prompt_entry *registry_prompt_at(const struct registry *reg,
                                              size_t i);
const struct prompt_entry *registry_find_prompt(const struct registry *reg,
                                                const char *name);

#endif
