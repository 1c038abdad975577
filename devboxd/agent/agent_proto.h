/* devboxd <-> devboxd-agent protocol (see docs/sandbox.md, "Agent protocol").
 *
 * Transport: AF_UNIX SOCK_SEQPACKET; one message = one JSON object of at most
 * AGENT_MSG_MAX bytes; file descriptors travel with SCM_RIGHTS.  The master
 * socket is inherited by the agent as fd AGENT_MASTER_FD; no socket path
 * exists in any filesystem, so nothing inside the sandbox can redirect
 * devboxd's connection.
 *
 *  agent -> devboxd, master: {"ev":"hello","version":1}          (once)
 *  devboxd -> agent, master: {"op":"exec","cmd":S,"shell":S|null,"cwd":S|null,
 *                             "env":[S,...], "pty":{"cols":N,"rows":N}|absent}
 *                             + exactly 4 fds: channel, stdin, stdout, stderr
 *                             (with a pty the command's 0/1/2 are the slave)
 *  agent -> devboxd, channel: {"ev":"pty"} + the pty master fd (pty only, first)
 *                             {"ev":"started","pid":N}
 *                             {"ev":"exit","status":N}   (N = code, or 128+signal)
 *                             {"ev":"error","message":S} (command never ran)
 *  devboxd -> agent, channel: {"op":"kill","sig":N}
 *
 * Closing the master makes the agent (pid 1) exit, which ends the sandbox.
 * Closing a channel leaves its command running.
 */
#ifndef DEVBOXD_AGENT_PROTO_H
#define DEVBOXD_AGENT_PROTO_H

#define AGENT_PROTO_VERSION 1
#define AGENT_MASTER_FD 3
#define AGENT_MSG_MAX (64 * 1024)
#define AGENT_EXEC_FDS 4
#define AGENT_STATE_DIR "/run/devbox" /* tmpfs inside the sandbox */
#define AGENT_SHELL_DIR "/run/devbox/shells"
#define AGENT_INSIDE_PATH "/run/devbox/agent"
/* Commands' oom_score_adj above an unprotected agent's (agent.c) */
#define AGENT_CMD_OOM_ADJ_ABOVE 500

#endif
