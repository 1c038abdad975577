// http_sessions.test.mjs - HTTP sessions cannot be hoarded, and a session
// belongs to the credentials that opened it (docs/http.md "Sessions"):
//  - 64 initialize requests without credentials (the old table size) and
//    then 1,000 more: a fresh client (the official MCP SDK client) still
//    gets a session, and an authenticated session in use survives the flood
//    (idle sessions that never authenticated are reclaimed first, LRU);
//  - the per-client limit: a client whose sessions all have calls running
//    gets 429 naming server.http.max_sessions_per_client; one with an idle
//    session gets a new one and loses its least recently used; a table full
//    of sessions with calls running answers 429 naming max_sessions;
//  - credential binding: a request on a session with another key, or none,
//    is 403 (POST, GET resume, DELETE) without echoing anything secret; the
//    same key in either header is accepted;
//  - the deployment's per-tool time limit (tools.timeout_ms) ends a call that
//    passes no timeout argument.
// The servers run the conformance fixtures on a cloud backend nothing
// answers (127.0.0.1:9): no tool here calls Runloop.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { startHttpHost, stopHttpHost } from './lib/host.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const SRC = process.env.RLMCP_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
const BUILD = process.env.RLMCP_BUILD_DIR ?? path.join(SRC, 'build');
const KEY_A = 'rl_test_KEYA_0123456789abcdef0123456789abcdef';
const KEY_B = 'rl_test_KEYB_fedcba9876543210fedcba9876543210';
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-http-sessions-'));
const servers = [];

function baseEnv() {
  const env = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins'), RLMCP_STATE_DIR: path.join(work, 'state') };
  delete env.RUNLOOP_API_KEY;
  delete env.RUNLOOP_BASE_URL;
  return env;
}

function writeConf(name, httpOpts, extra = []) {
  const lines = ['server:', '  name: http-sessions', '  http:', '    listen: 127.0.0.1:0'];
  for (const [k, v] of Object.entries(httpOpts)) lines.push(`    ${k}: ${JSON.stringify(v)}`);
  lines.push('runloop:', '  backend: cloud', '  base_url: http://127.0.0.1:9', 'plugins:', '  - name: conformance', ...extra, '');
  const file = path.join(work, `${name}.yaml`);
  writeFileSync(file, lines.join('\n'));
  return file;
}

// Start runloop-mcp; resolve once it logs its port (bounded: 60 s).
function startServer(name, httpOpts = {}, extra = []) {
  return startHttpHost(name, ['-c', writeConf(name, httpOpts, extra), '--transport', 'http', '--log-level', 'info'],
    { env: baseEnv(), list: servers });
}

const stopServer = stopHttpHost;

after(async () => {
  for (const s of servers) await stopServer(s);
  rmSync(work, { recursive: true, force: true });
});

// One raw HTTP request on a fresh connection; the body is read whole.
function request(port, { method = 'POST', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: '/mcp', headers, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error('request timed out')));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const JSON_HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const INIT = JSON.stringify({
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: { sampling: {} }, clientInfo: { name: 'hoarder', version: '1' } },
});

// initialize only, as an attacker would: returns the response.
const bareInit = (port, extra = {}) => request(port, { headers: { ...JSON_HDRS, ...extra }, body: INIT });

async function openSession(port, extra = {}) {
  const r = await bareInit(port, extra);
  assert.equal(r.status, 200, r.body);
  const sid = r.headers['mcp-session-id'];
  const n = await request(port, {
    headers: { ...JSON_HDRS, ...extra, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  assert.equal(n.status, 202, n.body);
  return sid;
}

const inSession = (sid, extra = {}) => ({ ...JSON_HDRS, ...extra, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
const ping = (port, sid, extra = {}) => request(port, { headers: inSession(sid, extra), body: '{"jsonrpc":"2.0","id":5,"method":"ping"}' });

function assertRpcError(r, status, pattern) {
  assert.equal(r.status, status, `status ${r.status}: ${r.body}`);
  const b = JSON.parse(r.body);
  assert.equal(b.jsonrpc, '2.0');
  assert.equal(b.id, null);
  if (pattern) assert.match(b.error.message, pattern);
}

// n requests, at most `width` at a time.
async function inBatches(n, width, fn) {
  const out = [];
  for (let i = 0; i < n; i += width) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + width); j++) batch.push(fn(j));
    out.push(...await Promise.all(batch));
  }
  return out;
}

// A tools/call of test_sampling that stays running (it waits for our answer
// to its sampling request): the session has a call running until `drop()`.
function busyCall(port, sid, extra = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: inSession(sid, extra), agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`tools/call: ${res.statusCode}`));
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (c) => {
        buf += c;
        if (buf.includes('sampling/createMessage')) resolve({ drop: () => req.destroy() });
      });
      res.on('end', () => reject(new Error(`the call ended: ${buf}`)));
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.setTimeout(120000, () => reject(new Error('no sampling request within 120 s')));
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'test_sampling', arguments: { prompt: 'hi' } } }));
  });
}

async function sdkClient(port, headers) {
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers } });
  const client = new Client({ name: 'fresh-client', version: '1' });
  await client.connect(transport);
  return client;
}

test('64 initialize requests without credentials, then 1,000 more: a fresh client still gets a session', async () => {
  const srv = await startServer('hoard', {}); // max_sessions: 64 (the default)
  const clients = [];
  try {
    // A client that authenticated and works, before the flood.
    const early = await sdkClient(srv.port, { 'X-Runloop-Api-Key': KEY_A });
    clients.push(early);
    assert.ok((await early.listTools()).tools.length > 0);

    // The attack of the report: 64 initializes, no credentials, never used.
    const first = await inBatches(64, 16, () => bareInit(srv.port));
    assert.deepEqual(first.map((r) => r.status), Array(64).fill(200));
    const fresh = await sdkClient(srv.port, { 'X-Runloop-Api-Key': KEY_B });
    clients.push(fresh);
    const res = await fresh.callTool({ name: 'test_simple_text', arguments: {} });
    assert.match(res.content[0].text, /simple text/);

    // 1,000 more idle sessions: every initialize is served.
    const flood = await inBatches(1000, 25, () => bareInit(srv.port));
    const refused = flood.filter((r) => r.status !== 200);
    assert.equal(refused.length, 0, `refused: ${refused.slice(0, 3).map((r) => `${r.status} ${r.body}`).join('\n')}`);
    assert.match(srv.log, /ended \(idle, reclaimed for a new session\)/);

    // Fresh clients (SDK) after the flood, with a key and without.
    const late = await sdkClient(srv.port, { 'X-Runloop-Api-Key': KEY_B });
    clients.push(late);
    const res2 = await late.callTool({ name: 'test_simple_text', arguments: {} });
    assert.match(res2.content[0].text, /simple text/);
    const anon = await sdkClient(srv.port, {});
    clients.push(anon);
    assert.ok((await anon.listTools()).tools.length > 0);
    // The sessions that authenticated and were used before the flood are
    // still there: sessions that never authenticated went first.
    assert.ok((await early.listTools()).tools.length > 0);
    assert.ok((await fresh.listTools()).tools.length > 0);
  } finally {
    for (const c of clients) await c.close().catch(() => {});
  }
  await stopServer(srv);
});

// Tools on this cloud backend need a caller key; these sessions carry one.
const K = { 'x-runloop-api-key': KEY_A };

test('per-client limit: 429 when all of the client\'s sessions are busy; its own idle one is reclaimed otherwise', async () => {
  const srv = await startServer('perclient', { max_sessions: 10, max_sessions_per_client: 2 });
  const a = await openSession(srv.port, K);
  const b = await openSession(srv.port, K);
  const busyA = await busyCall(srv.port, a, K);
  const busyB = await busyCall(srv.port, b, K);
  const r = await bareInit(srv.port, K);
  assertRpcError(r, 429, /max_sessions_per_client/);
  assert.ok(r.headers['retry-after']);

  // DELETE ends b and its call: room for one more.
  busyB.drop();
  assert.equal((await request(srv.port, { method: 'DELETE', headers: inSession(b, K) })).status, 200);
  const c = await openSession(srv.port, K);
  // At the limit again, c idle: the next initialize reclaims c, not a.
  const d = await openSession(srv.port, K);
  assertRpcError(await ping(srv.port, c, K), 404, /reclaimed/);
  assert.equal((await ping(srv.port, a, K)).status, 200);
  assert.equal((await ping(srv.port, d, K)).status, 200);
  busyA.drop();
  await stopServer(srv);
});

test('a table full of sessions with calls running: 429 naming max_sessions', async () => {
  const srv = await startServer('full', { max_sessions: 2, max_sessions_per_client: 5 });
  const a = await openSession(srv.port, K);
  const b = await openSession(srv.port, K);
  const busy = [await busyCall(srv.port, a, K), await busyCall(srv.port, b, K)];
  const r = await bareInit(srv.port);
  assertRpcError(r, 429, /server\.http\.max_sessions\)/);
  assert.ok(r.headers['retry-after']);
  for (const x of busy) x.drop();
  await stopServer(srv);
});

test('a session is bound to the credentials that opened it: 403 for another key, none, GET and DELETE', async () => {
  const srv = await startServer('binding', {});
  const sid = await openSession(srv.port, { 'x-runloop-api-key': KEY_A });
  // The same key, in either header: served.
  assert.equal((await ping(srv.port, sid, { 'x-runloop-api-key': KEY_A })).status, 200);
  assert.equal((await ping(srv.port, sid, { authorization: `Bearer ${KEY_A}` })).status, 200);
  for (const other of [{ 'x-runloop-api-key': KEY_B }, { authorization: `Bearer ${KEY_B}` }, {}]) {
    const r = await ping(srv.port, sid, other);
    assertRpcError(r, 403, /opened with other credentials/);
    assert.ok(!r.body.includes(KEY_A) && !r.body.includes(KEY_B), r.body);
    const call = await request(srv.port, {
      headers: inSession(sid, other),
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'test_simple_text', arguments: {} } }),
    });
    assertRpcError(call, 403);
  }
  const get = await request(srv.port, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': '1-1', 'x-runloop-api-key': KEY_B } });
  assertRpcError(get, 403);
  const del = await request(srv.port, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'x-runloop-api-key': KEY_B } });
  assertRpcError(del, 403);
  // The refused DELETE ended nothing.
  assert.equal((await ping(srv.port, sid, { 'x-runloop-api-key': KEY_A })).status, 200);
  // A session opened without a key does not take one later either.
  const anon = await openSession(srv.port);
  assertRpcError(await ping(srv.port, anon, { 'x-runloop-api-key': KEY_B }), 403);
  assert.equal((await ping(srv.port, anon)).status, 200);
  await stopServer(srv);
  assert.ok(!srv.log.includes(KEY_A) && !srv.log.includes(KEY_B), 'a key is in the log');
  assert.match(srv.log, /refused a request with other credentials/);
});

test('tools.timeout_ms: a call without a timeout argument ends at the deployment\'s limit for that tool', async () => {
  const srv = await startServer('tooltimeout', {}, ['tools:', '  timeout_ms:', '    test_sampling: 1500']);
  const sid = await openSession(srv.port, K);
  // test_sampling waits for a sampling answer that never comes.
  const r = await request(srv.port, {
    headers: inSession(sid, K),
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'test_sampling', arguments: { prompt: 'hi' } } }),
  });
  assert.equal(r.status, 200, r.body);
  const msg = r.body.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6)
    .map((l) => JSON.parse(l.slice(6))).find((m) => m.id === 9);
  assert.ok(msg, r.body);
  const text = msg.result?.content?.[0]?.text ?? JSON.stringify(msg);
  assert.equal(msg.result?.isError, true, text);
  assert.equal(JSON.parse(text).error.code, 'timeout', text);
  assert.match(text, /1500 ms/);
  await stopServer(srv);
});
