/* sandbox_oci_userns from several threads at once, as two devboxes or builds
 * starting together call it. Its helper child used to wait for EOF on a
 * pipe of which a child forked by another thread held a copy: two such
 * children waited on each other and both starts hung for ever. The calls
 * run in a forked process with a generous bound, so a hang fails the test
 * instead of stopping the suite. Needs root (user namespace maps). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox_internal.h"

#define THREADS 4
#define CALLS 200
#define BOUND_S 120 /* the fixed code does all calls in about 3 s here */

static void *calls(void *arg)
{
    long failed = 0;
    int i;

    (void)arg;
    for (i = 0; i < CALLS; i++) {
        int fd = sandbox_oci_userns(SB_RANGE_BASE);

        if (fd < 0)
            failed++;
        else
            close(fd);
    }
    return (void *)failed;
}

/* In a child process: 0 when every call made a namespace. */
static int run_all(void)
{
    pthread_t t[THREADS];
    long failed = 0;
    int i;

    for (i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, calls, NULL) != 0)
            return 2;
    for (i = 0; i < THREADS; i++) {
        void *r = NULL;

        pthread_join(t[i], &r);
        failed += (long)r;
    }
    return failed == 0 ? 0 : 1;
}

static void concurrent_calls_end(void **state)
{
    struct timespec start;
    struct timespec now;
    int status = 0;
    pid_t pid;
    pid_t got = 0;

    (void)state;
    if (geteuid() != 0) {
        skip(); /* the maps need root */
        return;
    }
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0); /* its helpers too, to end them all on a hang */
        _exit(run_all());
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        got = waitpid(pid, &status, WNOHANG);
        if (got != 0)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > BOUND_S)
            break;
        usleep(20000);
    }
    if (got == 0) {
        /* Hung: end it and its stuck helpers (its process group). */
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("%d threads x %d sandbox_oci_userns calls did not end within "
                 "%d s (helper children waiting on each other's pipes)",
                 THREADS, CALLS, BOUND_S);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_calls_end),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
