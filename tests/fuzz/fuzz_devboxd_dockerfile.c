/*
 * fuzz_devboxd_dockerfile.c - the blueprint Dockerfile buildah builds
 * (buildah_dockerfile_prepare: parses the user's Dockerfile and writes the one buildah
 * gets). Input: the Dockerfile text; every FROM resolves to one image.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "buildah_dockerfile.h"
#include "fuzz_util.h"

static int resolve_any(void *ctx, const char *name, char **local, char *err,
                       size_t errlen)
{
    (void)ctx;
    (void)name;
    (void)err;
    (void)errlen;
    *local = strdup("localhost/devboxd-fuzz:base");
    return *local != NULL ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buildah_dockerfile_out out;
    cJSON *params = NULL;
    char err[512];
    char *text = NULL;
    size_t i;

    if (data == NULL)
        return 0; /* the replay driver's final call */
    if (size > BD_DOCKERFILE_MAX)
        return 0;
    text = malloc(size + 1);
    params = cJSON_CreateObject();
    if (text == NULL || params == NULL)
        goto out;
    memcpy(text, data, size);
    text[size] = '\0';
    if (strlen(text) != size ||
        cJSON_AddStringToObject(params, "dockerfile", text) == NULL)
        goto out; /* JSON strings hold no NUL: the API never passes one */
    memset(&out, 0, sizeof(out));
    err[0] = '\0';
    if (buildah_dockerfile_prepare(params, resolve_any, NULL, &out, err,
                                   sizeof(err)) == 0) {
        FUZZ_REQUIRE(out.text != NULL, "no Dockerfile for buildah");
        for (i = 0; i < out.n_steps; i++) {
            FUZZ_REQUIRE(out.steps[i].emit != NULL, "step %zu emits nothing",
                         i);
            FUZZ_REQUIRE(out.steps[i].line >= 0, "step %zu on line %d", i,
                         out.steps[i].line);
        }
    } else {
        FUZZ_REQUIRE(err[0] != '\0', "a refused Dockerfile has no message");
    }
    buildah_dockerfile_free(&out);
out:
    cJSON_Delete(params);
    free(text);
    return 0;
}
