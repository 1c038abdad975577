/*
 * fuzz_devboxd_body.c - devboxd's JSON request bodies against their
 * validators: the devbox create body (devbox_spec_validate, which also
 * checks the create's "tunnel" object) and the enable_tunnel body
 * (tunnel_check_spec). Input: a JSON text.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "devbox_spec.h"
#include "fuzz_util.h"
#include "tunnels.h"

static void check_create(const cJSON *body)
{
    char err[512];
    int status = 0;
    cJSON *spec = NULL;

    err[0] = '\0';
    spec = devbox_spec_validate(body, &status, err, sizeof(err));
    if (spec == NULL) {
        FUZZ_REQUIRE(err[0] != '\0', "a refused create body has no message");
        FUZZ_REQUIRE(status >= 400 && status < 500, "refused with status %d",
                     status);
        FUZZ_REQUIRE(memchr(err, '\0', sizeof(err)) != NULL,
                     "message not terminated");
        return;
    }
    FUZZ_REQUIRE(cJSON_IsObject(spec),
                 "an accepted create spec is not an object");
    cJSON_Delete(spec);
}

static void check_tunnel(const cJSON *body)
{
    char err[512];
    int rc;

    err[0] = '\0';
    rc = tunnel_check_spec(body, "", err, sizeof(err));
    FUZZ_REQUIRE(rc == 0 || rc == -1, "tunnel_check_spec returned %d", rc);
    FUZZ_REQUIRE(rc == 0 || err[0] != '\0',
                 "a refused tunnel spec has no message");
    if (rc == 0) {
        cJSON *view = tunnel_new_view(body);

        FUZZ_REQUIRE(view != NULL, "no view for an accepted tunnel spec");
        cJSON_Delete(view);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *body = NULL;

    if (data == NULL)
        return 0; /* the replay driver's final call */
    body = cJSON_ParseWithLength((const char *)data, size);
    if (body == NULL)
        return 0;
    if (cJSON_IsObject(body)) {
        check_create(body);
        check_tunnel(body);
    }
    cJSON_Delete(body);
    return 0;
}
