/*
 * param_headers.c - Mcp-Param-{Name} headers against the body (see
 * param_headers.h).
 */
#define _GNU_SOURCE
#include "param_headers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"

#define B64_OPEN "=?base64?"
#define B64_CLOSE "?="
#define NAME_MAX_LEN 128

/* RFC 9110 tchar. */
static bool token_char(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           (ch >= '0' && ch <= '9') ||
           (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static bool header_token(const char *s)
{
    size_t n = strlen(s);
    size_t i;

    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    for (i = 0; i < n; i++) {
        if (!token_char(s[i]))
            return false;
    }
    return true;
}

static bool primitive_type(const cJSON *prop)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(prop, "type");

    if (!cJSON_IsString(type))
        return false;
    return strcmp(type->valuestring, "string") == 0 ||
           strcmp(type->valuestring, "integer") == 0 ||
           strcmp(type->valuestring, "number") == 0 ||
           strcmp(type->valuestring, "boolean") == 0;
}

int param_headers_declared(const cJSON *schema, char *err, size_t errlen)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *p = NULL;
    const cJSON *q = NULL;
    int n = 0;

    cJSON_ArrayForEach(p, props)
    {
        const cJSON *name =
            cJSON_GetObjectItemCaseSensitive(p, PARAM_HEADER_KEYWORD);

        if (name == NULL)
            continue;
        if (!cJSON_IsString(name) || !header_token(name->valuestring)) {
            snprintf(err, errlen,
                     "property '%.128s': %s must be a header name of 1 to "
                     "%d letters, digits or !#$%%&'*+-.^_`|~",
                     p->string, PARAM_HEADER_KEYWORD, NAME_MAX_LEN);
            return -1;
        }
        if (!primitive_type(p)) {
            snprintf(err, errlen,
                     "property '%.128s': %s needs \"type\" string, integer, "
                     "number or boolean",
                     p->string, PARAM_HEADER_KEYWORD);
            return -1;
        }
        for (q = props->child; q != p; q = q->next) {
            const cJSON *other =
                cJSON_GetObjectItemCaseSensitive(q, PARAM_HEADER_KEYWORD);

            if (cJSON_IsString(other) &&
                strcasecmp(other->valuestring, name->valuestring) == 0) {
                snprintf(err, errlen,
                         "properties '%.128s' and '%.128s' declare the same "
                         "%s '%.128s' (header names ignore case)",
                         q->string, p->string, PARAM_HEADER_KEYWORD,
                         name->valuestring);
                return -1;
            }
        }
        n++;
    }
    return n;
}

char *param_header_decode(const char *raw, size_t *len, char *err,
                          size_t errlen)
{
    size_t n = 0;
    size_t inner = 0;
    const char *b64 = NULL;
    char *out = NULL;

    err[0] = '\0';
    while (*raw == ' ' || *raw == '\t')
        raw++;
    n = strlen(raw);
    while (n > 0 && (raw[n - 1] == ' ' || raw[n - 1] == '\t'))
        n--;
    if (n < strlen(B64_OPEN) + strlen(B64_CLOSE) ||
        strncmp(raw, B64_OPEN, strlen(B64_OPEN)) != 0 ||
        memcmp(raw + n - strlen(B64_CLOSE), B64_CLOSE, strlen(B64_CLOSE)) !=
            0) {
        out = strndup(raw, n); /* literal */
        if (out != NULL)
            *len = n;
        return out;
    }
    b64 = raw + strlen(B64_OPEN);
    inner = n - strlen(B64_OPEN) - strlen(B64_CLOSE);
    out = (char *)base64_decode(b64, inner, false, len);
    if (out == NULL)
        snprintf(err, errlen,
                 "its =?base64?...?= value is not valid Base64 (standard "
                 "alphabet, length a multiple of 4, '=' padding)");
    return out;
}

/* Whether the decoded header text stands for the body value v. */
static bool value_matches(const cJSON *v, const char *text, size_t len)
{
    char *end = NULL;
    double d = 0;

    if (cJSON_IsString(v))
        return strlen(v->valuestring) == len &&
               memcmp(v->valuestring, text, len) == 0;
    if (cJSON_IsBool(v))
        return strcmp(text, cJSON_IsTrue(v) ? "true" : "false") == 0;
    if (!cJSON_IsNumber(v) || len == 0 || strlen(text) != len)
        return false;
    d = strtod(text, &end);
    return *end == '\0' && isfinite(d) && d == v->valuedouble;
}

/* One declared parameter; 0 or -1 with err filled. */
static int check_one(const cJSON *prop, const cJSON *args,
                     param_header_fn header, void *user, char *err,
                     size_t errlen)
{
    const char *name =
        cJSON_GetObjectItemCaseSensitive(prop, PARAM_HEADER_KEYWORD)
            ->valuestring;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, prop->string);
    char hname[sizeof(PARAM_HEADER_PREFIX) + NAME_MAX_LEN];
    char why[160];
    const char *raw = NULL;
    char *text = NULL;
    size_t len = 0;
    bool present = v != NULL && !cJSON_IsNull(v);

    snprintf(hname, sizeof(hname), PARAM_HEADER_PREFIX "%s", name);
    raw = header(user, hname);
    if (!present && raw == NULL)
        return 0;
    if (present && !cJSON_IsString(v) && !cJSON_IsNumber(v) && !cJSON_IsBool(v))
        return 0; /* the schema check reports the wrong type */
    if (raw == NULL) {
        snprintf(err, errlen,
                 "the %s header is missing: arguments.%.128s has a value, "
                 "so the header must carry it too",
                 hname, prop->string);
        return -1;
    }
    if (!present) {
        snprintf(err, errlen,
                 "the %s header is set but arguments.%.128s is absent or "
                 "null; send both or neither",
                 hname, prop->string);
        return -1;
    }
    text = param_header_decode(raw, &len, why, sizeof(why));
    if (text == NULL) {
        snprintf(err, errlen, "the %s header: %s", hname,
                 why[0] != '\0' ? why : "out of memory");
        return -1;
    }
    if (!value_matches(v, text, len)) {
        free(text);
        snprintf(err, errlen,
                 "the %s header does not match arguments.%.128s; send the "
                 "same value in both (=?base64?...?= for non-ASCII text)",
                 hname, prop->string);
        return -1;
    }
    free(text);
    return 0;
}

int param_headers_check(const cJSON *schema, const cJSON *args,
                        param_header_fn header, void *user, char *err,
                        size_t errlen)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *p = NULL;

    cJSON_ArrayForEach(p, props)
    {
        if (!cJSON_IsString(
                cJSON_GetObjectItemCaseSensitive(p, PARAM_HEADER_KEYWORD)))
            continue;
        if (check_one(p, args, header, user, err, errlen) != 0)
            return -1;
    }
    return 0;
}
