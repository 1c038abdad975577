/*
 * textmap.c - plugin-written text as this deployment exposes it (see
 * textmap.h). Works on whole words ([A-Za-z0-9_]+, not right after a '/',
 * so API paths such as /v1/devboxes/x/enable_tunnel stay as they are) and
 * on sentences (ended by . ! ? before a space or the end, or a newline).
 */
#include "textmap.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "strbuf.h"

/*
 * The tools of the bundled plugins. A text naming one whose plugin this
 * deployment does not load names a tool the agent cannot call.
 */
static const char *const bundled_tools[] = {
    "create_devbox",
    "list_devboxes",
    "get_devbox",
    "update_devbox",
    "suspend_devbox",
    "resume_devbox",
    "shutdown_devbox",
    "keep_devbox_alive",
    "get_resource_usage",
    "execute_command",
    "execute_command_async",
    "get_execution",
    "wait_for_execution",
    "get_execution_logs",
    "kill_execution",
    "send_execution_stdin",
    "run_shell",
    "run_code",
    "run_python",
    "run_nodejs",
    "run_deno",
    "run_go",
    "run_rust",
    "run_java",
    "run_cpp",
    "run_c",
    "run_ruby",
    "run_php",
    "run_bash",
    "write_file",
    "read_file",
    "upload_file",
    "download_file",
    "list_files",
    "remove_file",
    "create_snapshot",
    "list_snapshots",
    "delete_snapshot",
    "get_snapshot_status",
    "pty_connect",
    "pty_send_command",
    "pty_control",
    "create_pty_tunnel",
    "enable_tunnel",
    "get_tunnel_url",
    "remove_tunnel",
    "build_blueprint",
    "list_blueprints",
    "get_blueprint",
    "get_blueprint_logs",
    "delete_blueprint",
    "list_secrets",
    "create_secret",
    "update_secret",
    "delete_secret",
    "list_mcp_configs",
    "create_mcp_config",
    "update_mcp_config",
    "delete_mcp_config",
    NULL,
};

enum word_kind { W_OTHER, W_SHOWN, W_HIDDEN };

static bool word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static bool same(const char *name, const char *w, size_t n)
{
    return strlen(name) == n && memcmp(name, w, n) == 0;
}

static bool is_bundled(const char *w, size_t n)
{
    size_t i = 0;

    for (i = 0; bundled_tools[i] != NULL; i++) {
        if (same(bundled_tools[i], w, n))
            return true;
    }
    return false;
}

static enum word_kind classify(const struct registry *reg, const char *w,
                               size_t n, const struct tool_entry **t)
{
    *t = registry_find_original(reg, w, n);
    if (*t != NULL)
        return (*t)->selected ? W_SHOWN : W_HIDDEN;
    return is_bundled(w, n) ? W_HIDDEN : W_OTHER;
}

static const char *param_exposed(const struct tool_entry *t, const char *w,
                                 size_t n)
{
    size_t i = 0;

    if (t == NULL)
        return NULL;
    for (i = 0; i < t->n_param_aliases; i++) {
        if (same(t->param_aliases[i].original, w, n))
            return t->param_aliases[i].exposed;
    }
    return NULL;
}

static bool ends_sentence(const char *text, size_t i, size_t n)
{
    char c = text[i];

    if (c == '\n')
        return true;
    if (c != '.' && c != '!' && c != '?')
        return false;
    if (i + 1 < n && !isspace((unsigned char)text[i + 1]))
        return false;
    if (c != '.')
        return true;
    /* "e.g." and "i.e." and "..." do not end a sentence. */
    if (i >= 3 && (memcmp(text + i - 3, "e.g", 3) == 0 ||
                   memcmp(text + i - 3, "i.e", 3) == 0))
        return false;
    return !(i > 0 && text[i - 1] == '.');
}

/* Index just past the sentence starting at s. */
static size_t sentence_end(const char *text, size_t s, size_t n)
{
    size_t i = s;

    while (i < n && !ends_sentence(text, i, n))
        i++;
    return i < n ? i + 1 : n;
}

static size_t word_end(const char *text, size_t i, size_t n)
{
    while (i < n && word_char(text[i]))
        i++;
    return i;
}

static bool word_starts(const char *text, size_t i, size_t s)
{
    if (!word_char(text[i]))
        return false;
    return i == s || (!word_char(text[i - 1]) && text[i - 1] != '/');
}

/* The parentheses around [ws, we) inside [s, e), or false. */
static bool enclosing_parens(const char *text, size_t s, size_t e, size_t ws,
                             size_t we, size_t *open, size_t *close)
{
    size_t j = ws;
    int depth = 0;

    while (j > s) {
        j--;
        if (text[j] == ')') {
            depth++;
        } else if (text[j] == '(') {
            if (depth == 0)
                break;
            depth--;
        }
    }
    if (text[j] != '(' || depth != 0)
        return false;
    *open = j;
    for (j = we; j < e; j++) {
        if (text[j] == '(') {
            depth++;
        } else if (text[j] == ')') {
            if (depth == 0) {
                *close = j;
                return true;
            }
            depth--;
        }
    }
    return false;
}

static const char *const list_seps[] = {", or ", ", and ", ", ",
                                        " or ",  " and ",  NULL};

static bool is_tool_word(const struct registry *reg, const char *text,
                         size_t ws, size_t we)
{
    const struct tool_entry *t = NULL;

    return we > ws && classify(reg, text + ws, we - ws, &t) != W_OTHER;
}

/* Length of a list separator after a word ending at we, before a tool. */
static size_t sep_after(const struct registry *reg, const char *text, size_t we,
                        size_t e)
{
    size_t i = 0;

    for (i = 0; list_seps[i] != NULL; i++) {
        size_t l = strlen(list_seps[i]);
        if (we + l < e && memcmp(text + we, list_seps[i], l) == 0 &&
            is_tool_word(reg, text, we + l, word_end(text, we + l, e)))
            return l;
    }
    return 0;
}

/* Length of a list separator before ws, after a tool name. */
static size_t sep_before(const struct registry *reg, const char *text, size_t s,
                         size_t ws)
{
    size_t i = 0;

    for (i = 0; list_seps[i] != NULL; i++) {
        size_t l = strlen(list_seps[i]);
        size_t pe = ws - l;
        size_t ps = pe;
        if (ws < s + l + 1 || memcmp(text + pe, list_seps[i], l) != 0)
            continue;
        while (ps > s && word_char(text[ps - 1]))
            ps--;
        if (is_tool_word(reg, text, ps, pe))
            return l;
    }
    return 0;
}

/* Clear keep[] for what names a hidden tool in the sentence [s, e). */
static void mark_hidden(const struct registry *reg, const char *text, size_t s,
                        size_t e, size_t next, char *keep)
{
    const struct tool_entry *t = NULL;
    size_t i = s;

    while (i < e) {
        size_t we = 0;
        size_t open = 0;
        size_t close = 0;
        if (!word_starts(text, i, s) || !keep[i]) {
            i++;
            continue;
        }
        we = word_end(text, i, e);
        if (classify(reg, text + i, we - i, &t) == W_HIDDEN) {
            size_t l = 0;
            /* One of a list of tools: drop it and its separator. */
            if ((l = sep_after(reg, text, we, e)) > 0) {
                memset(keep + i, 0, we + l - i);
            } else if ((l = sep_before(reg, text, s, i)) > 0) {
                memset(keep + i - l, 0, we - (i - l));
            } else if (enclosing_parens(text, s, e, i, we, &open, &close)) {
                if (open > s && text[open - 1] == ' ')
                    open--;
                memset(keep + open, 0, close + 1 - open);
            } else {
                memset(keep + s, 0, next - s);
                return;
            }
        }
        i = we;
    }
}

/* Append the kept part of the sentence [s, next), names rewritten. */
static void emit(const struct registry *reg, const struct tool_entry *self,
                 const char *text, size_t s, size_t next, const char *keep,
                 struct strbuf *b)
{
    const struct tool_entry *ctx = self;
    const struct tool_entry *t = NULL;
    const char *p = NULL;
    size_t i = s;

    while (i < next) {
        size_t we = 0;
        if (!keep[i]) {
            i++;
            continue;
        }
        if (!word_starts(text, i, s)) {
            strbuf_add(b, text + i, 1);
            i++;
            continue;
        }
        we = word_end(text, i, next);
        if (classify(reg, text + i, we - i, &t) == W_SHOWN) {
            strbuf_add(b, t->name, strlen(t->name));
            ctx = t;
        } else if ((p = param_exposed(ctx, text + i, we - i)) != NULL ||
                   (p = param_exposed(self, text + i, we - i)) != NULL) {
            strbuf_add(b, p, strlen(p));
        } else {
            strbuf_add(b, text + i, we - i);
        }
        i = we;
    }
}

char *textmap_apply(const struct registry *reg, const struct tool_entry *self,
                    const char *text, int flags)
{
    struct strbuf b = {0};
    size_t n = strlen(text);
    char *keep = NULL;
    size_t s = 0;

    keep = malloc(n + 1);
    if (keep == NULL)
        return NULL;
    memset(keep, 1, n + 1);
    strbuf_add(&b, "", 0);
    while (s < n) {
        size_t e = sentence_end(text, s, n);
        size_t next = e;
        while (next < n && text[next] == ' ')
            next++;
        if (flags & TEXTMAP_DROP_HIDDEN)
            mark_hidden(reg, text, s, e, next, keep);
        emit(reg, self, text, s, next, keep, &b);
        s = next;
    }
    free(keep);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    /* A dropped last sentence leaves the space before it. */
    while (b.len > 0 && b.p[b.len - 1] == ' ')
        b.p[--b.len] = '\0';
    return b.p;
}

const char *textmap_param_name(const struct tool_entry *t, const char *param)
{
    if (param == NULL)
        return NULL;
    return param_exposed(t, param, strlen(param));
}
