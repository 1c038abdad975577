/*
 * registry_select.c - the deployment's tools: selection over the registered
 * tools.
 *
 * Precedence: read_only > exclude > allow. Names in allow/exclude are tool
 * names (as registered, or as renamed by an alias) or plugin:NAME for all
 * of a plugin's tools. Aliases rename tools and, optionally, parameters:
 * the exposed input schema is rewritten and the mapping kept so the
 * dispatcher can map arguments back before the handler runs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "registry.h"
#include "textmap.h"
#include "toolsets.h"

struct sel_ctx {
    struct registry *reg;
    const struct host_tools_config *sel;
    const char *file;
    bool lenient;
    char *err;
    size_t errlen;
    const char **names; /* every registered name, NULL-terminated */
};

/* An error, or in lenient mode a warning; returns -1 for an error. */
static int sel_problem(struct sel_ctx *c, struct config_pos pos,
                       const char *fmt, ...) RLMCP_PRINTF(3, 4);
static int sel_problem(struct sel_ctx *c, struct config_pos pos,
                       const char *fmt, ...)
{
    char msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->lenient) {
        log_msg(RLMCP_LOG_WARNING, NULL,
                "%s:%u:%u: %s (ignored: on_plugin_error is skip)", c->file,
                pos.line, pos.col, msg);
        return 0;
    }
    snprintf(c->err, c->errlen, "%s:%u:%u: %s", c->file, pos.line, pos.col,
             msg);
    return -1;
}

static void sel_error(struct sel_ctx *c, struct config_pos pos, const char *fmt,
                      ...) RLMCP_PRINTF(3, 4);
static void sel_error(struct sel_ctx *c, struct config_pos pos, const char *fmt,
                      ...)
{
    char msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s:%u:%u: %s", c->file, pos.line, pos.col,
             msg);
}

static const struct config_alias *alias_of(const struct host_tools_config *sel,
                                           const char *original)
{
    size_t i = 0;

    if (sel == NULL)
        return NULL;
    for (i = 0; i < sel->n_aliases; i++) {
        if (strcmp(sel->aliases[i].from, original) == 0)
            return &sel->aliases[i];
    }
    return NULL;
}

static struct tool_entry *find_original(struct registry *reg, const char *name)
{
    struct tool_entry *t = NULL;
    size_t i = 0;

    for (i = 0; (t = registry_registered_tool(reg, i)) != NULL; i++) {
        if (strcmp(t->original_name, name) == 0)
            return t;
    }
    return NULL;
}

/* "did you mean" text for an unknown tool name, or "". */
static void hint_for(struct sel_ctx *c, const char *name, char *out,
                     size_t outlen)
{
    const char *best = config_suggest(name, c->names);

    if (best != NULL)
        snprintf(out, outlen, "; did you mean '%s'?", best);
    else
        snprintf(out, outlen,
                 "; run 'runloop-mcp --list-tools --all' to see every tool the "
                 "plugins offer");
}

/*
 * Does entry e of allow/exclude match tool t? Unknown names are reported
 * once, by check_names().
 */
static struct tool_entry *find_original(struct registry *reg, const char *name);

/*
 * A name means the tool registered under it; only when no tool is, it
 * means the tool an alias renames to it.
 */
static bool name_matches(struct registry *reg,
                         const struct host_tools_config *sel,
                         const struct config_name *e,
                         const struct tool_entry *t)
{
    const struct config_alias *a = NULL;

    if (strncmp(e->name, "plugin:", 7) == 0)
        return strcmp(e->name + 7, t->plugin_name) == 0;
    if (strcmp(e->name, t->original_name) == 0)
        return true;
    if (find_original(reg, e->name) != NULL)
        return false;
    a = alias_of(sel, t->original_name);
    return a != NULL && strcmp(a->to, e->name) == 0;
}

static int check_names(struct sel_ctx *c, const struct config_name *list,
                       size_t n, const char *what)
{
    struct tool_entry *t = NULL;
    size_t i = 0;
    size_t j = 0;
    char hint[200];

    for (i = 0; i < n; i++) {
        bool found = false;
        if (strncmp(list[i].name, "plugin:", 7) == 0)
            continue; /* checked against plugins: by config.c */
        for (j = 0; (t = registry_registered_tool(c->reg, j)) != NULL; j++) {
            if (name_matches(c->reg, c->sel, &list[i], t)) {
                found = true;
                break;
            }
        }
        if (found)
            continue;
        hint_for(c, list[i].name, hint, sizeof(hint));
        if (sel_problem(
                c, list[i].pos,
                "unknown tool '%s' in '%s': no loaded plugin registers it%s",
                list[i].name, what, hint) < 0)
            return -1;
    }
    return 0;
}

static bool is_selected(struct registry *reg,
                        const struct host_tools_config *sel,
                        const struct tool_entry *t)
{
    size_t i = 0;
    bool allowed = true;

    if (sel == NULL)
        return true;
    if (sel->read_only && !t->read_only)
        return false;
    for (i = 0; i < sel->n_exclude; i++) {
        if (name_matches(reg, sel, &sel->exclude[i], t))
            return false;
    }
    if (sel->allow_set) {
        allowed = false;
        for (i = 0; i < sel->n_allow; i++) {
            if (name_matches(reg, sel, &sel->allow[i], t))
                allowed = true;
        }
    }
    return allowed;
}

/* Rename one parameter in the exposed schema's properties and required. */
static int rename_param(struct sel_ctx *c, struct tool_entry *t,
                        const struct config_param_alias *pa)
{
    cJSON *props =
        cJSON_GetObjectItemCaseSensitive(t->input_schema, "properties");
    cJSON *req = cJSON_GetObjectItemCaseSensitive(t->input_schema, "required");
    cJSON *item = NULL;
    cJSON *r = NULL;
    char *key = NULL;

    item = props ? cJSON_GetObjectItemCaseSensitive(props, pa->from) : NULL;
    if (item == NULL) {
        sel_error(c, pa->pos,
                  "tool '%s' has no parameter '%s' to rename; check the tool's "
                  "input schema (runloop-mcp --list-tools --json)",
                  t->original_name, pa->from);
        return -1;
    }
    if (!registry_valid_name(pa->to)) {
        sel_error(c, pa->pos,
                  "new parameter name '%s' is not valid; use A-Z a-z 0-9 _ . -",
                  pa->to);
        return -1;
    }
    if (cJSON_GetObjectItemCaseSensitive(props, pa->to) != NULL) {
        sel_error(
            c, pa->pos,
            "tool '%s' already has a parameter '%s'; pick another new name",
            t->original_name, pa->to);
        return -1;
    }
    /* Rename in place so the property order clients see is unchanged. */
    key = cJSON_malloc(strlen(pa->to) + 1);
    if (key == NULL)
        goto oom;
    strcpy(key, pa->to);
    if (!(item->type & cJSON_StringIsConst))
        cJSON_free(item->string);
    item->string = key;
    item->type &= ~cJSON_StringIsConst;
    cJSON_ArrayForEach(r, req)
    {
        if (cJSON_IsString(r) && strcmp(r->valuestring, pa->from) == 0 &&
            !cJSON_SetValuestring(r, pa->to))
            goto oom;
    }
    return 0;
oom:
    sel_error(c, pa->pos, "out of memory");
    return -1;
}

static int apply_param_aliases(struct sel_ctx *c, struct tool_entry *t,
                               const struct config_alias *a)
{
    size_t i = 0;

    if (a->n_params == 0)
        return 0;
    t->param_aliases = calloc(a->n_params, sizeof(*t->param_aliases));
    if (t->param_aliases == NULL) {
        sel_error(c, a->pos, "out of memory");
        return -1;
    }
    for (i = 0; i < a->n_params; i++) {
        struct param_alias *pa = &t->param_aliases[i];
        if (rename_param(c, t, &a->params[i]) < 0)
            return -1;
        pa->exposed = strdup(a->params[i].to);
        pa->original = strdup(a->params[i].from);
        t->n_param_aliases++;
        if (pa->exposed == NULL || pa->original == NULL) {
            sel_error(c, a->pos, "out of memory");
            return -1;
        }
    }
    return 0;
}

static int apply_aliases(struct sel_ctx *c)
{
    const struct host_tools_config *sel = c->sel;
    size_t i = 0;
    char hint[200];

    if (sel == NULL)
        return 0;
    for (i = 0; i < sel->n_aliases; i++) {
        const struct config_alias *a = &sel->aliases[i];
        struct tool_entry *t = find_original(c->reg, a->from);
        char *name = NULL;
        if (t == NULL) {
            hint_for(c, a->from, hint, sizeof(hint));
            if (sel_problem(c, a->pos,
                            "alias for unknown tool '%s': no loaded plugin "
                            "registers it%s",
                            a->from, hint) < 0)
                return -1;
            continue;
        }
        if (!registry_valid_name(a->to)) {
            sel_error(c, a->pos,
                      "alias '%s' for tool '%s' is not a valid tool name; use "
                      "1-128 of A-Z a-z 0-9 _ . -",
                      a->to, a->from);
            return -1;
        }
        name = strdup(a->to);
        if (name == NULL) {
            sel_error(c, a->pos, "out of memory");
            return -1;
        }
        free(t->name);
        t->name = name;
        if (apply_param_aliases(c, t, a) < 0)
            return -1;
    }
    return 0;
}

/* Every "description" string in a schema, rewritten for the deployment. */
static int map_schema_text(const struct registry *reg,
                           const struct tool_entry *t, cJSON *node)
{
    cJSON *it = NULL;
    char *text = NULL;

    cJSON_ArrayForEach(it, node)
    {
        if (cJSON_IsString(it) && it->string != NULL &&
            strcmp(it->string, "description") == 0) {
            text = textmap_apply(reg, t, it->valuestring, TEXTMAP_DROP_HIDDEN);
            if (text == NULL || !cJSON_SetValuestring(it, text)) {
                free(text);
                return -1;
            }
            free(text);
        } else if ((cJSON_IsObject(it) || cJSON_IsArray(it)) &&
                   map_schema_text(reg, t, it) < 0) {
            return -1;
        }
    }
    return 0;
}

/*
 * A tool's description and parameter descriptions name tools and
 * parameters as this deployment exposes them, and no hidden tool.
 */
static int map_tool_text(const struct registry *reg, struct tool_entry *t)
{
    char *text = textmap_apply(reg, t, t->description, TEXTMAP_DROP_HIDDEN);

    if (text == NULL)
        return -1;
    free(t->description);
    t->description = text;
    return map_schema_text(reg, t, t->input_schema);
}

static int build_list_json(struct tool_entry *t)
{
    cJSON *o = cJSON_CreateObject();
    int rc = -1;

    if (o == NULL)
        return -1;
    if (!cJSON_AddStringToObject(o, "name", t->name))
        goto out;
    if (t->title != NULL && !cJSON_AddStringToObject(o, "title", t->title))
        goto out;
    if (!cJSON_AddStringToObject(o, "description", t->description))
        goto out;
    if (!cJSON_AddItemToObject(o, "inputSchema",
                               cJSON_Duplicate(t->input_schema, true)))
        goto out;
    if (t->listed_output_schema != NULL &&
        !cJSON_AddItemToObject(o, "outputSchema",
                               cJSON_Duplicate(t->listed_output_schema, true)))
        goto out;
    if (t->annotations != NULL &&
        !cJSON_AddItemToObject(o, "annotations",
                               cJSON_Duplicate(t->annotations, true)))
        goto out;
    /* A task tool runs either way unless it says it runs only as a task:
     * the client chooses (tasks.c). */
    if (t->has_task &&
        !cJSON_AddStringToObject(
            cJSON_AddObjectToObject(o, "execution"), "taskSupport",
            (t->task.flags & RLMCP_TASK_REQUIRED) ? "required" : "optional"))
        goto out;
    t->list_json = cJSON_PrintUnformatted(o);
    if (t->list_json != NULL)
        rc = 0;
out:
    cJSON_Delete(o);
    return rc;
}

/* Two selected tools must not end up with one exposed name. */
static int check_collisions(struct sel_ctx *c, struct tool_entry **sel,
                            size_t n)
{
    size_t i = 0;
    size_t j = 0;

    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++) {
            const struct config_alias *a = NULL;
            struct config_pos pos = {1, 1};
            if (strcmp(sel[i]->name, sel[j]->name) != 0)
                continue;
            a = alias_of(c->sel, sel[i]->original_name);
            if (a == NULL)
                a = alias_of(c->sel, sel[j]->original_name);
            if (a != NULL)
                pos = a->pos;
            sel_error(
                c, pos,
                "two tools would both be called '%s' ('%s' of plugin '%s' and "
                "'%s' of plugin '%s'); change the alias or exclude one",
                sel[i]->name, sel[j]->original_name, sel[j]->plugin_name,
                sel[i]->original_name, sel[i]->plugin_name);
            return -1;
        }
    }
    return 0;
}

/*
 * The deployment's time limit for t (tools.timeout_ms), 0 when it sets
 * none: an entry naming the tool wins over a plugin:NAME one.
 */
static unsigned configured_timeout(struct registry *reg,
                                   const struct host_tools_config *sel,
                                   const struct tool_entry *t)
{
    unsigned by_plugin = 0;
    size_t i = 0;

    if (sel == NULL)
        return 0;
    for (i = 0; i < sel->n_timeouts; i++) {
        if (!name_matches(reg, sel, &sel->timeouts[i], t))
            continue;
        if (strncmp(sel->timeouts[i].name, "plugin:", 7) != 0)
            return sel->timeout_ms[i];
        by_plugin = sel->timeout_ms[i];
    }
    return by_plugin;
}

static int collect_names(struct sel_ctx *c)
{
    size_t n = registry_all_tool_count(c->reg);
    size_t i = 0;

    c->names = calloc(n + 1, sizeof(*c->names));
    if (c->names == NULL)
        return -1;
    for (i = 0; i < n; i++)
        c->names[i] = registry_registered_tool(c->reg, i)->original_name;
    return 0;
}

/* Is name a registered tool (or an alias of one) that sel leaves out? */
static bool unselected_name(struct registry *reg,
                            const struct host_tools_config *sel,
                            const struct config_name *e)
{
    struct tool_entry *t = NULL;
    size_t i = 0;

    for (i = 0; (t = registry_registered_tool(reg, i)) != NULL; i++) {
        if (name_matches(reg, sel, e, t))
            return !t->selected;
    }
    return false;
}

/*
 * tools.toolsets: put each selected tool in at most one toolset; a
 * toolset without a selected tool, or a meta tool's name taken by a
 * tool, is an error.
 */
static int assign_toolsets(struct sel_ctx *c, struct tool_entry **chosen,
                           size_t n)
{
    const struct host_tools_config *sel = c->sel;
    struct toolsets *ts = NULL;
    size_t i = 0;
    size_t j = 0;
    size_t k = 0;

    if (sel == NULL || sel->n_toolsets == 0)
        return 0;
    for (i = 0; i < n; i++) {
        if (strcmp(chosen[i]->name, TOOLSETS_LIST_TOOL) == 0 ||
            strcmp(chosen[i]->name, TOOLSETS_ENABLE_TOOL) == 0) {
            sel_error(c, sel->toolsets[0].pos,
                      "tool '%s' of plugin '%s' has the name of a toolsets "
                      "meta tool; rename it with tools.aliases",
                      chosen[i]->name, chosen[i]->plugin_name);
            return -1;
        }
    }
    for (i = 0; i < sel->n_toolsets; i++) {
        const struct config_toolset *set = &sel->toolsets[i];
        char what[128];
        size_t count = 0;

        snprintf(what, sizeof(what), "tools.toolsets.%s.tools", set->name);
        if (check_names(c, set->tools, set->n_tools, what) < 0)
            return -1;
        for (j = 0; j < set->n_tools; j++) {
            const struct config_name *e = &set->tools[j];
            if (strncmp(e->name, "plugin:", 7) != 0 &&
                unselected_name(c->reg, sel, e) &&
                sel_problem(c, e->pos,
                            "tool '%s' in toolset '%s' is not offered by this "
                            "deployment (tools.allow, tools.exclude or "
                            "tools.read_only leaves it out); remove it from "
                            "the toolset",
                            e->name, set->name) < 0)
                return -1;
            for (k = 0; k < n; k++) {
                struct tool_entry *t = chosen[k];
                if (!name_matches(c->reg, sel, e, t))
                    continue;
                if (t->toolset != 0 && t->toolset != i + 1) {
                    sel_error(c, e->pos,
                              "tool '%s' is in toolsets '%s' and '%s'; a tool "
                              "belongs to one toolset, remove it from one",
                              t->name, sel->toolsets[t->toolset - 1].name,
                              set->name);
                    return -1;
                }
                t->toolset = (unsigned)i + 1;
            }
        }
        for (k = 0; k < n; k++)
            count += chosen[k]->toolset == i + 1;
        if (count == 0 &&
            sel_problem(c, set->pos,
                        "toolset '%s' has no tool this deployment offers; "
                        "remove it or list offered tools",
                        set->name) < 0)
            return -1;
    }
    ts = toolsets_build(sel, chosen, n);
    if (ts == NULL) {
        sel_error(c, sel->toolsets[0].pos, "out of memory");
        return -1;
    }
    registry_set_toolsets(c->reg, ts);
    return 0;
}

int registry_select(struct registry *reg, const struct host_tools_config *sel,
                    const char *file, bool lenient, unsigned default_timeout_ms,
                    char *err, size_t errlen)
{
    struct sel_ctx c = {reg,    sel, file ? file : "deployment", lenient, err,
                        errlen, NULL};
    struct tool_entry **chosen = NULL;
    struct tool_entry *t = NULL;
    size_t n = 0;
    size_t i = 0;
    int rc = -1;

    if (registry_frozen(reg)) {
        snprintf(err, errlen, "the tool selection was already applied");
        return -1;
    }
    if (collect_names(&c) < 0)
        goto oom;
    if (sel != NULL &&
        (check_names(&c, sel->allow, sel->n_allow, "tools.allow") < 0 ||
         check_names(&c, sel->exclude, sel->n_exclude, "tools.exclude") < 0 ||
         check_names(&c, sel->timeouts, sel->n_timeouts, "tools.timeout_ms") <
             0))
        goto out;
    if (apply_aliases(&c) < 0)
        goto out;
    chosen = calloc(registry_all_tool_count(reg) + 1, sizeof(*chosen));
    if (chosen == NULL)
        goto oom;
    for (i = 0; (t = registry_registered_tool(reg, i)) != NULL; i++) {
        unsigned ms = configured_timeout(reg, sel, t);
        t->toolset = 0;
        if (ms != 0)
            t->timeout_ms = ms;
        else if (t->timeout_ms == 0)
            t->timeout_ms = default_timeout_ms;
        if (is_selected(reg, sel, t))
            chosen[n++] = t;
    }
    if (check_collisions(&c, chosen, n) < 0)
        goto out;
    for (i = 0; i < n; i++)
        chosen[i]->selected = true;
    for (i = 0; i < n; i++) {
        if (map_tool_text(reg, chosen[i]) < 0 || build_list_json(chosen[i]) < 0)
            goto oom;
    }
    if (assign_toolsets(&c, chosen, n) < 0)
        goto out;
    registry_install_selection(reg, chosen, n);
    chosen = NULL;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory applying the tool selection",
             c.file);
out:
    free(chosen);
    free(c.names);
    return rc;
}
