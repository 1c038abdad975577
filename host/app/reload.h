/*
 * reload.h - live reload: SIGHUP re-reads the deployment file.
 *
 * The signal handler only writes a byte to a pipe; a reload thread reads
 * the file, loads what changed (loader_reload: plugins whose path and
 * config are unchanged are kept, not initialised again), applies the tool
 * selection and has the dispatcher serve the new deployment, then sends
 * notifications/tools/list_changed to every session. Anything wrong (YAML,
 * a schema error, a plugin that fails to load or init, a selection error)
 * is logged with file:line:col where there is one, and the running
 * deployment stays. Calls in progress finish on the deployment they
 * started on; the thread releases a replaced deployment, and unloads the
 * plugins only it used, once its last call has ended. Only plugins:,
 * tools:, host.plugin_dir, host.on_plugin_error and host.call_timeout_ms
 * are re-read; the rest of the file applies at the next start.
 */
#ifndef RLMCP_HOST_RELOAD_H
#define RLMCP_HOST_RELOAD_H

struct mcp_dispatcher;
struct reloader;

/*
 * Block SIGHUP in the calling thread and the threads it starts from now
 * on; call it before starting any. The reload thread alone takes the
 * signal, so a SIGHUP that comes before it runs waits for it.
 */
void reload_block_signal(void);

struct host_config;

/*
 * Start the reload thread and install the SIGHUP handler. start is the
 * deployment as read at start (borrowed until reload_stop): its file is
 * re-read, and a change to a setting read at start only is reported. NULL
 * (logged) when that is not possible: SIGHUP is then ignored.
 */
struct reloader *reload_start(struct mcp_dispatcher *d,
                              const struct host_config *start);

/*
 * Ask for a reload as SIGHUP does (for tests); it runs on the thread.
 */
void reload_request(struct reloader *r);

/* Reloads done so far, successful and refused (for tests). */
unsigned reload_count(struct reloader *r, unsigned *failed);

/*
 * Stop: SIGHUP is ignored from now on, a reload in progress finishes, the
 * thread ends, and replaced deployments are released (those still used by
 * a call go with it). Call after the dispatcher has drained. NULL is fine.
 */
void reload_stop(struct reloader *r);

#endif
