/*
 * registry.c - tools, resources and prompts registered by plugins, the
 * deployment's selection over them, and the frozen lookup tables.
 */
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "errbuf.h"
#include "log.h"
#include "param_headers.h"

#include "schema.h"
#include "toolsets.h"

struct registry {
    struct tool_entry **tools; /* every registered tool, in order */
    size_t n_tools;
    size_t cap_tools;
    struct tool_entry **sel; /* selected, sorted by exposed name */
    size_t n_sel;
    struct resource_entry **res;
    size_t n_res;
    size_t cap_res;
    struct prompt_entry **prompts; /* sorted by name once frozen */
    size_t n_prompts;
    size_t cap_prompts;
    struct toolsets *toolsets; /* NULL: none */
    bool frozen;
};

bool registry_valid_name(const char *name)
{
    size_t n = 0;

    if (name == NULL)
        return false;
    for (n = 0; name[n] != '\0'; n++) {
        char ch = name[n];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
                  ch == '-';
        if (!ok || n >= 128)
            return false;
    }
    return n > 0;
}

/*
 * Copy a plugin's sized struct into dst (ours, zeroed first). Its first
 * field is its size. Older, smaller structs read as zero in the new
 * fields; newer, larger ones are fine while the fields we do not know are
 * all zero.
 */
static int read_sized(const void *src, void *dst, size_t ours, size_t min,
                      const char *what, char *err, size_t errlen)
{
    size_t theirs = 0;
    const unsigned char *bytes = src;
    size_t i = 0;

    memcpy(&theirs, src, sizeof(theirs));
    memset(dst, 0, ours);
    if (theirs < min) {
        errbuf_set(
            err, errlen,
            "%s.struct_size is %zu, smaller than %zu, the least this host "
            "takes (sdk/ABI.md); initialise it with the _INIT macro from "
            "rlmcp/plugin.h",
            what, theirs, min);
        return RLMCP_EVERSION;
    }
    for (i = ours; i < theirs; i++) {
        if (bytes[i] != 0) {
            errbuf_set(
                err, errlen,
                "%s has fields this host does not know (struct_size %zu > "
                "%zu, non-zero at byte %zu); run a newer runloop-mcp or "
                "leave those fields zero",
                what, theirs, ours, i);
            return RLMCP_EVERSION;
        }
    }
    memcpy(dst, src, theirs < ours ? theirs : ours);
    return RLMCP_OK;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    void *np = NULL;
    size_t ncap = 0;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 16;
    np = realloc(*arr, ncap * elem);
    if (np == NULL)
        return -1;
    *arr = np;
    *cap = ncap;
    return 0;
}

static char *dup_opt(const char *s)
{
    return s ? strdup(s) : NULL;
}

struct registry *registry_new(void)
{
    return calloc(1, sizeof(struct registry));
}

bool registry_frozen(const struct registry *reg)
{
    return reg->frozen;
}

/* ---- validation -------------------------------------------------------- */

static cJSON *parse_object(const char *json, const char *what, char *err,
                           size_t errlen)
{
    cJSON *j = NULL;

    j = cJSON_Parse(json);
    if (j == NULL) {
        errbuf_set(err, errlen, "%s is not valid JSON (near offset %td)", what,
                   cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - json
                                       : (ptrdiff_t)0);
        return NULL;
    }
    if (!cJSON_IsObject(j)) {
        errbuf_set(err, errlen, "%s must be a JSON object", what);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int check_schema(const cJSON *schema, const char *what, char *err,
                        size_t errlen)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
    const cJSON *it = NULL;

    if (!cJSON_IsString(type) || strcmp(type->valuestring, "object") != 0) {
        errbuf_set(err, errlen, "%s must have \"type\": \"object\"", what);
        return -1;
    }
    if (props != NULL && !cJSON_IsObject(props)) {
        errbuf_set(err, errlen, "%s: \"properties\" must be an object", what);
        return -1;
    }
    if (req != NULL) {
        if (!cJSON_IsArray(req)) {
            errbuf_set(err, errlen,
                       "%s: \"required\" must be an array of names", what);
            return -1;
        }
        cJSON_ArrayForEach(it, req)
        {
            if (!cJSON_IsString(it)) {
                errbuf_set(err, errlen,
                           "%s: \"required\" must hold only strings", what);
                return -1;
            }
        }
    }
    {
        /* The validator must be able to apply it faithfully per call. */
        char sub[512] = "";
        if (schema_check(schema, sub, sizeof(sub)) != 0) {
            errbuf_set(err, errlen, "%s: %s", what, sub);
            return -1;
        }
    }
    return 0;
}

static int check_annotations(const cJSON *a, char *err, size_t errlen)
{
    static const char *const hints[] = {"readOnlyHint", "destructiveHint",
                                        "idempotentHint", "openWorldHint"};
    const cJSON *title = cJSON_GetObjectItemCaseSensitive(a, "title");
    size_t i = 0;

    for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(a, hints[i]);
        if (h != NULL && !cJSON_IsBool(h)) {
            errbuf_set(err, errlen, "annotations.%s must be true or false",
                       hints[i]);
            return -1;
        }
    }
    if (title != NULL && !cJSON_IsString(title)) {
        errbuf_set(err, errlen, "annotations.title must be a string");
        return -1;
    }
    return 0;
}

/* ---- tools ------------------------------------------------------------- */

static struct tool_serial *serial_new(void)
{
    struct tool_serial *ts = calloc(1, sizeof(*ts));

    if (ts == NULL)
        return NULL;
    atomic_init(&ts->refs, 1);
    pthread_mutex_init(&ts->lock, NULL);
    return ts;
}

static void serial_unref(struct tool_serial *ts)
{
    if (ts == NULL || atomic_fetch_sub(&ts->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&ts->lock);
    free(ts);
}

static void tool_free(struct tool_entry *t)
{
    size_t i = 0;

    if (t == NULL)
        return;
    free(t->name);
    free(t->plugin_name);
    free(t->original_name);
    free(t->timeout_arg);
    free(t->title);
    free(t->description);
    cJSON_Delete(t->input_schema);
    cJSON_Delete(t->output_schema);
    cJSON_Delete(t->listed_output_schema);
    cJSON_Delete(t->annotations);
    free(t->list_json);
    for (i = 0; i < t->n_param_aliases; i++) {
        free(t->param_aliases[i].exposed);
        free(t->param_aliases[i].original);
    }
    free(t->param_aliases);
    serial_unref(t->serial);
    free(t);
}

static struct tool_entry *find_registered(const struct registry *reg,
                                          const char *original)
{
    size_t i = 0;

    for (i = 0; i < reg->n_tools; i++) {
        if (strcmp(reg->tools[i]->original_name, original) == 0)
            return reg->tools[i];
    }
    return NULL;
}

/* Tool names are unique host-wide: true (err set) when name is taken. */
static bool tool_taken(const struct registry *reg, const char *name, char *err,
                       size_t errlen)
{
    const struct tool_entry *other = find_registered(reg, name);

    if (other == NULL)
        return false;
    errbuf_set(err, errlen,
               "tool '%s' is already registered by plugin '%s'; tool names "
               "are unique host-wide (rename one, or use a deployment alias)",
               name, other->plugin_name);
    return true;
}

static int validate_tool(const struct rlmcp_tool_def *d, char *err,
                         size_t errlen)
{
    if (!registry_valid_name(d->name)) {
        errbuf_set(
            err, errlen,
            "tool name '%.140s' is not valid; use 1-128 of A-Z a-z 0-9 _ . -",
            d->name ? d->name : "(null)");
        return RLMCP_EINVAL;
    }
    if (d->description == NULL || d->description[0] == '\0') {
        errbuf_set(
            err, errlen,
            "tool '%s' has no description; describe what it does for the model",
            d->name);
        return RLMCP_EINVAL;
    }
    if (d->handler == NULL) {
        errbuf_set(err, errlen, "tool '%s' has no handler", d->name);
        return RLMCP_EINVAL;
    }
    if (d->input_schema_json == NULL) {
        errbuf_set(err, errlen,
                   "tool '%s' has no input_schema_json; give at least "
                   "{\"type\":\"object\"}",
                   d->name);
        return RLMCP_EINVAL;
    }
    return RLMCP_OK;
}

/* Parse and check the JSON parts of def into t. */
static int tool_fill_json(struct tool_entry *t, const struct rlmcp_tool_def *d,
                          char *err, size_t errlen)
{
    char what[200];
    char why[400];
    int rc = 0;

    snprintf(what, sizeof(what), "tool '%s' input schema", d->name);
    t->input_schema = parse_object(d->input_schema_json, what, err, errlen);
    if (t->input_schema == NULL ||
        check_schema(t->input_schema, what, err, errlen) < 0)
        return RLMCP_EINVAL;
    rc = param_headers_declared(t->input_schema, why, sizeof(why));
    if (rc < 0) {
        errbuf_set(err, errlen, "%s: %s", what, why);
        return RLMCP_EINVAL;
    }
    t->param_headers = rc > 0;
    if (d->output_schema_json != NULL) {
        snprintf(what, sizeof(what), "tool '%s' output schema", d->name);
        t->output_schema =
            parse_object(d->output_schema_json, what, err, errlen);
        if (t->output_schema == NULL ||
            check_schema(t->output_schema, what, err, errlen) < 0)
            return RLMCP_EINVAL;
        t->listed_output_schema = schema_admit_error(t->output_schema);
        if (t->listed_output_schema == NULL) {
            errbuf_set(err, errlen, "%s: out of memory", what);
            return RLMCP_ENOMEM;
        }
    }
    if (d->annotations_json != NULL) {
        const cJSON *ro = NULL;
        snprintf(what, sizeof(what), "tool '%s' annotations", d->name);
        t->annotations = parse_object(d->annotations_json, what, err, errlen);
        if (t->annotations == NULL)
            return RLMCP_EINVAL;
        if (check_annotations(t->annotations, err, errlen) < 0)
            return RLMCP_EINVAL;
        ro = cJSON_GetObjectItemCaseSensitive(t->annotations, "readOnlyHint");
        t->read_only = cJSON_IsTrue(ro);
    }
    return RLMCP_OK;
}

/* ABI 1.4: the task ops, all four or none (update is optional). */
static int tool_task(struct tool_entry *t, const struct rlmcp_tool_def *d,
                     char *err, size_t errlen)
{
    struct rlmcp_task_def td;
    int rc;

    if (d->task == NULL)
        return RLMCP_OK;
    rc = read_sized(d->task, &td, sizeof(td), RLMCP_TASK_DEF_SIZE_1_4,
                    "rlmcp_task_def", err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    if (td.start == NULL || td.get == NULL || td.wait == NULL ||
        td.cancel == NULL) {
        errbuf_set(err, errlen,
                   "tool '%s': a task definition needs start, get, wait and "
                   "cancel",
                   d->name);
        return RLMCP_EINVAL;
    }
    t->task = td;
    t->has_task = true;
    return RLMCP_OK;
}

/*
 * The argument that sets a call's time limit (rlmcp_tool_def.timeout_arg):
 * a numeric property of the input schema. Defs from before the field name
 * none, and get "timeout_seconds" when their schema has it.
 */
static int tool_timeout_arg(struct tool_entry *t,
                            const struct rlmcp_tool_def *d, char *err,
                            size_t errlen)
{
    const char *name =
        d->timeout_arg != NULL ? d->timeout_arg : "timeout_seconds";
    const cJSON *props =
        cJSON_GetObjectItemCaseSensitive(t->input_schema, "properties");
    const cJSON *prop = cJSON_GetObjectItemCaseSensitive(props, name);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(prop, "type");
    bool numeric =
        cJSON_IsString(type) && (strcmp(type->valuestring, "integer") == 0 ||
                                 strcmp(type->valuestring, "number") == 0);

    if (name[0] == '\0')
        return RLMCP_OK;
    if (!numeric) {
        if (d->timeout_arg == NULL)
            return RLMCP_OK;
        errbuf_set(err, errlen,
                   "tool '%s': timeout_arg '%.64s' is not an \"integer\" or "
                   "\"number\" property of its input schema; declare it there, "
                   "or leave timeout_arg NULL",
                   d->name, name);
        return RLMCP_EINVAL;
    }
    t->timeout_arg = strdup(name);
    return t->timeout_arg != NULL ? RLMCP_OK : RLMCP_ENOMEM;
}

int registry_add_tool(struct registry *reg, struct loaded_plugin *plugin,
                      const char *plugin_name, const struct rlmcp_tool_def *def,
                      char *err, size_t errlen)
{
    struct rlmcp_tool_def d;
    struct tool_entry *t = NULL;
    int rc = RLMCP_OK;

    if (reg->frozen) {
        errbuf_set(err, errlen, "tools can only be registered during init");
        return RLMCP_ESTATE;
    }
    if (def == NULL) {
        errbuf_set(err, errlen, "register_tool called with a NULL definition");
        return RLMCP_EINVAL;
    }
    rc = read_sized(def, &d, sizeof(d), REGISTRY_TOOL_DEF_SIZE_1_0,
                    "rlmcp_tool_def", err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    rc = validate_tool(&d, err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    if (tool_taken(reg, d.name, err, errlen))
        return RLMCP_EEXIST;
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return RLMCP_ENOMEM;
    t->serial = serial_new();
    if (t->serial == NULL)
        goto oom;
    rc = tool_fill_json(t, &d, err, errlen);
    if (rc == RLMCP_OK)
        rc = tool_timeout_arg(t, &d, err, errlen);
    if (rc != RLMCP_OK)
        goto fail;
    t->name = strdup(d.name);
    t->original_name = strdup(d.name);
    t->plugin_name = strdup(plugin_name ? plugin_name : "");
    t->title = dup_opt(d.title);
    t->description = strdup(d.description);
    if (t->name == NULL || t->original_name == NULL || t->plugin_name == NULL ||
        (d.title != NULL && t->title == NULL) || t->description == NULL)
        goto oom;
    t->flags = d.flags;
    t->timeout_ms = d.timeout_ms;
    t->handler = d.handler;
    t->user_data = d.user_data;
    t->user_data_free = d.user_data_free;
    t->plugin = plugin;
    rc = tool_task(t, &d, err, errlen);
    if (rc != RLMCP_OK)
        goto fail;
    if (grow((void **)&reg->tools, &reg->cap_tools, reg->n_tools,
             sizeof(*reg->tools)) < 0)
        goto oom;
    reg->tools[reg->n_tools++] = t;
    return RLMCP_OK;
oom:
    errbuf_set(err, errlen, "out of memory");
    rc = RLMCP_ENOMEM;
fail:
    tool_free(t);
    return rc;
}

/* ---- resources and prompts --------------------------------------------- */

static void resource_free(struct resource_entry *r)
{
    if (r == NULL)
        return;
    free(r->uri);
    free(r->uri_template);
    free(r->name);
    free(r->title);
    free(r->description);
    free(r->mime_type);
    free(r);
}

static bool resource_taken(const struct registry *reg, const char *key,
                           char *err, size_t errlen)
{
    size_t i = 0;

    for (i = 0; i < reg->n_res; i++) {
        const struct resource_entry *r = reg->res[i];
        const char *rk = r->uri ? r->uri : r->uri_template;
        if (strcmp(rk, key) == 0) {
            errbuf_set(err, errlen, "resource '%.200s' is already registered",
                       key);
            return true;
        }
    }
    return false;
}

static int validate_resource(const struct registry *reg,
                             const struct rlmcp_resource_def *d, char *err,
                             size_t errlen)
{
    const char *key = d->uri ? d->uri : d->uri_template;

    if ((d->uri == NULL) == (d->uri_template == NULL) ||
        (key != NULL && key[0] == '\0')) {
        errbuf_set(err, errlen,
                   "a resource needs exactly one of uri or uri_template");
        return RLMCP_EINVAL;
    }
    if (strchr(key, ':') == NULL) {
        errbuf_set(
            err, errlen,
            "resource URI '%.200s' has no scheme; write e.g. devbox://...",
            key);
        return RLMCP_EINVAL;
    }
    if (d->name == NULL || d->name[0] == '\0') {
        errbuf_set(err, errlen, "resource '%.200s' has no name", key);
        return RLMCP_EINVAL;
    }
    if (d->read == NULL) {
        errbuf_set(err, errlen, "resource '%.200s' has no read handler", key);
        return RLMCP_EINVAL;
    }
    return resource_taken(reg, key, err, errlen) ? RLMCP_EEXIST : RLMCP_OK;
}

int registry_add_resource(struct registry *reg, struct loaded_plugin *plugin,
                          const struct rlmcp_resource_def *def, char *err,
                          size_t errlen)
{
    struct rlmcp_resource_def d;
    struct resource_entry *r = NULL;
    int rc = RLMCP_OK;

    if (reg->frozen) {
        errbuf_set(err, errlen, "resources can only be registered during init");
        return RLMCP_ESTATE;
    }
    if (def == NULL) {
        errbuf_set(err, errlen,
                   "register_resource called with a NULL definition");
        return RLMCP_EINVAL;
    }
    rc = read_sized(def, &d, sizeof(d), REGISTRY_RESOURCE_DEF_SIZE_1_0,
                    "rlmcp_resource_def", err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    rc = validate_resource(reg, &d, err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        goto oom;
    r->uri = dup_opt(d.uri);
    r->uri_template = dup_opt(d.uri_template);
    r->name = strdup(d.name);
    r->title = dup_opt(d.title);
    r->description = dup_opt(d.description);
    r->mime_type = dup_opt(d.mime_type);
    if ((d.uri && !r->uri) || (d.uri_template && !r->uri_template) ||
        !r->name || (d.title && !r->title) ||
        (d.description && !r->description) || (d.mime_type && !r->mime_type))
        goto oom;
    r->flags = d.flags;
    r->read = d.read;
    r->user_data = d.user_data;
    r->user_data_free = d.user_data_free;
    r->plugin = plugin;
    if (grow((void **)&reg->res, &reg->cap_res, reg->n_res, sizeof(*reg->res)) <
        0)
        goto oom;
    reg->res[reg->n_res++] = r;
    return RLMCP_OK;
oom:
    resource_free(r);
    errbuf_set(err, errlen, "out of memory");
    return RLMCP_ENOMEM;
}

static void prompt_free(struct prompt_entry *p)
{
    if (p == NULL)
        return;
    free(p->name);
    free(p->title);
    free(p->description);
    cJSON_Delete(p->arguments);
    free(p);
}

static bool prompt_taken(const struct registry *reg, const char *name,
                         char *err, size_t errlen)
{
    size_t i = 0;

    for (i = 0; i < reg->n_prompts; i++) {
        if (strcmp(reg->prompts[i]->name, name) == 0) {
            errbuf_set(err, errlen, "prompt '%s' is already registered", name);
            return true;
        }
    }
    return false;
}

static int check_prompt_args(const cJSON *args, const char *name, char *err,
                             size_t errlen)
{
    const cJSON *a = NULL;

    if (!cJSON_IsArray(args)) {
        errbuf_set(err, errlen,
                   "prompt '%s' arguments_json must be an array of {name, "
                   "description, required}",
                   name);
        return RLMCP_EINVAL;
    }
    cJSON_ArrayForEach(a, args)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(a, "name");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(a, "required");
        if (!cJSON_IsObject(a) || !cJSON_IsString(n) ||
            (r != NULL && !cJSON_IsBool(r))) {
            errbuf_set(
                err, errlen,
                "prompt '%s': every argument needs a string \"name\" (and "
                "\"required\" must be true or false)",
                name);
            return RLMCP_EINVAL;
        }
    }
    return RLMCP_OK;
}

int registry_add_prompt(struct registry *reg, struct loaded_plugin *plugin,
                        const struct rlmcp_prompt_def *def, char *err,
                        size_t errlen)
{
    struct rlmcp_prompt_def d;
    struct prompt_entry *p = NULL;
    int rc = RLMCP_OK;

    if (reg->frozen) {
        errbuf_set(err, errlen, "prompts can only be registered during init");
        return RLMCP_ESTATE;
    }
    if (def == NULL) {
        errbuf_set(err, errlen,
                   "register_prompt called with a NULL definition");
        return RLMCP_EINVAL;
    }
    rc = read_sized(def, &d, sizeof(d), REGISTRY_PROMPT_DEF_SIZE_1_0,
                    "rlmcp_prompt_def", err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    if (!registry_valid_name(d.name)) {
        errbuf_set(
            err, errlen,
            "prompt name '%.140s' is not valid; use 1-128 of A-Z a-z 0-9 _ . -",
            d.name ? d.name : "(null)");
        return RLMCP_EINVAL;
    }
    if (d.description == NULL || d.description[0] == '\0' || d.get == NULL) {
        errbuf_set(err, errlen,
                   "prompt '%s' needs a description and a get handler", d.name);
        return RLMCP_EINVAL;
    }
    if (prompt_taken(reg, d.name, err, errlen))
        return RLMCP_EEXIST;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        goto oom;
    if (d.arguments_json != NULL) {
        p->arguments = cJSON_Parse(d.arguments_json);
        if (p->arguments == NULL) {
            errbuf_set(err, errlen,
                       "prompt '%s' arguments_json is not valid JSON", d.name);
            rc = RLMCP_EINVAL;
            goto fail;
        }
        rc = check_prompt_args(p->arguments, d.name, err, errlen);
        if (rc != RLMCP_OK)
            goto fail;
    }
    p->name = strdup(d.name);
    p->title = dup_opt(d.title);
    p->description = strdup(d.description);
    if (!p->name || (d.title && !p->title) || !p->description)
        goto oom;
    p->get = d.get;
    p->user_data = d.user_data;
    p->user_data_free = d.user_data_free;
    p->plugin = plugin;
    if (grow((void **)&reg->prompts, &reg->cap_prompts, reg->n_prompts,
             sizeof(*reg->prompts)) < 0)
        goto oom;
    reg->prompts[reg->n_prompts++] = p;
    return RLMCP_OK;
oom:
    errbuf_set(err, errlen, "out of memory");
    rc = RLMCP_ENOMEM;
fail:
    prompt_free(p);
    return rc;
}

/* ---- copying a plugin's entries (a reload) ----------------------------- */

/* A copy of t as its plugin registered it; NULL when out of memory. */
static struct tool_entry *tool_copy(const struct tool_entry *t)
{
    struct tool_entry *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->serial = t->serial;
    atomic_fetch_add(&c->serial->refs, 1);
    c->name = strdup(t->original_name);
    c->plugin_name = strdup(t->plugin_name);
    c->original_name = strdup(t->original_name);
    c->title = dup_opt(t->title);
    c->description = strdup(t->description);
    c->input_schema = cJSON_Duplicate(t->input_schema, true);
    c->output_schema = cJSON_Duplicate(t->output_schema, true);
    c->listed_output_schema = cJSON_Duplicate(t->listed_output_schema, true);
    c->annotations = cJSON_Duplicate(t->annotations, true);
    c->timeout_arg = dup_opt(t->timeout_arg);
    if (c->name == NULL || c->plugin_name == NULL || c->original_name == NULL ||
        (t->title != NULL && c->title == NULL) || c->description == NULL ||
        c->input_schema == NULL ||
        (t->output_schema != NULL && c->output_schema == NULL) ||
        (t->listed_output_schema != NULL && c->listed_output_schema == NULL) ||
        (t->annotations != NULL && c->annotations == NULL) ||
        (t->timeout_arg != NULL && c->timeout_arg == NULL)) {
        tool_free(c);
        return NULL;
    }
    c->read_only = t->read_only;
    c->param_headers = t->param_headers;
    c->flags = t->flags;
    c->timeout_ms = t->timeout_ms;
    c->handler = t->handler;
    c->user_data = t->user_data;
    c->user_data_free = t->user_data_free;
    c->has_task = t->has_task;
    c->task = t->task;
    c->plugin = t->plugin;
    return c;
}

static struct resource_entry *resource_copy(const struct resource_entry *r)
{
    struct resource_entry *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->uri = dup_opt(r->uri);
    c->uri_template = dup_opt(r->uri_template);
    c->name = strdup(r->name);
    c->title = dup_opt(r->title);
    c->description = dup_opt(r->description);
    c->mime_type = dup_opt(r->mime_type);
    if ((r->uri && !c->uri) || (r->uri_template && !c->uri_template) ||
        !c->name || (r->title && !c->title) ||
        (r->description && !c->description) ||
        (r->mime_type && !c->mime_type)) {
        resource_free(c);
        return NULL;
    }
    c->flags = r->flags;
    c->read = r->read;
    c->user_data = r->user_data;
    c->user_data_free = r->user_data_free;
    c->plugin = r->plugin;
    return c;
}

static struct prompt_entry *prompt_copy(const struct prompt_entry *p)
{
    struct prompt_entry *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->name = strdup(p->name);
    c->title = dup_opt(p->title);
    c->description = strdup(p->description);
    c->arguments = cJSON_Duplicate(p->arguments, true);
    if (!c->name || (p->title && !c->title) || !c->description ||
        (p->arguments && !c->arguments)) {
        prompt_free(c);
        return NULL;
    }
    c->get = p->get;
    c->user_data = p->user_data;
    c->user_data_free = p->user_data_free;
    c->plugin = p->plugin;
    return c;
}

static int copy_tools(struct registry *dst, const struct registry *src,
                      const struct loaded_plugin *plugin, char *err,
                      size_t errlen)
{
    struct tool_entry *t = NULL;
    size_t i = 0;

    for (i = 0; i < src->n_tools; i++) {
        if (src->tools[i]->plugin != plugin)
            continue;
        if (tool_taken(dst, src->tools[i]->original_name, err, errlen))
            return RLMCP_EEXIST;
        if (grow((void **)&dst->tools, &dst->cap_tools, dst->n_tools,
                 sizeof(*dst->tools)) < 0 ||
            (t = tool_copy(src->tools[i])) == NULL)
            goto oom;
        dst->tools[dst->n_tools++] = t;
    }
    return RLMCP_OK;
oom:
    errbuf_set(err, errlen, "out of memory");
    return RLMCP_ENOMEM;
}

static int copy_others(struct registry *dst, const struct registry *src,
                       const struct loaded_plugin *plugin, char *err,
                       size_t errlen)
{
    struct resource_entry *r = NULL;
    struct prompt_entry *p = NULL;
    size_t i = 0;

    for (i = 0; i < src->n_res; i++) {
        const struct resource_entry *e = src->res[i];
        if (e->plugin != plugin)
            continue;
        if (resource_taken(dst, e->uri ? e->uri : e->uri_template, err, errlen))
            return RLMCP_EEXIST;
        if (grow((void **)&dst->res, &dst->cap_res, dst->n_res,
                 sizeof(*dst->res)) < 0 ||
            (r = resource_copy(e)) == NULL)
            goto oom;
        dst->res[dst->n_res++] = r;
    }
    for (i = 0; i < src->n_prompts; i++) {
        if (src->prompts[i]->plugin != plugin)
            continue;
        if (prompt_taken(dst, src->prompts[i]->name, err, errlen))
            return RLMCP_EEXIST;
        if (grow((void **)&dst->prompts, &dst->cap_prompts, dst->n_prompts,
                 sizeof(*dst->prompts)) < 0 ||
            (p = prompt_copy(src->prompts[i])) == NULL)
            goto oom;
        dst->prompts[dst->n_prompts++] = p;
    }
    return RLMCP_OK;
oom:
    errbuf_set(err, errlen, "out of memory");
    return RLMCP_ENOMEM;
}

int registry_copy_plugin(struct registry *dst, const struct registry *src,
                         struct loaded_plugin *plugin, char *err, size_t errlen)
{
    int rc = RLMCP_OK;

    if (dst->frozen || src->frozen) {
        errbuf_set(err, errlen,
                   "a plugin's entries are copied before selection");
        return RLMCP_ESTATE;
    }
    rc = copy_tools(dst, src, plugin, err, errlen);
    if (rc == RLMCP_OK)
        rc = copy_others(dst, src, plugin, err, errlen);
    return rc;
}

/* ---- unregistering ----------------------------------------------------- */

void registry_remove_plugin(struct registry *reg,
                            const struct loaded_plugin *plugin)
{
    size_t i = 0;
    size_t kept = 0;

    for (i = 0, kept = 0; i < reg->n_tools; i++) {
        struct tool_entry *t = reg->tools[i];
        if (t->plugin != plugin) {
            reg->tools[kept++] = t;
            continue;
        }
        if (t->user_data_free != NULL)
            t->user_data_free(t->user_data);
        tool_free(t);
    }
    reg->n_tools = kept;
    for (i = 0, kept = 0; i < reg->n_res; i++) {
        struct resource_entry *r = reg->res[i];
        if (r->plugin != plugin) {
            reg->res[kept++] = r;
            continue;
        }
        if (r->user_data_free != NULL)
            r->user_data_free(r->user_data);
        resource_free(r);
    }
    reg->n_res = kept;
    for (i = 0, kept = 0; i < reg->n_prompts; i++) {
        struct prompt_entry *p = reg->prompts[i];
        if (p->plugin != plugin) {
            reg->prompts[kept++] = p;
            continue;
        }
        if (p->user_data_free != NULL)
            p->user_data_free(p->user_data);
        prompt_free(p);
    }
    reg->n_prompts = kept;
}

void registry_release_plugin(struct registry *reg,
                             const struct loaded_plugin *plugin)
{
    size_t i = 0;

    for (i = 0; i < reg->n_tools; i++) {
        struct tool_entry *t = reg->tools[i];
        if (t->plugin != plugin || t->user_data_free == NULL)
            continue;
        t->user_data_free(t->user_data);
        t->user_data_free = NULL;
        t->user_data = NULL;
    }
    for (i = 0; i < reg->n_res; i++) {
        struct resource_entry *r = reg->res[i];
        if (r->plugin != plugin || r->user_data_free == NULL)
            continue;
        r->user_data_free(r->user_data);
        r->user_data_free = NULL;
        r->user_data = NULL;
    }
    for (i = 0; i < reg->n_prompts; i++) {
        struct prompt_entry *p = reg->prompts[i];
        if (p->plugin != plugin || p->user_data_free == NULL)
            continue;
        p->user_data_free(p->user_data);
        p->user_data_free = NULL;
        p->user_data = NULL;
    }
}

void registry_free(struct registry *reg)
{
    size_t i = 0;

    if (reg == NULL)
        return;
    for (i = 0; i < reg->n_tools; i++)
        tool_free(reg->tools[i]);
    for (i = 0; i < reg->n_res; i++)
        resource_free(reg->res[i]);
    for (i = 0; i < reg->n_prompts; i++)
        prompt_free(reg->prompts[i]);
    free(reg->tools);
    free(reg->sel);
    free(reg->res);
    free(reg->prompts);
    toolsets_free(reg->toolsets);
    free(reg);
}

const struct toolsets *registry_toolsets(const struct registry *reg)
{
    return reg->toolsets;
}

void registry_set_toolsets(struct registry *reg, struct toolsets *ts)
{
    toolsets_free(reg->toolsets);
    reg->toolsets = ts;
}

/* ---- lookups ----------------------------------------------------------- */

static int cmp_tool_ptr(const void *a, const void *b)
{
    const struct tool_entry *const *x = a;
    const struct tool_entry *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static int cmp_prompt_ptr(const void *a, const void *b)
{
    const struct prompt_entry *const *x = a;
    const struct prompt_entry *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

const struct tool_entry *registry_find_tool(const struct registry *reg,
                                            const char *name)
{
    size_t lo = 0;
    size_t hi = reg->n_sel;

    if (name == NULL)
        return NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, reg->sel[mid]->name);
        if (c == 0)
            return reg->sel[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

size_t registry_tool_count(const struct registry *reg)
{
    return reg->n_sel;
}

const struct tool_entry *registry_tool_at(const struct registry *reg, size_t i)
{
    return i < reg->n_sel ? reg->sel[i] : NULL;
}

size_t registry_all_tool_count(const struct registry *reg)
{
    return reg->n_tools;
}

size_t registry_resource_count(const struct registry *reg)
{
    return reg->n_res;
}

const struct resource_entry *registry_resource_at(const struct registry *reg,
                                                  size_t i)
{
    return i < reg->n_res ? reg->res[i] : NULL;
}

size_t registry_prompt_count(const struct registry *reg)
{
    return reg->n_prompts;
}

const struct prompt_entry *registry_prompt_at(const struct registry *reg,
                                              size_t i)
{
    return i < reg->n_prompts ? reg->prompts[i] : NULL;
}

const struct prompt_entry *registry_find_prompt(const struct registry *reg,
                                                const char *name)
{
    size_t i = 0;

    if (name == NULL)
        return NULL;
    for (i = 0; i < reg->n_prompts; i++) {
        if (strcmp(reg->prompts[i]->name, name) == 0)
            return reg->prompts[i];
    }
    return NULL;
}

void registry_install_selection(struct registry *reg, struct tool_entry **sel,
                                size_t n)
{
    free(reg->sel);
    reg->sel = sel;
    reg->n_sel = n;
    if (sel != NULL && n > 1)
        qsort(reg->sel, n, sizeof(*reg->sel), cmp_tool_ptr);
    if (reg->n_prompts > 1)
        qsort(reg->prompts, reg->n_prompts, sizeof(*reg->prompts),
              cmp_prompt_ptr);
    reg->frozen = true;
}

struct tool_entry *registry_registered_tool(struct registry *reg, size_t i)
{
    return i < reg->n_tools ? reg->tools[i] : NULL;
}

const struct tool_entry *registry_find_original(const struct registry *reg,
                                                const char *w, size_t n)
{
    size_t i = 0;

    for (i = 0; i < reg->n_tools; i++) {
        const char *name = reg->tools[i]->original_name;
        if (strlen(name) == n && memcmp(name, w, n) == 0)
            return reg->tools[i];
    }
    return NULL;
}
