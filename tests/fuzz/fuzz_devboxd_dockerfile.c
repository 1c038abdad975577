/*
 * fuzz_devboxd_dockerfile.c - the blueprint Dockerfile parser
 * (dockerfile_parse). Input: the Dockerfile text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockerfile.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct df_file f;
    char err[512];
    char *text = NULL;
    size_t i;

    if (data == NULL)
        return 0; /* the replay driver's final call */
    if (size > DOCKERFILE_MAX)
        return 0;
    text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    memset(&f, 0, sizeof(f));
    err[0] = '\0';
    if (dockerfile_parse(text, &f, err, sizeof(err)) == 0) {
        for (i = 0; i < f.n; i++) {
            FUZZ_REQUIRE(f.steps[i].text != NULL, "step %zu without text", i);
            FUZZ_REQUIRE(f.steps[i].line >= 1, "step %zu on line %d", i, f.steps[i].line);
            FUZZ_REQUIRE(dockerfile_kind_name(f.steps[i].kind) != NULL, "step %zu kind", i);
        }
    } else {
        FUZZ_REQUIRE(err[0] != '\0', "a refused Dockerfile has no message");
    }
    dockerfile_free(&f);
    free(text);
    return 0;
}
