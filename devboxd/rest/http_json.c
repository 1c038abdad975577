/* JSON bodies for every front end and handler: a value as the body, and
 * the Runloop error shape {"code": slug, "message": text}, which the front
 * ends also use for their own refusals (413, 431, 408, 503). */
#define _GNU_SOURCE
#include "http.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
