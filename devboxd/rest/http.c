/* The request model (http.h) as handlers and front ends use it: a
 * request's headers and query parameters, a response's headers and body,
 * JSON bodies, and the Runloop error shape {"code": slug, "message": text},
 * which the front ends also use for their own refusals (413, 431, 408,
 * 503). */
#define _GNU_SOURCE
#include "http.h"

#include <stdarg.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *http_request_header(const struct http_request *req,
                                const char *name)
{
    size_t i;

    for (i = 0; i < req->n_headers; i++) {
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    }
    return NULL;
}

const char *http_request_query(const struct http_request *req, const char *name)
{
    size_t i;

    for (i = 0; i < req->n_query; i++) {
        if (strcmp(req->query[i].name, name) == 0)
            return req->query[i].value;
    }
    return NULL;
}

void http_response_set_header(struct http_response *resp, const char *name,
                              const char *value)
{
    size_t i;

    for (i = 0; i < resp->n_headers; i++) {
        if (strcasecmp(resp->headers[i].name, name) == 0) {
            free(resp->headers[i].value);
            resp->headers[i].value = strdup(value);
            return;
        }
    }
    if (resp->n_headers >= HTTP_MAX_RESP_HEADERS)
        return;
    resp->headers[resp->n_headers].name = strdup(name);
    resp->headers[resp->n_headers].value = strdup(value);
    resp->n_headers++;
}

void http_response_set_body(struct http_response *resp, int status,
                            const char *content_type, char *body, size_t len)
{
    free(resp->body);
    resp->status = status;
    resp->body = body;
    resp->body_len = len;
    if (content_type != NULL)
        http_response_set_header(resp, "content-type", content_type);
}

void http_response_clear(struct http_response *resp)
{
    size_t i;

    for (i = 0; i < resp->n_headers; i++) {
        free(resp->headers[i].name);
        free(resp->headers[i].value);
    }
    free(resp->body);
    if (resp->stream_free != NULL)
        resp->stream_free(resp->stream_ctx);
    memset(resp, 0, sizeof(*resp));
}

static const char *status_slug(int status)
{
    switch (status) {
    case 400:
        return "bad_request";
    case 401:
        return "unauthorized";
    case 403:
        return "forbidden";
    case 404:
        return "not_found";
    case 405:
        return "method_not_allowed";
    case 408:
        return "request_timeout";
    case 409:
        return "conflict";
    case 413:
        return "payload_too_large";
    case 415:
        return "unsupported_media_type";
    case 422:
        return "unprocessable_entity";
    case 423:
        return "disk_read_only";
    case 501:
        return "not_implemented";
    case 503:
        return "service_unavailable";
    case 507:
        return "insufficient_storage";
    default:
        return status >= 500 ? "internal_error" : "error";
    }
}

void http_response_json(struct http_response *resp, int status, cJSON *json)
{
    char *text = NULL;

    text = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    if (text == NULL) {
        text = strdup("{\"message\":\"out of memory\"}");
        status = 500;
    }
    http_response_set_body(resp, status, "application/json", text,
                           text != NULL ? strlen(text) : 0);
}

void http_response_error(struct http_response *resp, int status,
                         const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    cJSON *obj = NULL;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "code", status_slug(status));
    cJSON_AddStringToObject(obj, "message", msg);
    http_response_json(resp, status, obj);
    /* A full or read-only disk stays so until someone frees space: the
     * SDKs retry 5xx unless told not to. */
    if (status == 507 || status == 423)
        http_response_set_header(resp, "x-should-retry", "false");
}
