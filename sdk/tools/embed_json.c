/*
 * embed_json.c - rlmcp-embed-json OUT.c OUT.h FILE.json...
 *
 * The build step behind rlmcp_embed_json() (cmake/embed_json.cmake): each
 * tool schema kept as a .json file is checked the way the host will check
 * it at registration (strict JSON, an object, no key twice, a JSON Schema
 * the host's validator can apply) and written into OUT.c as a
 * NUL-terminated compact string named schema_<file stem> ('.' and '-'
 * become '_'), declared in OUT.h. A bad file fails the build with
 * file:line:column and what to fix.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "schema.h"

/* The whole file, NUL-terminated, or NULL after saying why. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0)
        goto out;
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
out:
    if (buf == NULL)
        fprintf(stderr, "%s: cannot read the file\n", path);
    fclose(f);
    return buf;
}

/* Line and column (from 1) of offset `at` in text. */
static void line_col(const char *text, const char *at, int *line, int *col)
{
    const char *p;

    *line = 1;
    *col = 1;
    for (p = text; p < at && *p != '\0'; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* The first key that appears twice in one object, or NULL. */
static const cJSON *duplicate_key(const cJSON *v)
{
    const cJSON *a = NULL;
    const cJSON *b = NULL;
    const cJSON *d = NULL;

    cJSON_ArrayForEach(a, v)
    {
        if (cJSON_IsObject(v)) {
            for (b = a->next; b != NULL; b = b->next) {
                if (strcmp(a->string, b->string) == 0)
                    return b;
            }
        }
        d = duplicate_key(a);
        if (d != NULL)
            return d;
    }
    return NULL;
}

/* The symbol for path: schema_ + its file name without ".json". */
static int symbol_of(const char *path, char *out, size_t outlen)
{
    const char *base = strrchr(path, '/');
    size_t n;
    size_t i;
    bool ok;

    base = base != NULL ? base + 1 : path;
    n = strlen(base);
    ok = n > 5 && strcmp(base + n - 5, ".json") == 0 &&
         n - 5 + sizeof("schema_") <= outlen;
    if (ok)
        strcpy(out, "schema_");
    for (i = 0; ok && i < n - 5; i++) {
        char c = base[i];

        if (c == '.' || c == '-')
            c = '_';
        ok = isalnum((unsigned char)c) || c == '_';
        out[7 + i] = c;
    }
    if (!ok) {
        fprintf(stderr,
                "%s: name the file <name>.json (letters, digits, "
                "'_', '-', '.')\n",
                path);
        return -1;
    }
    out[7 + n - 5] = '\0';
    return 0;
}

/* Parse and check one file; its compact text (malloc'd) or NULL. An
 * outputSchema is named <tool>.out.json. */
static char *check_file(const char *path)
{
    size_t n = strlen(path);
    bool output = n > 9 && strcmp(path + n - 9, ".out.json") == 0;
    char *text = read_file(path);
    const char *end = NULL;
    const cJSON *dup = NULL;
    cJSON *j = NULL;
    char *compact = NULL;
    char err[512] = "";
    int line, col;

    if (text == NULL)
        return NULL;
    j = cJSON_ParseWithOpts(text, &end, true);
    if (j == NULL) {
        line_col(text, end != NULL ? end : text, &line, &col);
        fprintf(stderr, "%s:%d:%d: not valid JSON here\n", path, line, col);
        goto out;
    }
    if (!cJSON_IsObject(j)) {
        fprintf(stderr, "%s:1:1: a tool schema must be a JSON object\n", path);
        goto out;
    }
    dup = duplicate_key(j);
    if (dup != NULL) {
        fprintf(stderr, "%s: key \"%s\" appears twice in one object\n", path,
                dup->string);
        goto out;
    }
    if ((output ? schema_check_tool_output(j, err, sizeof(err))
                : schema_check_tool_input(j, err, sizeof(err))) != 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        goto out;
    }
    compact = cJSON_PrintUnformatted(j);
    if (compact == NULL)
        fprintf(stderr, "%s: out of memory\n", path);
out:
    cJSON_Delete(j);
    free(text);
    return compact;
}

/* One definition: the bytes as a char array, NUL-terminated. */
static void write_def(FILE *c, const char *sym, const char *text)
{
    size_t i;
    size_t n = strlen(text);

    fprintf(c, "const char %s[] = {", sym);
    for (i = 0; i <= n; i++)
        fprintf(c, "%s0x%02x,", i % 12 == 0 ? "\n    " : " ",
                (unsigned char)text[i]);
    fprintf(c, "\n};\n\n");
}

int main(int argc, char **argv)
{
    FILE *c = NULL;
    FILE *h = NULL;
    char sym[256];
    char *text = NULL;
    int rc = 1;
    int i;

    if (argc < 4) {
        fprintf(stderr, "usage: %s OUT.c OUT.h FILE.json...\n", argv[0]);
        return 2;
    }
    c = fopen(argv[1], "w");
    h = fopen(argv[2], "w");
    if (c == NULL || h == NULL) {
        fprintf(stderr, "%s: cannot write the outputs\n", argv[0]);
        goto out;
    }
    fprintf(c, "/* Generated by rlmcp-embed-json: do not edit. */\n\n");
    fprintf(h, "/* Generated by rlmcp-embed-json: do not edit. */\n"
               "#ifndef RLMCP_EMBEDDED_SCHEMAS_H\n"
               "#define RLMCP_EMBEDDED_SCHEMAS_H\n\n");
    for (i = 3; i < argc; i++) {
        if (symbol_of(argv[i], sym, sizeof(sym)) != 0)
            goto out;
        text = check_file(argv[i]);
        if (text == NULL)
            goto out;
        fprintf(c, "/* %s */\n", argv[i]);
        write_def(c, sym, text);
        fprintf(h, "extern const char %s[];\n", sym);
        free(text);
        text = NULL;
    }
    fprintf(h, "\n#endif\n");
    rc = 0;
out:
    free(text);
    if (c != NULL && fclose(c) != 0)
        rc = 1;
    if (h != NULL && fclose(h) != 0)
        rc = 1;
    if (rc != 0) {
        remove(argv[1]);
        remove(argv[2]);
    }
    schema_cleanup();
    return rc;
}
