/*
 * replay.c - runs a harness over files and directories of inputs, for
 * builds without libFuzzer (gcc) and for the quick corpus check. Exits 0
 * when every input ran; a failed check aborts with the input's name shown.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    int rc = -1;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        goto out;
    }
    rewind(f);
    buf = malloc((size_t)n + 1); /* +1: never malloc(0) */
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        goto out;
    }
    fprintf(stderr, "replay: %s\n", path);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    rc = 0;
out:
    free(buf);
    if (f != NULL) {
        fclose(f);
    }
    return rc;
}

static int run_path(const char *path, int *count)
{
    struct stat st;
    struct dirent **list = NULL;
    char sub[4096];
    int n;
    int i;
    int rc = 0;

    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s does not exist\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return run_file(path);
    }
    n = scandir(path, &list, NULL, alphasort);
    for (i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            snprintf(sub, sizeof(sub), "%s/%s", path, list[i]->d_name);
            if (run_path(sub, count) != 0) {
                rc = -1;
            }
        }
        free(list[i]);
    }
    free(list);
    return n < 0 ? -1 : rc;
}

int main(int argc, char **argv)
{
    int count = 0;
    int rc = 0;
    int i;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (i = 1; i < argc; i++) {
        if (run_path(argv[i], &count) != 0) {
            rc = 1;
        }
    }
    LLVMFuzzerTestOneInput(NULL, 0); /* lets a harness free its state */
    fprintf(stderr, "replay: %d inputs\n", count);
    return rc;
}
