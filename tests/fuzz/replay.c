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

/* RLMCP_FUZZ_MUTATIONS=N: also runs N mutations of each input (bytes
 * flipped, cut, inserted or repeated; a fixed seed, so runs repeat): a
 * short fuzz without libFuzzer, for ctest. */
static void mutate_runs(const uint8_t *orig, size_t n)
{
    static uint64_t seed = 0x9e3779b97f4a7c15ULL;
    const char *env = getenv("RLMCP_FUZZ_MUTATIONS");
    long runs = env != NULL ? strtol(env, NULL, 10) : 0;
    uint8_t *buf = NULL;
    long r;

    if (runs <= 0 || (buf = malloc(2 * n + 64)) == NULL)
        return;
    for (r = 0; r < runs; r++) {
        size_t len = n;
        int k;

        memcpy(buf, orig, n);
        for (k = 0; k < 1 + (int)(seed % 4); k++) {
            size_t at;

            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            at = len > 0 ? (size_t)(seed >> 8) % len : 0;
            switch (seed % 4) {
            case 0: /* flip a byte */
                if (len > 0)
                    buf[at] = (uint8_t)(seed >> 24);
                break;
            case 1: /* cut the tail */
                len = at;
                break;
            case 2: /* insert an interesting byte */
                if (len < 2 * n + 32) {
                    static const uint8_t b[] = {'"', '\\', '{',  '}',  '[', ']',
                                                ',', ':',  '\n', '\r', '-', '=',
                                                '&', '%',  '\0', 0xff};
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = b[(seed >> 16) % sizeof(b)];
                    len++;
                }
                break;
            default: /* repeat a chunk */
                if (len - at > 0 && len + 16 < 2 * n + 48) {
                    size_t c = (len - at) < 16 ? len - at : 16;

                    memmove(buf + at + c, buf + at, len - at);
                    len += c;
                }
                break;
            }
        }
        LLVMFuzzerTestOneInput(buf, len);
    }
    free(buf);
}

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
    mutate_runs(buf, (size_t)n);
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
