/*
 * toolsets.h - dynamic toolset discovery: a deployment's tools.toolsets
 * group tools that a session's tools/list shows only once the session has
 * enabled their toolset (docs/deployments.md "Toolsets").
 *
 * A session starts with the tools of no toolset (the core) and two meta
 * tools: list_toolsets and enable_toolset. enable_toolset adds a toolset's
 * tools to that session's list and sends that session alone
 * notifications/tools/list_changed. Every selected tool stays callable
 * whether its toolset is enabled or not: toolsets shape the list, not what
 * a session may call.
 *
 * MCP has no client capability for "I re-list on tools/list_changed", so
 * sessions that cannot hold state or may not follow a list change get every
 * tool: 2026-07-28 stateless requests, and clients whose clientInfo.name
 * matches tools.full_list_clients.
 */
#ifndef RLMCP_HOST_TOOLSETS_H
#define RLMCP_HOST_TOOLSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define TOOLSETS_LIST_TOOL "list_toolsets"
#define TOOLSETS_ENABLE_TOOL "enable_toolset"

struct host_tools_config; /* config.h */
struct registry;          /* registry.h */
struct tool_entry;

struct toolset {
    char *name;
    char *description;
    size_t n_tools; /* selected tools in it */
};

/* A deployment's toolsets, owned by its registry; frozen with it. */
struct toolsets {
    struct toolset *sets;
    size_t n;
    char **full_list_clients; /* NULL-terminated */
    size_t n_full_list_clients;
    char *list_json;   /* list_toolsets' tools/list object */
    char *enable_json; /* enable_toolset's, naming every toolset */
};

/*
 * The toolsets of sel over the selected tools chosen[0..n), whose
 * t->toolset registry_select() has set. NULL when out of memory.
 */
struct toolsets *toolsets_build(const struct host_tools_config *sel,
                                struct tool_entry *const *chosen, size_t n);
void toolsets_free(struct toolsets *ts);

/* The index of toolset name, or -1. */
int toolsets_find(const struct toolsets *ts, const char *name);

/* Does a client called client_name (NULL: it sent none) get every tool? */
bool toolsets_full_list_client(const struct toolsets *ts,
                               const char *client_name);

/* The enabled-set mask of a session's enabled toolset names. */
uint64_t toolsets_mask(const struct toolsets *ts, char *const *names, size_t n);

/*
 * The tools/list objects (serialised) a session with mask sees, sorted
 * by name, the meta tools among them: a calloc'd array, *count entries,
 * borrowed from reg. NULL when out of memory.
 */
const char **toolsets_view(const struct registry *reg, uint64_t mask,
                           size_t *count);

/* Is name a meta tool of ts (ts may be NULL)? */
bool toolsets_is_meta(const struct toolsets *ts, const char *name);

/* list_toolsets' result for a session with mask (full: every tool listed). */
cJSON *toolsets_list_result(const struct registry *reg, uint64_t mask,
                            bool full);

/* The exposed names of toolset idx's tools, as a JSON array. */
cJSON *toolsets_tool_names(const struct registry *reg, size_t idx);

#endif
