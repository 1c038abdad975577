/* The body of a devbox create, validated: every field checked with a
 * message naming it and what to send instead, and the spec to keep. */
#define _GNU_SOURCE
#include "devbox_spec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "code_mounts.h"
#include "mcp_configs.h"
#include "objects.h"
#include "sandbox.h"
#include "secrets.h"
#include "tunnels.h"
#include "util.h"

/* ----------------------------------------------------------- validation */

static const char *const create_fields[] = {
    "name",
    "blueprint_id",
    "blueprint_name",
    "snapshot_id",
    "launch_parameters",
    "environment_variables",
    "secrets",
    "metadata",
    "entrypoint",
    "mounts",
    "code_mounts",
    "file_mounts",
    "tunnel",
    "gateways",
    "mcp",
    "repo_connection_id",
    NULL,
};

static const char *const lp_fields[] = {
    "resource_size_request",
    "custom_cpu_cores",
    "custom_gb_memory",
    "custom_disk_size",
    "architecture",
    "keep_alive_time_seconds",
    "after_idle",
    "lifecycle",
    "launch_commands",
    "user_parameters",
    "available_ports",
    "required_services",
    "network_policy_id",
    "provisioning_tier",
    NULL,
};

static const char *const size_names[] = {
    "X_SMALL", "SMALL",    "MEDIUM",      "LARGE",
    "X_LARGE", "XX_LARGE", "CUSTOM_SIZE", NULL,
};

static int in_list(const char *s, const char *const *list)
{
    size_t i;

    for (i = 0; list[i] != NULL; i++) {
        if (strcmp(s, list[i]) == 0)
            return 1;
    }
    return 0;
}

static int not_empty(const cJSON *v)
{
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if ((cJSON_IsObject(v) || cJSON_IsArray(v)) && cJSON_GetArraySize(v) == 0)
        return 0;
    return 1;
}

static int check_after_idle(const cJSON *idle, const char *where, char *err,
                            size_t errlen)
{
    static const char *const fields[] = {"idle_time_seconds", "on_idle", NULL};
    const char *on = NULL;
    int64_t secs = 0;
    int present = 0;

    if (idle == NULL || cJSON_IsNull(idle))
        return 0;
    if (!cJSON_IsObject(idle)) {
        snprintf(err, errlen,
                 "'%s' must be an object {idle_time_seconds, on_idle}", where);
        return -1;
    }
    if (util_check_fields(idle, where, fields, err, errlen) != 0 ||
        util_opt_int(idle, "idle_time_seconds", 1, 172800, &secs, &present, err,
                     errlen) != 0 ||
        util_opt_string(idle, "on_idle", &on, err, errlen) != 0)
        return -1;
    if (!present || on == NULL) {
        snprintf(err, errlen, "'%s' needs both idle_time_seconds and on_idle",
                 where);
        return -1;
    }
    if (strcmp(on, "shutdown") != 0 && strcmp(on, "suspend") != 0) {
        snprintf(err, errlen,
                 "'%s.on_idle' must be \"shutdown\" or \"suspend\", got \"%s\"",
                 where, on);
        return -1;
    }
    return 0;
}

/* Runloop's even sizes from 2 GiB, and smaller disks down to devboxd's
 * least (SANDBOX_DISK_MIN_BYTES, enforced by a loop-mounted ext4). */
static int check_disk_size(const cJSON *d, char *err, size_t errlen)
{
    double gib = cJSON_IsNumber(d) ? d->valuedouble : -1;
    double min_gib = (double)SANDBOX_DISK_MIN_BYTES / (1 << 30);

    if (cJSON_IsNumber(d) && gib < min_gib) {
        snprintf(err, errlen,
                 "launch_parameters.custom_disk_size must be at least %g GiB "
                 "(%llu MiB, the smallest devbox disk), got %g",
                 min_gib, (unsigned long long)(SANDBOX_DISK_MIN_BYTES >> 20),
                 gib);
        return -1;
    }
    if (!(gib == 0.25 || gib == 0.5 || gib == 1 ||
          (gib >= 2 && gib <= 64 && fmod(gib, 2) == 0))) {
        snprintf(
            err, errlen,
            "launch_parameters.custom_disk_size must be 0.25, 0.5, 1 or an "
            "even number of GiB from 2 to 64");
        return -1;
    }
    return 0;
}

static int check_custom_size(const cJSON *lp, const char *size, char *err,
                             size_t errlen)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(lp, "custom_cpu_cores");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(lp, "custom_gb_memory");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(lp, "custom_disk_size");
    int custom = size != NULL && strcmp(size, "CUSTOM_SIZE") == 0;
    double cpu, mem;

    if (!custom) {
        if (not_empty(c) || not_empty(m)) {
            snprintf(err, errlen,
                     "custom_cpu_cores and custom_gb_memory need "
                     "resource_size_request \"CUSTOM_SIZE\"");
            return -1;
        }
    } else {
        if (!cJSON_IsNumber(c) || !cJSON_IsNumber(m)) {
            snprintf(err, errlen,
                     "resource_size_request CUSTOM_SIZE needs both "
                     "custom_cpu_cores and custom_gb_memory (numbers)");
            return -1;
        }
        cpu = c->valuedouble;
        mem = m->valuedouble;
        if (!(cpu == 0.5 || cpu == 1 ||
              (cpu >= 2 && cpu <= 16 && fmod(cpu, 2) == 0))) {
            snprintf(err, errlen,
                     "custom_cpu_cores must be 0.5, 1 or an even number up "
                     "to 16, got %g",
                     cpu);
            return -1;
        }
        if (!(mem == 1 || (mem >= 2 && mem <= 64 && fmod(mem, 2) == 0))) {
            snprintf(err, errlen,
                     "custom_gb_memory must be 1 or an even number up to 64, "
                     "got %g",
                     mem);
            return -1;
        }
        if (mem < cpu * 2 || mem > cpu * 8) {
            snprintf(err, errlen,
                     "custom_gb_memory must be 2 to 8 GiB per CPU core "
                     "(%g cores allow %g to %g GiB), got %g",
                     cpu, cpu * 2, cpu * 8, mem);
            return -1;
        }
    }
    if (not_empty(d))
        return check_disk_size(d, err, errlen);
    return 0;
}

static int check_lp_enums(const char *size, const char *arch, const char *tier,
                          const char *np, char *err, size_t errlen)
{
    if (size != NULL && !in_list(size, size_names)) {
        snprintf(err, errlen,
                 "launch_parameters.resource_size_request \"%s\" is not valid; "
                 "use one of X_SMALL, SMALL, MEDIUM, LARGE, X_LARGE, XX_LARGE, "
                 "CUSTOM_SIZE "
                 "(upper case)",
                 size);
        return -1;
    }
    if (arch != NULL && strcmp(arch, "x86_64") != 0) {
        snprintf(err, errlen,
                 "launch_parameters.architecture \"%s\" is not supported by "
                 "the local engine; use \"x86_64\"",
                 arch);
        return -1;
    }
    if (tier != NULL && strcmp(tier, "standard") != 0 &&
        strcmp(tier, "flex") != 0) {
        snprintf(err, errlen,
                 "launch_parameters.provisioning_tier must be \"standard\" or "
                 "\"flex\"");
        return -1;
    }
    if (np != NULL && strcmp(np, "npol_local_deny_all") != 0 &&
        strcmp(np, "npol_local_allow_all") != 0) {
        snprintf(err, errlen,
                 "launch_parameters.network_policy_id \"%s\" is unknown; the "
                 "local engine has the built-in policies npol_local_allow_all "
                 "(default) and "
                 "npol_local_deny_all",
                 np);
        return -1;
    }
    return 0;
}

#define SUSPEND_COMMANDS_MAX 32
#define SUSPEND_COMMAND_MAX_LEN 65536

/* {suspend_commands?: [string], suspend_deadline_ms?: 1-60000}. */
static int check_lifecycle_hooks(const cJSON *h, char *err, size_t errlen)
{
    static const char *const fields[] = {"suspend_commands",
                                         "suspend_deadline_ms", NULL};
    const char *where = "launch_parameters.lifecycle.lifecycle_hooks";
    const cJSON *cmds = NULL;
    const cJSON *c = NULL;
    int64_t ms = 0;
    int n = 0;

    if (h == NULL || cJSON_IsNull(h))
        return 0;
    if (!cJSON_IsObject(h)) {
        snprintf(err, errlen,
                 "%s must be an object {suspend_commands?: [string], "
                 "suspend_deadline_ms?: 1-60000}",
                 where);
        return -1;
    }
    if (util_check_fields(h, where, fields, err, errlen) != 0)
        return -1;
    if (util_opt_int(h, "suspend_deadline_ms", 1, 60000, &ms, NULL, err,
                     errlen) != 0) {
        snprintf(err, errlen,
                 "%s.suspend_deadline_ms must be a whole number of "
                 "milliseconds from 1 to 60000 (default 30000)",
                 where);
        return -1;
    }
    cmds = cJSON_GetObjectItemCaseSensitive(h, "suspend_commands");
    if (cmds == NULL || cJSON_IsNull(cmds))
        return 0;
    if (!cJSON_IsArray(cmds)) {
        snprintf(err, errlen,
                 "%s.suspend_commands must be an array of shell command "
                 "strings",
                 where);
        return -1;
    }
    cJSON_ArrayForEach(c, cmds)
    {
        if (!cJSON_IsString(c) || c->valuestring[0] == '\0' ||
            strlen(c->valuestring) > SUSPEND_COMMAND_MAX_LEN) {
            snprintf(err, errlen,
                     "%s.suspend_commands[%d] must be a non-empty string of "
                     "at most %d bytes",
                     where, n, SUSPEND_COMMAND_MAX_LEN);
            return -1;
        }
        if (++n > SUSPEND_COMMANDS_MAX) {
            snprintf(err, errlen,
                     "%s.suspend_commands has more than %d commands; join "
                     "them into a script",
                     where, SUSPEND_COMMANDS_MAX);
            return -1;
        }
    }
    return 0;
}

static int check_lifecycle(const cJSON *life, char *err, size_t errlen)
{
    static const char *const fields[] = {"after_idle", "resume_triggers",
                                         "lifecycle_hooks", NULL};

    if (life == NULL || cJSON_IsNull(life))
        return 0;
    if (!cJSON_IsObject(life)) {
        snprintf(err, errlen, "launch_parameters.lifecycle must be an object");
        return -1;
    }
    if (util_check_fields(life, "launch_parameters.lifecycle", fields, err,
                          errlen) != 0)
        return -1;
    if (check_lifecycle_hooks(
            cJSON_GetObjectItemCaseSensitive(life, "lifecycle_hooks"), err,
            errlen) != 0)
        return -1;
    return check_after_idle(
        cJSON_GetObjectItemCaseSensitive(life, "after_idle"),
        "launch_parameters.lifecycle.after_idle", err, errlen);
}

/* {username, uid}: who commands run as (runc runtime: root inside). */
static int check_user_parameters(const cJSON *up, char *err, size_t errlen)
{
    static const char *const fields[] = {"username", "uid", NULL};
    const char *name = NULL;
    int64_t uid = -1;

    if (up == NULL || cJSON_IsNull(up))
        return 0;
    if (!cJSON_IsObject(up)) {
        snprintf(err, errlen,
                 "launch_parameters.user_parameters must be an object "
                 "{username, uid}");
        return -1;
    }
    if (util_check_fields(up, "launch_parameters.user_parameters", fields, err,
                          errlen) != 0 ||
        util_opt_string(up, "username", &name, err, errlen) != 0 ||
        util_opt_int(up, "uid", 0, 60000, &uid, NULL, err, errlen) != 0)
        return -1;
    if (name == NULL || uid < 0) {
        snprintf(
            err, errlen,
            "launch_parameters.user_parameters needs both username and uid "
            "(root is {\"username\": \"root\", \"uid\": 0})");
        return -1;
    }
    if (!sandbox_valid_user(name, (uint32_t)uid, err, errlen))
        return -1;
    return 0;
}

static int check_launch_parameters(const cJSON *lp, char *err, size_t errlen)
{
    const char *size = NULL;
    const char *arch = NULL;
    const char *np = NULL;
    const char *tier = NULL;
    const cJSON *cmds = NULL;
    const cJSON *life = NULL;
    const cJSON *it = NULL;
    int64_t ka = 0;

    if (lp == NULL || cJSON_IsNull(lp))
        return 0;
    if (!cJSON_IsObject(lp)) {
        snprintf(err, errlen, "'launch_parameters' must be an object");
        return -1;
    }
    if (util_check_fields(lp, "launch_parameters", lp_fields, err, errlen) !=
            0 ||
        util_opt_string(lp, "resource_size_request", &size, err, errlen) != 0 ||
        util_opt_string(lp, "architecture", &arch, err, errlen) != 0 ||
        util_opt_string(lp, "network_policy_id", &np, err, errlen) != 0 ||
        util_opt_string(lp, "provisioning_tier", &tier, err, errlen) != 0 ||
        util_opt_int(lp, "keep_alive_time_seconds", 1, 172800, &ka, NULL, err,
                     errlen) != 0 ||
        util_opt_string_array(lp, "launch_commands", &cmds, err, errlen) != 0 ||
        util_opt_string_array(lp, "required_services", &it, err, errlen) != 0)
        return -1;
    if (check_lp_enums(size, arch, tier, np, err, errlen) != 0 ||
        check_custom_size(lp, size, err, errlen) != 0)
        return -1;
    if (not_empty(it)) {
        snprintf(err, errlen,
                 "launch_parameters.required_services is not supported by the "
                 "local engine yet; remove it");
        return -1;
    }
    if (check_user_parameters(
            cJSON_GetObjectItemCaseSensitive(lp, "user_parameters"), err,
            errlen) != 0)
        return -1;
    it = cJSON_GetObjectItemCaseSensitive(lp, "available_ports");
    if (it != NULL && !cJSON_IsNull(it) && !cJSON_IsArray(it)) {
        snprintf(err, errlen,
                 "launch_parameters.available_ports must be an array");
        return -1;
    }
    if (check_after_idle(cJSON_GetObjectItemCaseSensitive(lp, "after_idle"),
                         "launch_parameters.after_idle", err, errlen) != 0)
        return -1;
    life = cJSON_GetObjectItemCaseSensitive(lp, "lifecycle");
    return check_lifecycle(life, err, errlen);
}

static int valid_env_name(const char *s)
{
    size_t i;

    if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return 1;
}

static int check_mounts(const cJSON *body, char *err, size_t errlen)
{
    const cJSON *mounts = cJSON_GetObjectItemCaseSensitive(body, "mounts");
    const cJSON *fm = NULL;
    const cJSON *it = NULL;
    int i = 0;

    if (mounts != NULL && !cJSON_IsNull(mounts) && !cJSON_IsArray(mounts)) {
        snprintf(err, errlen, "'mounts' must be an array of mount objects");
        return -1;
    }
    cJSON_ArrayForEach(it, mounts)
    {
        static const char *const fields[] = {"type", "target", "content", NULL};
        const char *type = NULL;
        const char *target = NULL;
        const char *content = NULL;
        char where[32];

        snprintf(where, sizeof(where), "mounts[%d]", i);
        if (!cJSON_IsObject(it) ||
            util_opt_string(it, "type", &type, err, errlen) != 0) {
            snprintf(err, errlen, "'%s' must be an object with a string 'type'",
                     where);
            return -1;
        }
        if (type != NULL && strcmp(type, "object_mount") == 0) {
            if (objects_check_mount(it, where, err, errlen) != 0)
                return -1;
            i++;
            continue;
        }
        if (type == NULL || strcmp(type, "file_mount") != 0) {
            snprintf(err, errlen,
                     "%s.type \"%s\" is not supported by the local engine; use "
                     "\"file_mount\" {target, content} or \"object_mount\" "
                     "{object_id, "
                     "object_path}",
                     where, type ? type : "");
            return -1;
        }
        if (util_check_fields(it, where, fields, err, errlen) != 0 ||
            util_opt_string(it, "target", &target, err, errlen) != 0 ||
            util_opt_string(it, "content", &content, err, errlen) != 0)
            return -1;
        if (target == NULL || target[0] != '/' || content == NULL) {
            snprintf(
                err, errlen,
                "%s needs an absolute 'target' path and a string 'content'",
                where);
            return -1;
        }
        i++;
    }
    if (util_opt_string_map(body, "file_mounts", &fm, err, errlen) != 0)
        return -1;
    cJSON_ArrayForEach(it, fm)
    {
        if (it->string[0] != '/') {
            snprintf(err, errlen,
                     "file_mounts key \"%s\" must be an absolute path",
                     it->string);
            return -1;
        }
    }
    return 0;
}

static int check_unsupported(const cJSON *body, char *err, size_t errlen)
{
    static const char *const later[] = {NULL};
    static const char *const never[] = {"gateways", "repo_connection_id", NULL};
    size_t i;

    for (i = 0; later[i] != NULL; i++) {
        if (not_empty(cJSON_GetObjectItemCaseSensitive(body, later[i]))) {
            snprintf(err, errlen,
                     "'%s' is not supported by the local engine yet; remove it "
                     "to start from the default image",
                     later[i]);
            return -1;
        }
    }
    for (i = 0; never[i] != NULL; i++) {
        if (not_empty(cJSON_GetObjectItemCaseSensitive(body, never[i]))) {
            snprintf(err, errlen,
                     "'%s' is not supported by the local engine; remove it",
                     never[i]);
            return -1;
        }
    }
    return 0;
}

cJSON *devbox_spec_validate(const cJSON *body, int *status, char *err,
                            size_t errlen)
{
    const char *s = NULL;
    const cJSON *map = NULL;
    const cJSON *it = NULL;
    cJSON *spec = NULL;
    static const char *const keep[] = {
        "name",        "metadata", "launch_parameters", "environment_variables",
        "entrypoint",  "mounts",   "file_mounts",       "tunnel",
        "code_mounts", NULL};
    size_t i;

    *status = 400;
    if (!cJSON_IsObject(body)) {
        snprintf(err, errlen, "the request body must be a JSON object");
        return NULL;
    }
    if (util_check_fields(body, "", create_fields, err, errlen) != 0 ||
        check_unsupported(body, err, errlen) != 0 ||
        secrets_check_spec(body, err, errlen) != 0 ||
        mcp_configs_check_spec(body, err, errlen) != 0 ||
        util_opt_string(body, "name", &s, err, errlen) != 0 ||
        util_opt_string(body, "entrypoint", &s, err, errlen) != 0 ||
        util_opt_string_map(body, "metadata", &map, err, errlen) != 0 ||
        util_opt_string_map(body, "environment_variables", &map, err, errlen) !=
            0 ||
        check_launch_parameters(
            cJSON_GetObjectItemCaseSensitive(body, "launch_parameters"), err,
            errlen) != 0 ||
        check_mounts(body, err, errlen) != 0 ||
        code_mounts_check(body, err, errlen) != 0 ||
        tunnel_check_spec(cJSON_GetObjectItemCaseSensitive(body, "tunnel"),
                          "tunnel", err, errlen) != 0 ||
        util_opt_string(body, "snapshot_id", &s, err, errlen) != 0 ||
        util_opt_string(body, "blueprint_id", &s, err, errlen) != 0 ||
        util_opt_string(body, "blueprint_name", &s, err, errlen) != 0)
        return NULL;
    cJSON_ArrayForEach(it, map)
    {
        if (!valid_env_name(it->string)) {
            snprintf(err, errlen,
                     "environment_variables key \"%s\" is not a valid variable "
                     "name (letters, digits and _, not starting with a digit)",
                     it->string);
            return NULL;
        }
    }
    spec = cJSON_CreateObject();
    for (i = 0; keep[i] != NULL; i++) {
        it = cJSON_GetObjectItemCaseSensitive(body, keep[i]);
        if (it != NULL && !cJSON_IsNull(it))
            cJSON_AddItemToObject(spec, keep[i], cJSON_Duplicate(it, 1));
    }
    it = cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    if (it == NULL)
        cJSON_AddItemToObject(spec, "launch_parameters", cJSON_CreateObject());
    *status = 200;
    return spec;
}
