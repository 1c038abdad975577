/* devboxd SSH access (create_ssh_key): one key pair per devbox, made on
 * the host with ssh-keygen, the private key handed to the caller, the
 * public key accepted by an sshd that devboxd starts inside the devbox per
 * connection (sshd -i, inetd mode: no port listens, inside or outside).
 * Connections come through the tunnel listener's SSH route (port
 * SSH_TUNNEL_PORT of the devbox's SSH tunnel key, tunnel_proxy.c). Memory
 * only; dead once the devbox is shutdown or failed. See docs/devboxd.md,
 * "SSH". */
#ifndef DEVBOXD_SSH_KEYS_H
#define DEVBOXD_SSH_KEYS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "engine.h"

#define SSH_TUNNEL_PORT 22
/* The SSH user of a devbox without launch_parameters.user_parameters. */
#define SSH_USER "user"
/* sshd's LoginGraceTime: an unauthenticated connection ends after it. */
#define SSH_LOGIN_GRACE_S 20
/* SSH connections of one route still inside that grace (not yet known to
 * be authenticated): each holds an sshd in the devbox and a thread. */
#define SSH_PENDING_MAX 8

/* create_ssh_key: 0 with *view, a DevboxCreateSSHKeyResponse {id,
 * ssh_private_key, ssh_user, url} (the devbox's existing key pair when it
 * has one: stable across calls and suspend/resume), or 400 (the devbox
 * ended) or 500 (ssh-keygen failed) with err. */
int ssh_keys_create(struct engine *eng, struct devbox *box, cJSON **view,
                    char *err, size_t errlen);

/* Lock (eng->lock) held. The devbox id of an SSH tunnel key, NULL if
 * unknown; its public key line copied into pub (pub_len bytes). */
const char *ssh_keys_find_locked(const char *key, char *pub, size_t pub_len);

/* The shell command that runs sshd -i inside a devbox for one connection
 * on its stdout (a socket), accepting only the public key pub; its
 * sessions get the environment_variables and secrets of spec (the devbox's
 * create spec). malloc'd (it may hold secret values: explicit_bzero it),
 * NULL when out of memory. */
char *ssh_keys_sshd_command(const char *pub, const cJSON *spec);

/* Lock held. Erases and frees the key pair of devbox box_id (it ended:
 * its key is revoked and the private key must not outlive it in memory). */
void ssh_keys_forget_locked(const char *box_id);

/* Frees every record (at exit). */
void ssh_keys_clear(void);

#endif
