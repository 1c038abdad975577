/*
 * cli_client.c - `runloop-mcp install-client claude|cursor|vscode|codex`:
 * add (or update) this server in an MCP client's config file, keeping
 * every other entry, showing the change as a diff, writing atomically with
 * the old file kept as FILE.bak. The key is never written in clear unless
 * --write-key asks for it; by default the entry runs the local engine.
 */
#define _GNU_SOURCE /* asprintf */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend.h"

#define CLIENT_MAX_FILE (4u << 20)

enum client_kind { CL_CLAUDE, CL_CURSOR, CL_VSCODE, CL_CODEX };

struct client_opts {
    enum client_kind kind;
    const char *file;       /* --config: the client's config file */
    const char *http_url;   /* --http URL */
    const char *deployment; /* --deployment: our deployment file */
    const char *name;       /* --name: the entry's name */
    bool cloud;             /* --cloud: the Runloop API, key from env */
    bool write_key;         /* --write-key: the key in clear */
    bool dry_run;
};

/* What the entry says, resolved from the options. */
struct entry {
    char *command;    /* stdio: absolute path of scripts/run or the binary */
    char *deployment; /* absolute, or NULL */
    const char *key;  /* --write-key: the key itself */
};

static const char *const client_names[] = {"claude", "cursor", "vscode",
                                           "codex"};
static const char *const client_titles[] = {"Claude Desktop", "Cursor",
                                            "VS Code", "Codex"};

static void client_usage(FILE *out)
{
    fprintf(
        out,
        "Usage: runloop-mcp install-client claude|cursor|vscode|codex "
        "[OPTION]...\n"
        "Add this server to an MCP client's config file (other entries are "
        "kept;\n"
        "the change is shown as a diff; the old file is kept as FILE.bak).\n"
        "\n"
        "  -c, --config FILE      the client's config file (default: its usual "
        "place:\n"
        "                         claude  ~/.config/Claude/"
        "claude_desktop_config.json\n"
        "                         cursor  ~/.cursor/mcp.json\n"
        "                         vscode  ~/.config/Code/User/mcp.json\n"
        "                         codex   ~/.codex/config.toml)\n"
        "      --http URL         a running HTTP server "
        "(http://127.0.0.1:8000/mcp)\n"
        "                         instead of starting one on stdio\n"
        "  -d, --deployment FILE  the deployment the server runs (default: "
        "its own)\n"
        "      --name NAME        the entry's name (default: runloop)\n"
        "      --cloud            the Runloop API with RUNLOOP_API_KEY taken "
        "from the\n"
        "                         client's environment (default: the local "
        "engine)\n"
        "      --write-key        with --cloud: write the key from "
        "RUNLOOP_API_KEY into\n"
        "                         the file in clear (mode 0600)\n"
        "  -n, --dry-run          show the diff, change nothing\n");
}

static int parse_client_args(int argc, char **argv, struct client_opts *o)
{
    enum { OPT_HTTP = 256, OPT_NAME, OPT_CLOUD, OPT_WRITE_KEY };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"http", required_argument, NULL, OPT_HTTP},
        {"deployment", required_argument, NULL, 'd'},
        {"name", required_argument, NULL, OPT_NAME},
        {"cloud", no_argument, NULL, OPT_CLOUD},
        {"write-key", no_argument, NULL, OPT_WRITE_KEY},
        {"dry-run", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const size_t n_names = sizeof(client_names) / sizeof(client_names[0]);
    size_t i = 0;
    int ch = 0;
    int rc = cli_word(argc, argv, client_names, n_names, client_usage, &i);

    if (rc != 0)
        return rc;
    if (i == n_names) {
        fprintf(stderr,
                "runloop-mcp: install-client: '%s' is not a client this "
                "knows; use claude, cursor, vscode or codex (or --config FILE "
                "with the one whose format matches)\n",
                argv[1]);
        return -1;
    }
    o->kind = (enum client_kind)i;
    o->name = "runloop";
    optind = 2;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":c:d:nh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->file = optarg;
            break;
        case OPT_HTTP:
            o->http_url = optarg;
            break;
        case 'd':
            o->deployment = optarg;
            break;
        case OPT_NAME:
            o->name = optarg;
            break;
        case OPT_CLOUD:
            o->cloud = true;
            break;
        case OPT_WRITE_KEY:
            o->write_key = true;
            break;
        case 'n':
            o->dry_run = true;
            break;
        case 'h':
            client_usage(stdout);
            return 1;
        default:
            return cli_option_error("install-client", ch, argv);
        }
    }
    return cli_no_more_args("install-client", argc, argv);
}

/* The options that cannot go together or are malformed. */
static int check_client_opts(const struct client_opts *o)
{
    const char *p = NULL;

    if (o->name[0] == '\0' || strlen(o->name) > 64) {
        fprintf(stderr, "runloop-mcp: install-client: --name must be 1 to 64 "
                        "characters\n");
        return -1;
    }
    for (p = o->name; *p != '\0'; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')) {
            fprintf(stderr,
                    "runloop-mcp: install-client: --name '%s' may hold only "
                    "letters, digits, '-' and '_'\n",
                    o->name);
            return -1;
        }
    }
    if (o->http_url != NULL && strncmp(o->http_url, "http://", 7) != 0 &&
        strncmp(o->http_url, "https://", 8) != 0) {
        fprintf(stderr,
                "runloop-mcp: install-client: --http '%s' is not an http:// "
                "or https:// URL; e.g. --http http://127.0.0.1:8000/mcp\n",
                o->http_url);
        return -1;
    }
    if (o->http_url != NULL && strpbrk(o->http_url, " \t\r\n\"\\") != NULL) {
        fprintf(stderr, "runloop-mcp: install-client: --http URL has spaces, "
                        "quotes or backslashes\n");
        return -1;
    }
    if (o->http_url != NULL && o->deployment != NULL) {
        fprintf(stderr,
                "runloop-mcp: install-client: --deployment goes with a stdio "
                "server; with --http the running server has its own\n");
        return -1;
    }
    if (o->write_key && !o->cloud) {
        fprintf(stderr, "runloop-mcp: install-client: --write-key goes with "
                        "--cloud\n");
        return -1;
    }
    if (o->write_key && o->kind == CL_CODEX && o->http_url != NULL) {
        fprintf(stderr,
                "runloop-mcp: install-client: Codex takes an HTTP server's "
                "key from an environment variable only (bearer_token_env_var); "
                "leave out --write-key\n");
        return -1;
    }
    if (o->cloud && o->kind == CL_CLAUDE && !o->write_key) {
        fprintf(stderr,
                "runloop-mcp: install-client: Claude Desktop does not expand "
                "environment variables in its config, so --cloud needs the "
                "key written there: add --write-key (the file gets mode "
                "0600), or leave out --cloud to use the local engine\n");
        return -1;
    }
    return 0;
}

static char *home_path(const char *rel)
{
    const char *home = getenv("HOME");
    char *out = NULL;

    if (home == NULL || home[0] == '\0')
        return NULL;
    if (asprintf(&out, "%s/%s", home, rel) < 0)
        return NULL;
    return out;
}

static char *default_file(enum client_kind kind)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *sub = NULL;
    char *out = NULL;

    switch (kind) {
    case CL_CURSOR:
        return home_path(".cursor/mcp.json");
    case CL_CODEX:
        return home_path(".codex/config.toml");
    case CL_CLAUDE:
        sub = "Claude/claude_desktop_config.json";
        break;
    default:
        sub = "Code/User/mcp.json";
        break;
    }
    if (xdg != NULL && xdg[0] == '/') {
        if (asprintf(&out, "%s/%s", xdg, sub) < 0)
            out = NULL;
        return out;
    }
    if (asprintf(&out, ".config/%s", sub) < 0)
        return NULL;
    {
        char *full = home_path(out);
        free(out);
        return full;
    }
}

/*
 * What the client should start: in a source tree (build/bin/runloop-mcp
 * with ../../scripts/run) the script, which rebuilds when sources change;
 * otherwise this binary.
 */
static char *server_command(void)
{
    char self[PATH_MAX];
    char *script = NULL;
    char *slash = NULL;
    char *resolved = NULL;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

    if (n <= 0)
        return NULL;
    self[n] = '\0';
    slash = strrchr(self, '/');
    if (slash != NULL && asprintf(&script, "%.*s/../../scripts/run",
                                  (int)(slash - self), self) >= 0) {
        resolved = realpath(script, NULL);
        free(script);
        if (resolved != NULL && access(resolved, X_OK) == 0)
            return resolved;
        free(resolved);
    }
    return strdup(self);
}

/* ---- reading and writing the file ---------------------------------------- */

/* The file's text ("" when it does not exist), or NULL after a message. */
static char *read_text(const char *path, bool *existed)
{
    struct stat st;
    FILE *f = NULL;
    char *buf = NULL;
    size_t got = 0;

    *existed = false;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return strdup("");
        fprintf(stderr, "runloop-mcp: install-client: %s: %s\n", path,
                strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > CLIENT_MAX_FILE) {
        fprintf(stderr,
                "runloop-mcp: install-client: %s is not a regular file of at "
                "most 4 MiB\n",
                path);
        return NULL;
    }
    f = fopen(path, "re");
    if (f == NULL) {
        fprintf(stderr, "runloop-mcp: install-client: %s: %s\n", path,
                strerror(errno));
        return NULL;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf != NULL) {
        got = fread(buf, 1, (size_t)st.st_size, f);
        buf[got] = '\0';
    }
    fclose(f);
    *existed = true;
    return buf;
}

static int mkdir_parents(const char *path)
{
    char buf[PATH_MAX];
    size_t i = 0;
    size_t n = strlen(path);

    if (n >= sizeof(buf))
        return -1;
    memcpy(buf, path, n + 1);
    for (i = 1; i < n; i++) {
        if (buf[i] != '/')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -1;
        buf[i] = '/';
    }
    return 0;
}

/*
 * Atomic replace: FILE.tmp, fsync, FILE -> FILE.bak, rename. The old
 * file's mode is kept; a file holding a key gets 0600 whatever it had.
 */
static int write_text(const char *path, const char *text, bool existed,
                      bool secret)
{
    struct stat st;
    mode_t mode = secret ? 0600 : 0644;
    char *tmp = NULL;
    char *bak = NULL;
    int fd = -1;
    int rc = -1;
    size_t len = strlen(text);

    if (existed && !secret && stat(path, &st) == 0)
        mode = st.st_mode & 0777;
    if (mkdir_parents(path) != 0 || asprintf(&tmp, "%s.tmp", path) < 0) {
        tmp = NULL;
        goto out;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || fchmod(fd, mode) != 0 ||
        write(fd, text, len) != (ssize_t)len || fsync(fd) != 0)
        goto out;
    if (existed) {
        if (asprintf(&bak, "%s.bak", path) < 0) {
            bak = NULL;
            goto out;
        }
        unlink(bak);
        if (link(path, bak) != 0)
            goto out;
    }
    if (rename(tmp, path) != 0)
        goto out;
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "runloop-mcp: install-client: cannot write %s: %s\n",
                path, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (rc != 0 && tmp != NULL)
        unlink(tmp);
    free(tmp);
    free(bak);
    return rc;
}

/* diff -u old new on stdout (diffutils), labelled with path. */
static void show_diff(const char *path, const char *before, const char *after)
{
    char a[] = "/tmp/rlmcp-client-a-XXXXXX";
    char b[] = "/tmp/rlmcp-client-b-XXXXXX";
    char *la = NULL;
    char *lb = NULL;
    int fa = mkstemp(a);
    int fb = mkstemp(b);
    pid_t pid = -1;

    if (fa < 0 || fb < 0 ||
        write(fa, before, strlen(before)) != (ssize_t)strlen(before) ||
        write(fb, after, strlen(after)) != (ssize_t)strlen(after) ||
        asprintf(&la, "%s (before)", path) < 0 ||
        asprintf(&lb, "%s (after)", path) < 0)
        goto out;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        execlp("diff", "diff", "-u", "--label", la, "--label", lb, a, b,
               (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
out:
    if (fa >= 0) {
        close(fa);
        unlink(a);
    }
    if (fb >= 0) {
        close(fb);
        unlink(b);
    }
    free(la);
    free(lb);
}

/* A copy of text with every occurrence of key replaced, for the diff. */
static char *redact(const char *text, const char *key)
{
    static const char shown[] = "<the key from RUNLOOP_API_KEY>";
    size_t klen = key != NULL ? strlen(key) : 0;
    size_t count = 0;
    const char *p = text;
    char *out = NULL;
    char *w = NULL;

    if (klen == 0)
        return strdup(text);
    for (p = strstr(text, key); p != NULL; p = strstr(p + klen, key))
        count++;
    out = malloc(strlen(text) + count * sizeof(shown) + 1);
    if (out == NULL)
        return NULL;
    w = out;
    for (p = text; *p != '\0';) {
        if (strncmp(p, key, klen) == 0) {
            memcpy(w, shown, sizeof(shown) - 1);
            w += sizeof(shown) - 1;
            p += klen;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
    return out;
}

/* ---- the JSON clients ---------------------------------------------------- */

static const char *key_ref(enum client_kind kind)
{
    return kind == CL_CLAUDE ? NULL : "${env:RUNLOOP_API_KEY}";
}

static cJSON *json_entry(const struct client_opts *o, const struct entry *e)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON *args = NULL;
    cJSON *env = NULL;
    const char *key = e->key != NULL ? e->key : key_ref(o->kind);

    if (obj == NULL)
        return NULL;
    if (o->http_url != NULL) {
        if (o->kind != CL_CURSOR)
            cJSON_AddStringToObject(obj, "type", "http");
        cJSON_AddStringToObject(obj, "url", o->http_url);
        if (o->cloud) {
            cJSON *h = cJSON_AddObjectToObject(obj, "headers");
            cJSON_AddStringToObject(h, "X-Runloop-Api-Key", key);
        }
        return obj;
    }
    if (o->kind == CL_VSCODE)
        cJSON_AddStringToObject(obj, "type", "stdio");
    cJSON_AddStringToObject(obj, "command", e->command);
    args = cJSON_AddArrayToObject(obj, "args");
    if (e->deployment != NULL) {
        cJSON_AddItemToArray(args, cJSON_CreateString("--config"));
        cJSON_AddItemToArray(args, cJSON_CreateString(e->deployment));
    }
    env = cJSON_AddObjectToObject(obj, "env");
    if (o->cloud) {
        cJSON_AddStringToObject(env, "RUNLOOP_API_KEY", key);
    } else {
        /* Pin the local engine even when the client's environment has a
         * key: what was asked for is what runs. */
        cJSON_AddStringToObject(env, "RUNLOOP_API_KEY", "");
        cJSON_AddStringToObject(env, "RUNLOOP_BASE_URL", "");
    }
    return obj;
}

/*
 * cJSON_Print indents with tabs and writes "key":\tvalue; editors write two
 * spaces and "key": value. A raw tab is never inside a JSON string (it is
 * escaped there), so every tab is layout.
 */
static char *print_json(const cJSON *doc)
{
    char *raw = cJSON_Print(doc);
    char *out = NULL;
    char *w = NULL;
    const char *p = NULL;

    if (raw == NULL)
        return NULL;
    out = malloc(strlen(raw) * 2 + 2);
    if (out == NULL) {
        free(raw);
        return NULL;
    }
    w = out;
    for (p = raw; *p != '\0'; p++) {
        if (*p == '\t' && p > raw && p[-1] == ':') {
            *w++ = ' ';
        } else if (*p == '\t') {
            *w++ = ' ';
            *w++ = ' ';
        } else {
            *w++ = *p;
        }
    }
    *w++ = '\n';
    *w = '\0';
    free(raw);
    return out;
}

/* The new text of a JSON config, or NULL after a message. */
static char *update_json(const struct client_opts *o, const struct entry *e,
                         const char *path, const char *old_text)
{
    const char *top = o->kind == CL_VSCODE ? "servers" : "mcpServers";
    cJSON *doc = NULL;
    cJSON *servers = NULL;
    cJSON *item = NULL;
    char *out = NULL;
    const char *p = old_text;

    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    doc = *p == '\0' ? cJSON_CreateObject() : cJSON_Parse(old_text);
    if (doc == NULL || !cJSON_IsObject(doc)) {
        fprintf(stderr,
                "runloop-mcp: install-client: %s is not a JSON object "
                "(comments or a trailing comma?); it was left alone. Fix it, "
                "or add this under \"%s\" by hand:\n",
                path, top);
        item = json_entry(o, e);
        out = item ? print_json(item) : NULL;
        fprintf(stderr, "\"%s\": %s", o->name, out ? out : "\n");
        free(out);
        cJSON_Delete(item);
        cJSON_Delete(doc);
        return NULL;
    }
    servers = cJSON_GetObjectItemCaseSensitive(doc, top);
    if (servers != NULL && !cJSON_IsObject(servers)) {
        fprintf(stderr,
                "runloop-mcp: install-client: \"%s\" in %s is not an object; "
                "it was left alone\n",
                top, path);
        cJSON_Delete(doc);
        return NULL;
    }
    if (servers == NULL)
        servers = cJSON_AddObjectToObject(doc, top);
    item = json_entry(o, e);
    if (servers == NULL || item == NULL) {
        cJSON_Delete(item);
        cJSON_Delete(doc);
        return NULL;
    }
    if (cJSON_GetObjectItemCaseSensitive(servers, o->name) != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(servers, o->name, item);
    else
        cJSON_AddItemToObject(servers, o->name, item);
    out = print_json(doc);
    cJSON_Delete(doc);
    return out;
}

/* ---- Codex: TOML ------------------------------------------------------- */

/* s as a TOML basic string (quotes included), appended to *buf. */
static int toml_str(char **buf, const char *s)
{
    size_t n = strlen(s);
    char *q = malloc(n * 6 + 3);
    char *w = q;
    char *joined = NULL;

    if (q == NULL)
        return -1;
    *w++ = '"';
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            *w++ = '\\';
            *w++ = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            w += sprintf(w, "\\u%04x", c);
        } else {
            *w++ = (char)c;
        }
    }
    *w++ = '"';
    *w = '\0';
    if (asprintf(&joined, "%s%s", *buf, q) < 0) {
        free(q);
        return -1;
    }
    free(q);
    free(*buf);
    *buf = joined;
    return 0;
}

static int append(char **buf, const char *s)
{
    char *joined = NULL;

    if (asprintf(&joined, "%s%s", *buf, s) < 0)
        return -1;
    free(*buf);
    *buf = joined;
    return 0;
}

static char *toml_entry(const struct client_opts *o, const struct entry *e)
{
    char *b = NULL;
    int rc = 0;

    if (asprintf(&b, "[mcp_servers.%s]\n", o->name) < 0)
        return NULL;
    if (o->http_url != NULL) {
        rc |= append(&b, "url = ");
        rc |= toml_str(&b, o->http_url);
        rc |= append(&b, "\n");
        if (o->cloud)
            rc |= append(&b, "bearer_token_env_var = \"RUNLOOP_API_KEY\"\n");
    } else {
        rc |= append(&b, "command = ");
        rc |= toml_str(&b, e->command);
        rc |= append(&b, "\nargs = [");
        if (e->deployment != NULL) {
            rc |= append(&b, "\"--config\", ");
            rc |= toml_str(&b, e->deployment);
        }
        rc |= append(&b, "]\n");
        if (o->cloud && e->key == NULL)
            rc |= append(&b, "env_vars = [\"RUNLOOP_API_KEY\"]\n");
        else if (o->cloud)
            rc |= append(&b, "env = { \"RUNLOOP_API_KEY\" = ") |
                  toml_str(&b, e->key) | append(&b, " }\n");
        else
            rc |= append(&b, "env = { \"RUNLOOP_API_KEY\" = \"\", "
                             "\"RUNLOOP_BASE_URL\" = \"\" }\n");
    }
    if (rc != 0) {
        free(b);
        return NULL;
    }
    return b;
}

/* Whether line (up to its newline) is a table header of our entry. */
static bool is_our_header(const char *line, const char *name)
{
    char want[128];
    size_t n = 0;

    while (*line == ' ' || *line == '\t')
        line++;
    n = (size_t)snprintf(want, sizeof(want), "[mcp_servers.%s", name);
    if (strncmp(line, want, n) != 0)
        return false;
    return line[n] == ']' || line[n] == '.';
}

static bool is_header(const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    return *line == '[';
}

/*
 * The new text of a Codex config.toml: our [mcp_servers.NAME] table (and
 * its sub-tables) replaced where it was, or appended. Everything else is
 * kept byte for byte.
 */
static char *update_toml(const struct client_opts *o, const struct entry *e,
                         const char *old_text)
{
    char *block = toml_entry(o, e);
    char *out = NULL;
    const char *p = old_text;
    bool skipping = false;
    bool placed = false;

    if (block == NULL)
        return NULL;
    out = strdup("");
    while (out != NULL && *p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        char *line = strndup(p, len);

        if (line == NULL) {
            free(out);
            out = NULL;
            break;
        }
        if (is_header(line))
            skipping = is_our_header(line, o->name);
        if (skipping && !placed) {
            if (append(&out, block) != 0 || append(&out, "\n") != 0)
                out = NULL;
            placed = true;
        }
        if (out != NULL && !skipping && append(&out, line) != 0)
            out = NULL;
        free(line);
        p += len;
    }
    if (out != NULL && !placed) {
        size_t n = strlen(out);
        int rc = 0;

        if (n > 0 && out[n - 1] != '\n')
            rc |= append(&out, "\n");
        if (n > 0)
            rc |= append(&out, "\n");
        rc |= append(&out, block);
        if (rc != 0) {
            free(out);
            out = NULL;
        }
    }
    free(block);
    return out;
}

/* ---- the command --------------------------------------------------------- */

static int resolve_entry(const struct client_opts *o, struct entry *e)
{
    if (o->cloud && o->write_key) {
        e->key = getenv("RUNLOOP_API_KEY");
        if (e->key == NULL || e->key[0] == '\0') {
            fprintf(stderr, "runloop-mcp: install-client: --write-key writes "
                            "RUNLOOP_API_KEY, which is not set\n");
            return -1;
        }
        if (backend_key_is_placeholder(e->key) ||
            strpbrk(e->key, " \t\r\n\"\\") != NULL) {
            fprintf(stderr,
                    "runloop-mcp: install-client: RUNLOOP_API_KEY does not "
                    "look like a Runloop API key (a placeholder, or spaces "
                    "or quotes); nothing was written\n");
            return -1;
        }
    }
    if (o->http_url != NULL)
        return 0;
    e->command = server_command();
    if (e->command == NULL) {
        fprintf(stderr, "runloop-mcp: install-client: cannot find this "
                        "program's path (/proc/self/exe)\n");
        return -1;
    }
    if (o->deployment != NULL) {
        e->deployment = backend_absolute_path(o->deployment);
        if (e->deployment == NULL || access(e->deployment, R_OK) != 0) {
            fprintf(stderr,
                    "runloop-mcp: install-client: deployment %s cannot be "
                    "read: %s\n",
                    o->deployment, strerror(errno));
            return -1;
        }
    }
    return 0;
}

int cli_client_main(int argc, char **argv)
{
    struct client_opts o;
    struct entry e;
    char *path = NULL;
    char *before = NULL;
    char *after = NULL;
    bool existed = false;
    int rc = CLI_EXIT_USAGE;
    int parsed = 0;

    memset(&o, 0, sizeof(o));
    memset(&e, 0, sizeof(e));
    parsed = parse_client_args(argc, argv, &o);
    if (parsed != 0)
        return parsed > 0 ? 0 : CLI_EXIT_USAGE;
    if (check_client_opts(&o) != 0 || resolve_entry(&o, &e) != 0)
        goto out;
    path = o.file != NULL ? strdup(o.file) : default_file(o.kind);
    if (path == NULL) {
        fprintf(stderr, "runloop-mcp: install-client: HOME is not set; give "
                        "the client's config file with --config FILE\n");
        goto out;
    }
    rc = EXIT_FAILURE;
    before = read_text(path, &existed);
    if (before == NULL)
        goto out;
    after = o.kind == CL_CODEX ? update_toml(&o, &e, before)
                               : update_json(&o, &e, path, before);
    if (after == NULL)
        goto out;
    if (strcmp(before, after) == 0) {
        printf("%s already has this entry for '%s'; nothing to change\n", path,
               o.name);
        rc = 0;
        goto out;
    }
    {
        /* The key never reaches the terminal, even when written. */
        char *b_shown = redact(before, e.key);
        char *a_shown = redact(after, e.key);

        if (b_shown != NULL && a_shown != NULL)
            show_diff(path, b_shown, a_shown);
        free(b_shown);
        free(a_shown);
    }
    if (o.dry_run) {
        printf("dry run: %s was not changed\n", path);
        rc = 0;
        goto out;
    }
    if (write_text(path, after, existed, e.key != NULL) != 0)
        goto out;
    printf("wrote %s%s; restart %s to load '%s'\n", path,
           existed ? " (the old one is kept as .bak)" : "",
           client_titles[o.kind], o.name);
    rc = 0;
out:
    free(path);
    free(before);
    free(after);
    free(e.command);
    free(e.deployment);
    return rc;
}
