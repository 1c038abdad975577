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
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "rlmcp/plugin.h"

struct loaded_plugin; /* loader.h */

/*
 * The lock of a RLMCP_TOOL_SERIAL tool, shared by every copy of its entry
 * (a reload copies a kept plugin's entries into the new registry), so calls
 * on the old and the new deployment still take turns.
 */
struct tool_serial {
    atomic_int refs;
    pthread_mutex_t lock;
};

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
    cJSON *output_schema; /* may be NULL; results are checked against it */
    cJSON *listed_output_schema; /* as listed: also admits errors (schema.h) */
    cJSON *annotations;          /* may be NULL */
    char *list_json;             /* this tool's tools/list object, serialised */
    bool read_only;              /* annotations.readOnlyHint == true */
    bool param_headers;          /* a property declares x-mcp-header */
    bool selected;               /* exposed by this deployment */
    unsigned toolset;            /* 1 + its index in tools.toolsets; 0: none */
    uint32_t flags;              /* RLMCP_TOOL_* */
    uint32_t timeout_ms; /* effective: tools.timeout_ms, def, host default */
    char *timeout_arg;   /* the argument (seconds) that overrides it; NULL */
    rlmcp_tool_fn handler;
    void *user_data;
    void (*user_data_free)(void *user_data);
    bool has_task;                     /* ABI 1.4: it may run as an MCP task */
    struct rlmcp_task_def task;        /* its ops when has_task */
    struct param_alias *param_aliases; /* may be NULL */
    size_t n_param_aliases;
    struct tool_serial *serial; /* taken around calls when SERIAL */
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

/* Any registered tool (selected or not) by its registered name w[0..n). */
const struct tool_entry *registry_find_original(const struct registry *reg,
                                                const char *w, size_t n);

size_t registry_resource_count(const struct registry *reg);
const struct resource_entry *registry_resource_at(const struct registry *reg,
                                                  size_t i);
size_t registry_prompt_count(const struct registry *reg);
const struct prompt_entry *registry_prompt_at(const struct registry *reg,
                                              size_t i);
const struct prompt_entry *registry_find_prompt(const struct registry *reg,
                                                const char *name);

/* ---- Building (main thread only, before the dispatcher starts) -------- */

struct host_tools_config; /* config.h */

/* Sizes of the 1.0 definitions: the smallest struct_size accepted
 * (sdk/ABI.md; tests/abi checks them against every minor's header). */
#define REGISTRY_TOOL_DEF_SIZE_1_0                                             \
    (offsetof(struct rlmcp_tool_def, user_data_free) + sizeof(void (*)(void *)))
#define REGISTRY_RESOURCE_DEF_SIZE_1_0                                         \
    (offsetof(struct rlmcp_resource_def, user_data_free) +                     \
     sizeof(void (*)(void *)))
#define REGISTRY_PROMPT_DEF_SIZE_1_0                                           \
    (offsetof(struct rlmcp_prompt_def, user_data_free) +                       \
     sizeof(void (*)(void *)))

struct registry *registry_new(void);

/*
 * Register a plugin's definitions (the register_* services). The def is
 * read up to min(def->struct_size, ours); a larger def with a non-zero
 * unknown tail is RLMCP_EVERSION. Validation failures return RLMCP_EINVAL
 * (or RLMCP_EEXIST for a taken name) with the reason in err; after
 * registry_select() every call is RLMCP_ESTATE.
 */
int registry_add_tool(struct registry *reg, struct loaded_plugin *plugin,
                      const char *plugin_name, const struct rlmcp_tool_def *def,
                      char *err, size_t errlen);
int registry_add_resource(struct registry *reg, struct loaded_plugin *plugin,
                          const struct rlmcp_resource_def *def, char *err,
                          size_t errlen);
int registry_add_prompt(struct registry *reg, struct loaded_plugin *plugin,
                        const struct rlmcp_prompt_def *def, char *err,
                        size_t errlen);

/*
 * Drop everything plugin registered, calling each user_data_free (a failed
 * init). Not after registry_select().
 */
void registry_remove_plugin(struct registry *reg,
                            const struct loaded_plugin *plugin);

/*
 * Copy everything plugin registered in src (not yet selected) into dst,
 * which must be open: entries as the plugin registered them, sharing its
 * user data and SERIAL locks. The same checks as registration: a name
 * another plugin took already is RLMCP_EEXIST with the reason in err.
 */
int registry_copy_plugin(struct registry *dst, const struct registry *src,
                         struct loaded_plugin *plugin, char *err,
                         size_t errlen);

/*
 * Call user_data_free for everything plugin registered (selected or not)
 * and forget the pointers. The loader calls it after the plugins' shutdown
 * and before dlclose.
 */
void registry_release_plugin(struct registry *reg,
                             const struct loaded_plugin *plugin);

/*
 * Apply the deployment's tools: selection (read_only > exclude > allow;
 * aliases rename tools and parameters), fill timeouts (tools.timeout_ms,
 * else the def's, else default_timeout_ms), sort by exposed name, serialise
 * each list_json and freeze. sel may be NULL (every tool). file names the
 * deployment in errors. lenient (on_plugin_error: skip) turns unknown tool
 * names into warnings, since a skipped plugin's tools are unknown. Returns 0,
 * or -1 with "file:line:col: ..." in err.
 */
int registry_select(struct registry *reg, const struct host_tools_config *sel,
                    const char *file, bool lenient, unsigned default_timeout_ms,
                    char *err, size_t errlen);

bool registry_frozen(const struct registry *reg);

/* The deployment's toolsets (toolsets.h), NULL when it defines none. */
struct toolsets;
const struct toolsets *registry_toolsets(const struct registry *reg);
/* For registry_select.c: the registry takes ts (replacing any). */
void registry_set_toolsets(struct registry *reg, struct toolsets *ts);

/* Every registered tool, selected or not (for --list-tools --all). */
size_t registry_all_tool_count(const struct registry *reg);

/*
 * Free the registry. user_data_free is NOT called here (the plugin code
 * may be unloaded by now): that is registry_release_plugin's job.
 */
void registry_free(struct registry *reg);

/* Name rule for tools and prompts: [A-Za-z0-9_.-]{1,128}. */
bool registry_valid_name(const char *name);

/* For registry_select.c only: every registered tool, and installing the
 * selection (takes ownership of sel, sorts it, freezes). */
struct tool_entry *registry_registered_tool(struct registry *reg, size_t i);
void registry_install_selection(struct registry *reg, struct tool_entry **sel,
                                size_t n);

#endif
