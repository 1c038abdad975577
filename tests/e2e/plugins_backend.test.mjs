// End-to-end: how the plugins report backend failures through the built
// host (cloud backend, official MCP SDK client over stdio):
//  - an unreachable base URL -> `unavailable`, the key never in the message
//  - 5xx answers, then recovery (the host retries; the tool succeeds)
//  - a rejected key (401) -> `unauthenticated` with a remedy, from a fault
//    server and from a real devboxd TCP listener that requires a key.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-cloud.yaml');
const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
const faultBin = path.join(buildDir, 'bin', 'faultserver');
const KEY = 'rk_e2e_secret_key_do_not_log_42';
const LONG = { timeout: 180000 };

const children = [];
function track(child) {
  children.push(child);
  return child;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A host on the cloud backend at baseUrl with key; returns {client, stderr()}. */
async function startHost(baseUrl, key) {
  const transport = new StdioClientTransport({
    command: hostBin,
    args: ['--config', conf],
    env: { PATH: process.env.PATH, RLMCP_PLUGIN_DIR: pluginDir, RUNLOOP_BASE_URL: baseUrl, RUNLOOP_API_KEY: key },
    stderr: 'pipe',
  });
  let stderr = '';
  let ended = false;
  transport.stderr?.on('data', (d) => { stderr += d; });
  transport.stderr?.on('end', () => { ended = true; });
  const client = new Client({ name: 'plugins-backend-e2e', version: '1' });
  await client.connect(transport);
  return { client, stderr: () => stderr, ended: () => ended };
}

function toolError(r) {
  assert.equal(r.isError, true, JSON.stringify(r));
  return JSON.parse(r.content.find((c) => c.type === 'text').text).error;
}

function request(port, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, method, path: p,
      headers: data ? { 'content-type': 'application/json' } : {} }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { buf += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: buf ? JSON.parse(buf) : null }));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

describe('plugins and backend failures', () => {
  let tmp;
  const hosts = [];

  before(() => {
    for (const f of [hostBin, devboxdBin, faultBin, path.join(pluginDir, 'rlmcp_lifecycle.so')]) {
      if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-plugins-backend-'));
  });

  after(async () => {
    for (const h of hosts) {
      try { await h.client.close(); } catch { /* gone */ }
    }
    // Sanitizer builds report at exit on stderr: none may appear.
    for (const h of hosts) {
      await waitFor(() => h.ended(), 15000, 'a host to exit');
      assert.doesNotMatch(h.stderr(), /AddressSanitizer|LeakSanitizer|runtime error/, h.stderr());
    }
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        const gone = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        const t = setTimeout(() => c.kill('SIGKILL'), 20000);
        await gone;
        clearTimeout(t);
      }
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('an unreachable backend is `unavailable`, without the key', LONG, async () => {
    const port = await freePort();
    const h = await startHost(`http://127.0.0.1:${port}`, KEY);
    hosts.push(h);
    const e = toolError(await h.client.callTool({ name: 'get_devbox', arguments: { devbox_id: 'dbx_1' } }, undefined, { timeout: 170000 }));
    assert.equal(e.code, 'unavailable');
    assert.match(e.message, /could not be reached/);
    assert.ok(e.remedy);
    assert.ok(!JSON.stringify(e).includes(KEY), 'the key is not in the error');
    assert.ok(!h.stderr().includes(KEY), 'the key is not in the log');
  });

  it('5xx then recovery; persistent 5xx; 401 from the API', LONG, async () => {
    const fault = track(spawn(faultBin, ['--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] }));
    let out = '';
    fault.stdout.on('data', (d) => { out += d; });
    const m = await waitFor(() => out.match(/listening on 127\.0\.0\.1:(\d+)/), 10000, 'the fault server');
    const port = Number(m[1]);
    const h = await startHost(`http://127.0.0.1:${port}`, KEY);
    hosts.push(h);
    const quick503 = { status: 503, headers: { 'retry-after-ms': '10' }, body: '{"message":"busy"}', content_type: 'application/json' };
    const devbox = { status: 200, body: '{"id":"dbx_1","status":"running"}', content_type: 'application/json' };

    await request(port, 'POST', '/__script', [quick503, quick503, devbox]);
    let r = await h.client.callTool({ name: 'get_devbox', arguments: { devbox_id: 'dbx_1' } });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent.id, 'dbx_1');
    const log = (await request(port, 'GET', '/__log')).body;
    const hits = log.filter((x) => x.url.startsWith('/v1/devboxes/dbx_1'));
    assert.equal(hits.length, 3, 'two 503s retried, then 200');
    assert.equal(hits[0].headers.authorization, `Bearer ${KEY}`);

    await request(port, 'POST', '/__reset');
    const quick500 = { status: 500, headers: { 'retry-after-ms': '10' }, body: '{"message":"engine exploded"}', content_type: 'application/json' };
    await request(port, 'POST', '/__script', Array(10).fill(quick500));
    let e = toolError(await h.client.callTool({ name: 'get_devbox', arguments: { devbox_id: 'dbx_1' } }));
    assert.equal(e.code, 'internal');
    assert.match(e.message, /HTTP 500: engine exploded/);

    await request(port, 'POST', '/__reset');
    await request(port, 'POST', '/__script', [{ status: 401, body: '{"message":"invalid API key"}', content_type: 'application/json' }]);
    e = toolError(await h.client.callTool({ name: 'list_devboxes', arguments: {} }));
    assert.equal(e.code, 'unauthenticated');
    assert.match(e.remedy, /RUNLOOP_API_KEY/);
    assert.match(e.message, /invalid API key/);

    await request(port, 'POST', '/__reset');
    e = toolError(await h.client.callTool({ name: 'list_devboxes', arguments: {} }));
    assert.equal(e.code, 'internal', 'a 200 without a devboxes list is malformed');
  });

  it('a key rejected by a real devboxd is `unauthenticated`; the right key works', LONG, async () => {
    const state = path.join(tmp, 'state');
    const keyFile = path.join(tmp, 'key');
    writeFileSync(keyFile, 'ak_right_key_123\n', { mode: 0o600 });
    const engine = track(spawn(devboxdBin, ['--state-dir', state, '--listen', `unix:${path.join(state, 'devboxd.sock')}`,
      '--listen', '127.0.0.1:0', '--api-key-file', keyFile], { stdio: ['ignore', 'ignore', 'pipe'] }));
    let engErr = '';
    engine.stderr.on('data', (d) => { engErr += d; });
    const pidFile = path.join(state, 'devboxd.pid');
    const port = await waitFor(() => {
      if (engine.exitCode !== null) throw new Error(`devboxd exited: ${engErr}`);
      if (!existsSync(pidFile)) return null;
      const m = readFileSync(pidFile, 'utf8').match(/^port (\d+)$/m);
      return m ? Number(m[1]) : null;
    }, 30000, 'devboxd to write its port');

    const wrong = await startHost(`http://127.0.0.1:${port}`, 'ak_wrong_key');
    hosts.push(wrong);
    const e = toolError(await wrong.client.callTool({ name: 'list_devboxes', arguments: {} }));
    assert.equal(e.code, 'unauthenticated');
    assert.match(e.remedy, /RUNLOOP_API_KEY/);
    assert.ok(!wrong.stderr().includes('ak_wrong_key'));

    const right = await startHost(`http://127.0.0.1:${port}`, 'ak_right_key_123');
    hosts.push(right);
    const r = await right.client.callTool({ name: 'list_devboxes', arguments: {} });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.ok(Array.isArray(r.structuredContent.devboxes));
  });
});
