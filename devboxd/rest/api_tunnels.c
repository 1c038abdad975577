/* The tunnel routes of a devbox: enable_tunnel, remove_tunnel,
 * create_pty_tunnel (the records and PTY tunnels are engine/tunnels.c) and
 * create_ssh_key (its SSH route, engine/ssh_keys.c). */
#define _GNU_SOURCE
#include "api.h"

#include "ssh_keys.h"
#include "tunnels.h"

#define ERRLEN 512

/* The body of an enable_tunnel call: empty means {}.  NULL after
 * answering 413 or 400. */
static cJSON *parse_spec_body(const struct http_request *req,
                              struct http_response *resp)
{
    cJSON *body = NULL;
    char err[ERRLEN] = "";

    if (req->body_too_large) {
        http_response_error(resp, 413, "request body too large");
        return NULL;
    }
    if (req->body_len == 0)
        return cJSON_CreateObject();
    body = cJSON_ParseWithLength(req->body, req->body_len);
    if (body == NULL) {
        http_response_error(
            resp, 400,
            "the body is not valid JSON; send {\"auth_mode\": \"open\"} "
            "or {\"auth_mode\": \"authenticated\"}");
        return NULL;
    }
    if (tunnel_check_spec(body, "", err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

void api_tunnel_enable(struct engine *eng, const struct api_call *call)
{
    cJSON *spec = parse_spec_body(call->req, call->resp);
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status;

    if (spec == NULL)
        return;
    status = tunnel_enable(eng, call->box, spec, &view, err, sizeof(err));
    api_reply(call->resp, status, view, err);
    cJSON_Delete(spec);
}

void api_tunnel_remove(struct engine *eng, const struct api_call *call)
{
    tunnel_remove(eng, call->box);
    api_reply(call->resp, 0, NULL, NULL);
}

void api_tunnel_pty(struct engine *eng, const struct api_call *call)
{
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status;

    status = tunnel_pty_create(eng, call->box, &view, err, sizeof(err));
    api_reply(call->resp, status, view, err);
}

void api_ssh_key(struct engine *eng, const struct api_call *call)
{
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status;

    status = ssh_keys_create(eng, call->box, &view, err, sizeof(err));
    api_reply(call->resp, status, view, err);
}
