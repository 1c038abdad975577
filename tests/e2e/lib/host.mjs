// Helpers for the host end-to-end tests: find the built binary, start it
// over stdio as a raw JSON-lines child or through the official MCP SDK
// client, and make sure every process started is gone afterwards.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const sourceDir = process.env.RLMCP_SOURCE_DIR ?? path.resolve(here, '../../..');
export const buildDir = process.env.RLMCP_BUILD_DIR ?? path.join(sourceDir, 'build');
export const hostBin = path.join(buildDir, 'bin', 'runloop-mcp');
export const pluginDir = path.join(buildDir, 'plugins');
export const stdioConf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'stdio.yaml');

export function hostEnv(extra = {}) {
  return { ...process.env, RLMCP_PLUGIN_DIR: pluginDir, ...extra };
}

export function requireBuilt() {
  for (const f of [hostBin, path.join(pluginDir, 'rlmcp_hello.so'),
    path.join(pluginDir, 'rlmcp_testtools.so')]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: build the project first (RLMCP_BUILD_DIR=${buildDir})`);
  }
}

/** Resolve when cond() is true (asked every stepMs); reject after ms with what we waited for. */
export async function waitFor(cond, ms, what, stepMs = 10) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * The host as a raw child: write lines, read parsed JSON lines.
 * stdout must carry only JSON-RPC: a non-JSON line is recorded in `junk`.
 */
export class RawHost {
  constructor({ conf = stdioConf, args = [], env = {} } = {}) {
    this.messages = [];
    this.junk = [];
    this.stderr = '';
    this.exit = null;
    this.child = spawn(hostBin, ['--config', conf, ...args], {
      env: hostEnv(env), stdio: ['pipe', 'pipe', 'pipe'],
    });
    let buf = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try { this.messages.push(JSON.parse(line)); } catch { this.junk.push(line); }
      }
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (d) => { this.stderr += d; });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => { this.exit = { code, signal }; resolve(this.exit); });
    });
    this.child.stdin.on('error', () => {}); // EPIPE after an early exit shows up in the asserts
  }

  /** Write one message (object or raw string/Buffer) followed by '\n'. */
  send(msg) {
    const data = typeof msg === 'string' || Buffer.isBuffer(msg) ? msg : JSON.stringify(msg);
    return new Promise((resolve, reject) => {
      this.child.stdin.write(data, (e) => (e ? reject(e) : undefined));
      this.child.stdin.write('\n', (e) => (e ? reject(e) : resolve()));
    });
  }

  /** The first message matching pred that arrives (or arrived). */
  next(pred, ms = 10000, what = 'a message') {
    return waitFor(() => this.messages.find(pred), ms, what);
  }

  response(id, ms = 10000) {
    return this.next((m) => m.id === id && !('method' in m), ms, `the response to id ${JSON.stringify(id)}`);
  }

  async request(id, method, params) {
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    await this.send(msg);
    return this.response(id);
  }

  async initialize(capabilities = {}) {
    const r = await this.request('init', 'initialize', {
      protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw-test', version: '1' },
    });
    await this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r;
  }

  /** Close stdin and wait for the exit; SIGKILL after ms as a last resort. */
  async close(ms = 10000) {
    if (this.exit) return this.exit;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    const e = await this.exited;
    clearTimeout(timer);
    return e;
  }

  kill() {
    if (!this.exit) this.child.kill('SIGKILL');
  }
}

/**
 * runloop-mcp with args as an HTTP server child; resolves once it logs its
 * port (bounded: ms). The server ({ child, log, port, exited }) is pushed on
 * list first, so an after() can stop it even if the start failed.
 */
export function startHttpHost(name, args, { env, list, ms = 60000 } = {}) {
  const child = spawn(hostBin, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const srv = { child, log: '', port: 0, exited: false };
  list?.push(srv);
  child.stderr.setEncoding('utf8');
  child.on('close', () => { srv.exited = true; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server ${name} did not start:\n${srv.log}`)), ms);
    child.stderr.on('data', (d) => {
      srv.log += d;
      const m = /\(port (\d+)\)/.exec(srv.log);
      if (m && !srv.port) {
        srv.port = Number(m[1]);
        clearTimeout(timer);
        resolve(srv);
      }
    });
    child.on('exit', (code) => { clearTimeout(timer); if (!srv.port) reject(new Error(`server ${name} exited ${code}:\n${srv.log}`)); });
  });
}

/**
 * Stop a startHttpHost server with SIGTERM: a clean exit, and no sanitizer
 * report in its log (the suite also runs on an ASan/UBSan build).
 */
export async function stopHttpHost(srv) {
  if (srv.exited) return;
  const gone = new Promise((r) => srv.child.once('close', (code, sig) => r({ code, sig })));
  srv.child.kill('SIGTERM');
  const t = setTimeout(() => srv.child.kill('SIGKILL'), 20000);
  const { code, sig } = await gone;
  clearTimeout(t);
  assert.doesNotMatch(srv.log, /AddressSanitizer|LeakSanitizer|runtime error:/, srv.log.slice(-4000));
  assert.equal(code, 0, `server exited with ${code ?? sig}:\n${srv.log.slice(-2000)}`);
}

/**
 * The host over stdio through the official MCP SDK client, its stderr kept
 * in err (ended once the host has exited). setup(client) runs before the
 * connect (notification handlers). A host that fails to start is closed.
 */
export async function connectStdioHost({ name, args, env, setup }) {
  const host = { client: new Client({ name, version: '1' }), err: '', ended: false };
  const transport = new StdioClientTransport({ command: hostBin, args, env, stderr: 'pipe' });
  transport.stderr?.on('data', (d) => { host.err += d; });
  transport.stderr?.on('end', () => { host.ended = true; });
  setup?.(host.client);
  try {
    await host.client.connect(transport);
  } catch (e) {
    try { await host.client.close(); } catch { /* already gone */ }
    throw new Error(`host did not start: ${e.message}\n${host.err}`);
  }
  return host;
}

/** Close the client of connectStdioHost (the host then exits). */
export async function closeStdioHost(host) {
  try { await host?.client.close(); } catch { /* already gone */ }
}

/** Wait for a closed host to exit; sanitizer builds report on stderr: none may appear. */
export async function checkStdioHostExit(host) {
  if (!host) return;
  await waitFor(() => host.ended, 15000, 'the host to exit');
  assert.doesNotMatch(host.err, /AddressSanitizer|LeakSanitizer|runtime error/, host.err);
}

/**
 * Keep a child's stderr in log and note its end (gone resolves with
 * { code, sig }); pushed on list so an after() can stop every one.
 */
export function trackChild(list, name, child) {
  const p = { name, child, log: '', exited: false };
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d) => { p.log += d; });
  p.gone = new Promise((r) => child.on('close', (code, sig) => { p.exited = true; r({ code, sig }); }));
  list.push(p);
  return p;
}
