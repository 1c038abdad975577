/*
 * test_modules.c - the WebSocket client as a module (host/base/modules.h): a PTY
 * exchange without rlmcp_ws.so fails with a message naming the missing file
 * (every time, without retrying the load), and with the module present the
 * same call reaches the client. Each case runs in a child process: a module
 * is looked up once per process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "modules.h"

#define MODULE_BUILD_DIR RLMCP_BINARY_DIR "/lib/runloop-mcp/modules"

static int no_output(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    (void)data;
    (void)len;
    return 0;
}

/* One exchange with nothing listening, modules from dir. */
static int exchange(const char *dir, char *err, size_t errlen)
{
    struct rlmcp_pty_exchange x = RLMCP_PTY_EXCHANGE_INIT;

    x.connect_url = "/pty/s/attach";
    x.on_output = no_output;
    x.input = "ls\n";
    x.input_len = 3;
    x.max_wait_ms = 5000;
    setenv("RLMCP_MODULE_DIR", dir, 1);
    return modules_ws_pty_exchange("http://127.0.0.1:1", "tok", &x, NULL, NULL,
                                   err, errlen);
}

/* Runs fn in a child; the child's checks decide its exit status. */
static void in_child(void (*fn)(void))
{
    int status = 0;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        fn();
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void check(int ok, const char *what, const char *err)
{
    if (!ok) {
        fprintf(stderr, "%s (err: %s)\n", what, err);
        _exit(1);
    }
}

static void ws_missing(void)
{
    char dir[] = "/tmp/rlmcp-modules-XXXXXX";
    char want[256];
    char err[2600] = "";
    int rc = 0;

    check(mkdtemp(dir) != NULL, "mkdtemp", "");
    snprintf(want, sizeof(want),
             "the WebSocket client is not installed: %s/rlmcp_ws.so is "
             "missing",
             dir);
    rc = exchange(dir, err, sizeof(err));
    check(rc == RLMCP_EINTERNAL, "first exchange is not EINTERNAL", err);
    check(strstr(err, want) != NULL, "no missing-file message", err);
    check(strstr(err, "set RLMCP_MODULE_DIR") != NULL, "no remedy", err);
    /* Installing the module now changes nothing: the reason is kept. */
    err[0] = '\0';
    rc = exchange(MODULE_BUILD_DIR, err, sizeof(err));
    check(rc == RLMCP_EINTERNAL, "second exchange is not EINTERNAL", err);
    check(strstr(err, want) != NULL, "second message differs", err);
    rmdir(dir);
}

static void ws_present(void)
{
    char err[2600] = "";
    int rc = exchange(MODULE_BUILD_DIR, err, sizeof(err));

    /* The client ran: nothing listens on port 1. */
    check(rc == RLMCP_EHTTP, "exchange is not EHTTP", err);
    check(strstr(err, "ws://127.0.0.1:1/pty/s/attach") != NULL,
          "no client message", err);
}

static void t_ws_module_missing(void **state)
{
    (void)state;
    in_child(ws_missing);
}

static void t_ws_module_present(void **state)
{
    (void)state;
    in_child(ws_present);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_ws_module_missing),
        cmocka_unit_test(t_ws_module_present),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
