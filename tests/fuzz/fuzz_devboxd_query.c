/*
 * fuzz_devboxd_query.c - devboxd's query strings (http_parse_query) and
 * tunnel Host headers (tunnel_parse_host). Input: a query string, a
 * newline, a Host value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "http_server.h"
#include "tunnels.h"

static void check_query(const char *qs)
{
    struct http_request req;
    size_t i;

    memset(&req, 0, sizeof(req));
    if (http_parse_query(&req, qs) == 0) {
        for (i = 0; i < req.n_query; i++) {
            FUZZ_REQUIRE(req.query[i].name != NULL &&
                             req.query[i].value != NULL,
                         "pair %zu incomplete", i);
            FUZZ_REQUIRE(http_request_query(&req, req.query[i].name) != NULL,
                         "parsed name %zu not found again", i);
        }
    }
    http_request_clear(&req);
}

static void check_host(const char *host)
{
    char key[TUNNEL_KEY_LEN + 8];
    int port = -1;
    size_t i;

    memset(key, 'x', sizeof(key));
    if (tunnel_parse_host(host, &port, key, sizeof(key)) != 0)
        return;
    FUZZ_REQUIRE(port >= 1 && port <= 65535, "port %d accepted", port);
    FUZZ_REQUIRE(memchr(key, '\0', sizeof(key)) != NULL, "key not terminated");
    for (i = 0; key[i] != '\0'; i++)
        FUZZ_REQUIRE((key[i] >= 'a' && key[i] <= 'z') ||
                         (key[i] >= '0' && key[i] <= '9'),
                     "key byte 0x%02x accepted", (unsigned char)key[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = NULL;
    char *nl = NULL;

    if (data == NULL)
        return 0; /* the replay driver's final call */
    text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    nl = strchr(text, '\n');
    if (nl != NULL) {
        *nl = '\0';
        check_host(nl + 1);
    }
    check_query(text);
    free(text);
    return 0;
}
