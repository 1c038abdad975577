// A devboxd on its own state dir, and plain REST to it over its unix
// socket (no key needed there), for tests that need a real engine; and
// that engine with the host over stdio in front of it (startEngineAndHost).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {
  buildDir, checkStdioHostExit, closeStdioHost, connectStdioHost, hostBin, pluginDir, waitFor,
} from './host.mjs';

export const devboxdBin = path.join(buildDir, 'bin', 'devboxd');

export function engineRequest(sock, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath: sock, method, path: p,
      headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {} }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { buf += d; });
      res.on('end', () => {
        if (res.statusCode >= 300) return reject(new Error(`${method} ${p}: ${res.statusCode} ${buf}`));
        try { resolve(buf ? JSON.parse(buf) : null); } catch (e) { reject(e); }
      });
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error('engine request timed out')));
    if (data) req.write(data);
    req.end();
  });
}

/**
 * Start devboxd on stateDir with extra args. Ready once its pid file names
 * its ports (written after its listeners start) and, without a --listen in
 * args, once it answers on its unix socket. pidNumber(key) reads a number
 * from the pid file ("port", "tunnel_port"); stop() kills it, waits and
 * resolves to its exit code (or signal). env: variables set over this
 * process's environment (undefined removes one).
 */
export async function startEngine(stateDir, args = [], { env = {} } = {}) {
  const pidFile = path.join(stateDir, 'devboxd.pid');
  rmSync(pidFile, { force: true });
  const childEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k]; else childEnv[k] = v;
  }
  const child = spawn(devboxdBin, ['--state-dir', stateDir, ...args],
    { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  let exited = false;
  let code = null;
  const gone = new Promise((r) => child.on('exit', (c, sig) => { exited = true; code = c ?? sig; r(); }));
  const sock = args.includes('--listen') ? null : path.join(stateDir, 'devboxd.sock');
  const pidNumber = (key) => {
    const m = existsSync(pidFile) && new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(pidFile, 'utf8'));
    return m ? Number(m[1]) : null;
  };
  await waitFor(async () => {
    if (exited) throw new Error(`devboxd exited early: ${stderr}`);
    if (pidNumber('tunnel_port') === null) return false;
    return !sock || (existsSync(sock) && (await engineRequest(sock, 'GET', '/v1/devboxes?limit=1').then(() => true, () => false)));
  }, 30000, 'devboxd to answer');
  return {
    sock,
    pidNumber,
    stderr: () => stderr,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 30000);
      await gone;
      clearTimeout(t);
      return code;
    },
  };
}

/**
 * What most engine e2e tests start: a devboxd on a fresh temporary state
 * dir (tmp/state) and the built host over stdio in front of it, connected
 * through the official MCP SDK client.
 *
 * name: the client's name and the temporary dir's prefix. plugins: the
 * plugin names the test needs ("exec" for rlmcp_exec.so), checked with the
 * binaries before anything starts. conf: a deployment file, or a function
 * given { tmp, state, engine } that writes one and returns its path.
 * engineArgs / engineEnv: for startEngine. env: the host's variables over
 * PATH, HOME=tmp, RLMCP_PLUGIN_DIR and RLMCP_TEST_STATE_DIR (which the
 * tests/e2e/conf/*-local.yaml deployments read), or a function given
 * { tmp, state, engine } returning them. setup(client) runs before the
 * connect (notification handlers).
 *
 * Resolves to { tmp, state, engine, host, client, reconnect(), stop() }:
 * reconnect() replaces the host by a new one (a host restart); stop()
 * closes the host, stops devboxd and removes tmp, then checks both exited
 * cleanly (no sanitizer report, devboxd's status 0). A start that fails
 * stops what it started.
 */
export async function startEngineAndHost({
  name, conf, plugins = [], engineArgs = [], engineEnv = {}, env = {}, setup,
}) {
  for (const f of [hostBin, devboxdBin, ...plugins.map((p) => path.join(pluginDir, `rlmcp_${p}.so`))]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
  }
  const tmp = mkdtempSync(path.join(os.tmpdir(), `rlmcp-${name}-`));
  const stack = { tmp, state: path.join(tmp, 'state'), engine: null, host: null, client: null };
  let confPath = conf;
  let hostEnv = null;
  const connect = async () => {
    stack.host = await connectStdioHost({ name, args: ['--config', confPath], env: hostEnv, setup });
    stack.client = stack.host.client;
    return stack.client;
  };
  stack.reconnect = async () => {
    await closeStdioHost(stack.host);
    await checkStdioHostExit(stack.host);
    return connect();
  };
  stack.stop = async () => {
    await closeStdioHost(stack.host);
    const code = await stack.engine?.stop();
    rmSync(tmp, { recursive: true, force: true });
    await checkStdioHostExit(stack.host);
    if (stack.engine) {
      const log = stack.engine.stderr();
      assert.doesNotMatch(log, /AddressSanitizer|LeakSanitizer|runtime error/, log.slice(-4000));
      assert.equal(code, 0, `devboxd exited with ${code}:\n${log.slice(-2000)}`);
    }
  };
  try {
    stack.engine = await startEngine(stack.state, engineArgs, { env: engineEnv });
    if (typeof conf === 'function') confPath = await conf(stack);
    const extra = typeof env === 'function' ? env(stack) : env;
    hostEnv = { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir,
      RLMCP_TEST_STATE_DIR: stack.state, ...extra };
    await connect();
  } catch (e) {
    try { await stack.stop(); } catch { /* the start's error says more */ }
    throw e;
  }
  return stack;
}
