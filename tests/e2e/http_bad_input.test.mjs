// http_bad_input.test.mjs - the Streamable HTTP transport against bad and
// hostile input, with raw HTTP (node:http, node:net): every refusal has the
// documented status and a JSON-RPC error body, and the server keeps serving.
//
// Servers run the conformance fixtures on a cloud backend whose URL nothing
// answers (127.0.0.1:9) and without a default key: the fixtures never call
// Runloop, and a caller without a key must get "unauthenticated".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { RawHost, startHttpHost, stopHttpHost } from './lib/host.mjs';

const SRC = process.env.RLMCP_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
const BUILD = process.env.RLMCP_BUILD_DIR ?? path.join(SRC, 'build');
const BIN = path.join(BUILD, 'bin', 'runloop-mcp');
const KEY = 'rl_test_SECRET_d41d8cd98f00b204e9800998ecf8427e';
const TOKEN = 'endpoint-token-0123456789abcdef';
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-http-bad-'));
const servers = [];

function baseEnv() {
  const env = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins'), RLMCP_STATE_DIR: path.join(work, 'state') };
  delete env.RUNLOOP_API_KEY;
  delete env.RUNLOOP_BASE_URL;
  return env;
}

const CLOUD = { backend: 'cloud', base_url: 'http://127.0.0.1:9' };

function writeConf(name, http, runloop = CLOUD) {
  const lines = ['server:', '  name: http-bad-input', '  http:', '    listen: 127.0.0.1:0'];
  for (const [k, v] of Object.entries(http)) lines.push(`    ${k}: ${JSON.stringify(v)}`);
  lines.push('runloop:');
  for (const [k, v] of Object.entries(runloop)) lines.push(`  ${k}: ${JSON.stringify(v)}`);
  lines.push('plugins:', '  - name: conformance', '');
  const file = path.join(work, `${name}.yaml`);
  writeFileSync(file, lines.join('\n'));
  return file;
}

// Start runloop-mcp; resolve once it logs its port (bounded: 60 s).
function startServer(name, http, extraArgs = [], runloop = CLOUD) {
  const conf = writeConf(name, http, runloop);
  return startHttpHost(name, ['-c', conf, '--transport', 'http', '--log-level', 'debug', ...extraArgs],
    { env: baseEnv(), list: servers });
}

const stopServer = stopHttpHost;

// One raw HTTP request on a fresh connection; the body is read whole.
function request(port, { method = 'POST', path: p = '/mcp', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.setTimeout(30000, () => req.destroy(new Error('request timed out')));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const JSON_HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const init = (id = 0, caps = {}) => JSON.stringify({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: caps, clientInfo: { name: 'bad-input', version: '1' } },
});

async function openSession(port, extra = {}, caps = {}) {
  const r = await request(port, { headers: { ...JSON_HDRS, ...extra }, body: init(0, caps) });
  assert.equal(r.status, 200, r.body);
  const sid = r.headers['mcp-session-id'];
  assert.match(sid, /^[0-9a-f]{32}$/);
  const n = await request(port, {
    headers: { ...JSON_HDRS, ...extra, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  assert.equal(n.status, 202);
  return sid;
}

function assertRpcError(r, status, pattern) {
  assert.equal(r.status, status, `status ${r.status}: ${r.body}`);
  const b = JSON.parse(r.body);
  assert.equal(b.jsonrpc, '2.0');
  assert.equal(b.id, null);
  assert.equal(typeof b.error?.code, 'number');
  if (pattern) assert.match(b.error.message, pattern);
}

// Parse SSE text into events [{id, data}].
function sseEvents(text) {
  return text.split('\n\n').filter((b) => b.trim()).map((block) => {
    const ev = { id: undefined, data: '' };
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) ev.id = line.slice(4);
      else if (line.startsWith('data: ')) ev.data += line.slice(6);
    }
    return ev;
  });
}

// tools/call test_simple_text; returns the parsed result (JSON or SSE reply).
async function callSimple(port, sid, headers = {}) {
  const r = await request(port, {
    headers: { ...JSON_HDRS, 'mcp-session-id': sid, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'test_simple_text', arguments: {} } }),
  });
  return resultOf(r, 9);
}

// The result of request id from a 200 answer, sent as JSON or as SSE.
function resultOf(r, id) {
  assert.equal(r.status, 200, r.body);
  const msg = r.body.trimStart().startsWith('{')
    ? JSON.parse(r.body)
    : sseEvents(r.body).filter((e) => e.data).map((e) => JSON.parse(e.data)).find((m) => m.id === id);
  assert.ok(msg, r.body);
  return msg.result;
}

let S; // the main server
before(async () => {
  S = await startServer('main', { max_body_bytes: 4096, max_connections: 1010, max_sessions: 40, allow_query_key: true });
});

after(async () => {
  for (const s of servers) await stopServer(s);
  rmSync(work, { recursive: true, force: true });
});

test('health and root answer without credentials, with no details', async () => {
  const h = await request(S.port, { method: 'GET', path: '/health' });
  assert.equal(h.status, 200);
  assert.deepEqual(JSON.parse(h.body), { status: 'ok' });
  const r = await request(S.port, { method: 'GET', path: '/' });
  assert.equal(r.status, 200);
  assert.equal(JSON.parse(r.body).name, 'http-bad-input');
  assert.equal(typeof JSON.parse(r.body).version, 'string');
});

test('wrong Accept -> 406', async () => {
  const r = await request(S.port, { headers: { ...JSON_HDRS, accept: 'text/html' }, body: init() });
  assertRpcError(r, 406, /Accept/);
  const only = await request(S.port, { headers: { ...JSON_HDRS, accept: 'application/json' }, body: init() });
  assertRpcError(only, 406, /text\/event-stream/);
});

test('wrong Content-Type -> 415', async () => {
  const r = await request(S.port, { headers: { ...JSON_HDRS, 'content-type': 'text/plain' }, body: init() });
  assertRpcError(r, 415, /Content-Type: application\/json/);
});

/** A GET that resolves once the headers arrive; close() ends it. */
function openGet(port, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'GET', path: '/mcp', headers, agent: false }, (res) => {
      const ended = new Promise((r) => { res.on('end', r); res.on('close', r); });
      res.resume();
      resolve({ status: res.statusCode, headers: res.headers, ended, close: () => req.destroy() });
    });
    req.on('error', (e) => { if (e.code !== 'ECONNRESET') reject(e); });
    req.end();
  });
}

test('GET without an SSE Accept -> 406; a standalone GET stream per session, a new one ends the old', async () => {
  const sid = await openSession(S.port);
  const r = await request(S.port, { method: 'GET', headers: { accept: 'application/json', 'mcp-session-id': sid } });
  assertRpcError(r, 406, /text\/event-stream/);
  const g = await openGet(S.port, { accept: 'text/event-stream', 'mcp-session-id': sid });
  assert.equal(g.status, 200);
  assert.match(g.headers['content-type'], /text\/event-stream/);
  const g2 = await openGet(S.port, { accept: 'text/event-stream', 'mcp-session-id': sid });
  assert.equal(g2.status, 200);
  await g.ended; // the first stream ends: one per session
  g2.close();
  const none = await request(S.port, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'nope' } });
  assert.equal(none.status, 404);
  // DELETE ends the session and its GET stream.
  const g3 = await openGet(S.port, { accept: 'text/event-stream', 'mcp-session-id': sid });
  assert.equal(g3.status, 200);
  const del = await request(S.port, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(del.status, 200);
  await g3.ended;
});

test('body over the limit -> 413 (declared length and chunked)', async () => {
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(8000) } });
  const r = await request(S.port, { headers: JSON_HDRS, body: big });
  assertRpcError(r, 413, /max_body_bytes/);
  const chunked = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: S.port, method: 'POST', path: '/mcp', agent: false,
      headers: { ...JSON_HDRS, 'transfer-encoding': 'chunked' } }, (res) => {
      let d = ''; res.on('data', (c) => { d += c; }); res.on('end', () => resolve({ status: res.statusCode, body: d }));
    });
    req.on('error', reject);
    for (let i = 0; i < 10; i++) req.write('x'.repeat(1000));
    req.end();
  });
  assertRpcError(chunked, 413, /max_body_bytes/);
});

test('malformed JSON -> 400 parse error; batches and non-2.0 -> 400', async () => {
  const r = await request(S.port, { headers: JSON_HDRS, body: '{"jsonrpc":"2.0","id":1,"method":' });
  assertRpcError(r, 400);
  assert.equal(JSON.parse(r.body).error.code, -32700);
  const batch = await request(S.port, { headers: JSON_HDRS, body: '[' + init() + ']' });
  assertRpcError(batch, 400, /batch/);
  // An id that can be read is answered (as over stdio).
  const v1 = await request(S.port, { headers: JSON_HDRS, body: '{"jsonrpc":"1.0","id":1,"method":"ping"}' });
  assert.equal(v1.status, 400, v1.body);
  assert.equal(JSON.parse(v1.body).id, 1);
  assert.equal(JSON.parse(v1.body).error.code, -32600);
  assert.match(JSON.parse(v1.body).error.message, /"jsonrpc" must be the string "2\.0"/);
});

// One rule reads a message on both transports (protocol/intake.c,
// intake_parse): what is wrong with the envelope gets the same JSON-RPC
// error, code, message and id, in a POST body (400) as in a stdio line.
test('envelope refusals: a POST gets the error a stdio line gets', async () => {
  const conf = writeConf('stdio-twin', {}, { ...CLOUD, api_key: 'e2e-unused-key' });
  const stdio = new RawHost({ conf, args: ['--transport', 'stdio'], env: baseEnv() });
  const cases = [
    ['a batch', '[' + init() + ']'],
    ['an empty batch', '[]'],
    ['not an object', '"ping"'],
    ['invalid JSON', '{"jsonrpc":"2.0","id":1,"method":'],
    ['data after the message', '{"jsonrpc":"2.0","id":1,"method":"ping"} {}'],
    ['no "jsonrpc"', '{"id":"nov","method":"ping"}'],
    ['"jsonrpc" 1.0', '{"jsonrpc":"1.0","id":7,"method":"ping"}'],
    ['a null id', '{"jsonrpc":"2.0","id":null,"method":"ping"}'],
    ['a method that is not a string', '{"jsonrpc":"2.0","id":"m","method":5}'],
    ['params that are not an object', '{"jsonrpc":"2.0","id":"p","method":"ping","params":[1]}'],
    // A tool would see "a" only: refused, not cut short.
    ['a NUL in a string', '{"jsonrpc":"2.0","id":"z","method":"tools/call","params":{"name":"test_simple_text","arguments":{"t":"a\\u0000b"}}}'],
  ];
  try {
    for (const [what, body] of cases) {
      const before = stdio.messages.length;
      await stdio.send(body);
      const line = await stdio.next((x) => stdio.messages.indexOf(x) >= before && x.error !== undefined, 20000,
        `the stdio answer to ${what}`);
      const post = await request(S.port, { headers: JSON_HDRS, body });
      assert.equal(post.status, 400, `${what}: status ${post.status}: ${post.body}`);
      const b = JSON.parse(post.body);
      assert.deepEqual(b, line, `${what}: HTTP and stdio answer alike`);
      assert.equal(typeof b.error.message, 'string');
      assert.ok(b.error.message.length > 20, `${what}: says what to fix: ${b.error.message}`);
    }
    // The batch refusal names what to do, on both.
    const batch = await request(S.port, { headers: JSON_HDRS, body: '[]' });
    assert.deepEqual(JSON.parse(batch.body).error, {
      code: -32600,
      message: 'batches are not supported since 2025-06-18; send each JSON-RPC message on its own',
    });
  } finally {
    const exit = await stdio.close(30000);
    assert.equal(exit.code, 0, stdio.stderr.slice(-2000));
    assert.deepEqual(stdio.junk, []);
  }
});

test('missing, unknown and deleted session ids -> 400 / 404 / 404', async () => {
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' });
  const none = await request(S.port, { headers: JSON_HDRS, body: ping });
  assertRpcError(none, 400, /Mcp-Session-Id/);
  const unknown = await request(S.port, { headers: { ...JSON_HDRS, 'mcp-session-id': 'f'.repeat(32) }, body: ping });
  assertRpcError(unknown, 404, /initialize/);
  const sid = await openSession(S.port);
  const ok = await request(S.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: ping });
  assert.equal(ok.status, 200);
  assert.deepEqual(JSON.parse(ok.body).result, {});
  const del = await request(S.port, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(del.status, 200);
  const reuse = await request(S.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: ping });
  assertRpcError(reuse, 404);
  const del2 = await request(S.port, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assertRpcError(del2, 404);
});

test('MCP-Protocol-Version: unsupported -> 400, any supported one accepted', async () => {
  const sid = await openSession(S.port);
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping' });
  const bad = await request(S.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' }, body: ping });
  assertRpcError(bad, 400, /unsupported MCP-Protocol-Version '1999-01-01'; this server speaks 2025-11-25, 2025-06-18 and 2025-03-26 after initialize, and 2026-07-28 per request/);
  for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
    const ok = await request(S.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid, 'mcp-protocol-version': v }, body: ping });
    assert.equal(ok.status, 200, v);
  }
});

test('foreign Origin -> 403; loopback Origin accepted', async () => {
  const r = await request(S.port, { headers: { ...JSON_HDRS, origin: 'https://evil.example.com' }, body: init() });
  assertRpcError(r, 403, /Origin/);
  const ok = await request(S.port, { headers: { ...JSON_HDRS, origin: `http://localhost:${S.port}` }, body: init() });
  assert.equal(ok.status, 200);
});

test('non-loopback Host -> 403 (DNS rebinding)', async () => {
  const r = await request(S.port, { headers: { ...JSON_HDRS, host: 'evil.example.com' }, body: init() });
  assertRpcError(r, 403, /Host/);
  const port = await request(S.port, { headers: { ...JSON_HDRS, host: '127.0.0.1:1' }, body: init() });
  assertRpcError(port, 403, /Host/);
  for (const h of [`localhost:${S.port}`, `127.0.0.1:${S.port}`, `[::1]:${S.port}`]) {
    const ok = await request(S.port, { headers: { ...JSON_HDRS, host: h }, body: init() });
    assert.equal(ok.status, 200, h);
  }
});

test('api_key in the URL is refused unless allow_query_key is on', async () => {
  const off = await startServer('noquery', {});
  const r = await request(off.port, { path: `/mcp?api_key=${KEY}`, headers: JSON_HDRS, body: init() });
  assertRpcError(r, 400, /allow_query_key/);
  assert.ok(!r.body.includes(KEY));
  await stopServer(off);
});

test('no Runloop key on an API-URL backend -> unauthenticated with a remedy; a key gets through', async () => {
  const sid = await openSession(S.port);
  // A session belongs to the key that opened it: the keyed calls get their own.
  const keyed = await openSession(S.port, { 'x-runloop-api-key': KEY });
  const call = (headers, p = '/mcp', s = sid) => request(S.port, {
    path: p, headers: { ...JSON_HDRS, 'mcp-session-id': s, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'test_simple_text', arguments: {} } }),
  });
  const r = await call({});
  const res = resultOf(r, 9);
  assert.ok(res, `expected a result, got: ${r.body}`);
  assert.equal(res.isError, true);
  const err = JSON.parse(res.content[0].text).error;
  assert.equal(err.code, 'unauthenticated');
  assert.match(err.remedy, /X-Runloop-Api-Key/);
  // Discovery still works without a key.
  const list = await request(S.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: '{"jsonrpc":"2.0","id":10,"method":"tools/list"}' });
  assert.ok(JSON.parse(list.body).result.tools.length > 0);
  for (const [hdrs, p] of [[{ 'x-runloop-api-key': KEY }, '/mcp'], [{ authorization: `Bearer ${KEY}` }, '/mcp'], [{}, `/mcp?api_key=${KEY}`]]) {
    const ok = await call(hdrs, p, keyed);
    assert.equal(ok.status, 200);
    const text = sseEvents(ok.body).map((e) => e.data).filter(Boolean).map((d) => JSON.parse(d)).find((m) => m.id === 9);
    assert.ok(text, ok.body);
    assert.ok(text.result, `expected a result, got: ${JSON.stringify(text)}`);
    assert.notEqual(text.result.isError, true, JSON.stringify(text));
    assert.match(text.result.content[0].text, /simple text/);
  }
});

test('a deployment key: callers need no key of their own (the local engine: see tests/conformance)', async () => {
  const keyed = await startServer('keyed', {}, [], { ...CLOUD, api_key: 'server-side-key-0123456789' });
  const sid = await openSession(keyed.port);
  const res = await callSimple(keyed.port, sid);
  assert.notEqual(res.isError, true, JSON.stringify(res));
  await stopServer(keyed);
  assert.ok(!keyed.log.includes('server-side-key-0123456789'), 'the deployment key is in the log');
});

test('idle sessions expire -> 404', async () => {
  const short = await startServer('idle', { session_idle_seconds: 1 });
  const sid = await openSession(short.port);
  const ping = () => request(short.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: '{"jsonrpc":"2.0","id":3,"method":"ping"}' });
  assert.equal((await ping()).status, 200);
  // Wait without touching the session (a request would keep it alive) until
  // the server reports the expiry; bounded at 20 s for a loaded machine.
  for (let i = 0; i < 200 && !/ended \(idle timeout\)/.test(short.log); i++) {
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.match(short.log, /ended \(idle timeout\)/);
  assertRpcError(await ping(), 404, /expired/);
  await stopServer(short);
});

test('session limit: a full table of idle sessions reclaims the least recently used (429s: http_sessions)', async () => {
  const small = await startServer('sessions', { max_sessions: 3 });
  const sids = [];
  for (let i = 0; i < 3; i++) sids.push(await openSession(small.port));
  const ping = (sid) => request(small.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: '{"jsonrpc":"2.0","id":3,"method":"ping"}' });
  assert.equal((await ping(sids[0])).status, 200); // sids[1] is now the oldest
  const r = await request(small.port, { headers: JSON_HDRS, body: init() });
  assert.equal(r.status, 200, r.body);
  assertRpcError(await ping(sids[1]), 404, /reclaimed/);
  assert.equal((await ping(sids[0])).status, 200);
  assert.equal((await ping(sids[2])).status, 200);
  await stopServer(small);
});

test('endpoint token: 401 without it, served with it', async () => {
  const tok = await startServer('token', { auth_token: TOKEN });
  const r = await request(tok.port, { headers: JSON_HDRS, body: init() });
  assertRpcError(r, 401, /auth_token/);
  assert.match(r.headers['www-authenticate'], /Bearer/);
  const wrong = await request(tok.port, { headers: { ...JSON_HDRS, authorization: 'Bearer nope' }, body: init() });
  assertRpcError(wrong, 401);
  const ok = await request(tok.port, { headers: { ...JSON_HDRS, authorization: `Bearer ${TOKEN}` }, body: init() });
  assert.equal(ok.status, 200);
  const h = await request(tok.port, { method: 'GET', path: '/health' });
  assert.equal(h.status, 200);
  // Operator mode: the token opens the endpoint, the Runloop key still comes
  // from X-Runloop-Api-Key (the token itself is never used as one).
  const auth = { authorization: `Bearer ${TOKEN}` };
  const sid = await openSession(tok.port, auth);
  const noKey = await callSimple(tok.port, sid, auth);
  assert.equal(JSON.parse(noKey.content[0].text).error.code, 'unauthenticated');
  const keyed = await openSession(tok.port, { ...auth, 'x-runloop-api-key': KEY });
  const withKey = await callSimple(tok.port, keyed, { ...auth, 'x-runloop-api-key': KEY });
  assert.notEqual(withKey.isError, true);
  await stopServer(tok);
  assert.ok(!tok.log.includes(TOKEN), 'the endpoint token is in the log');
});

test('listening beyond loopback without a token: startup refuses with a fix', () => {
  const conf = writeConf('open', {});
  const r = spawnSync(BIN, ['-c', conf, '--listen', '0.0.0.0:0'], { env: baseEnv(), encoding: 'utf8', timeout: 60000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /auth_token/);
});

test('1,000 idle connections: still serving; beyond max_connections -> 503', async () => {
  const idle = [];
  const connect = () => new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port: S.port }, () => resolve(s));
    s.on('error', reject);
  });
  try {
    for (let i = 0; i < 1000; i++) idle.push(await connect());
    // Wait until the server has accepted them all (bounded), then serve one.
    const sid = await openSession(S.port);
    const list = await request(S.port, { headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' });
    assert.equal(list.status, 200);
    // Past the configured 1010: raw requests on 30 more connections.
    const extra = [];
    for (let i = 0; i < 30; i++) extra.push(await connect());
    const answers = await Promise.all(extra.map((s) => new Promise((resolve) => {
      let data = '';
      s.setEncoding('utf8');
      s.on('data', (c) => { data += c; });
      s.on('close', () => resolve(data));
      s.on('error', () => resolve(data));
      s.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${S.port}\r\nConnection: close\r\n\r\n`);
    })));
    const refused = answers.filter((a) => a.startsWith('HTTP/1.1 503'));
    assert.ok(refused.length >= 1, `no 503 among ${answers.length} answers: ${answers.map((a) => a.slice(0, 12)).join(',')}`);
    assert.match(refused[0], /max_connections/);
    assert.match(refused[0], /"jsonrpc":"2.0"/);
  } finally {
    for (const s of idle) s.destroy();
  }
  // Once they are gone the server serves normally again (bounded wait).
  let ok = false;
  for (let i = 0; i < 100 && !ok; i++) {
    const h = await request(S.port, { method: 'GET', path: '/' });
    ok = h.status === 200;
    if (!ok) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(ok, 'the server did not recover after the idle connections closed');
});

test('a client that disconnects mid-stream gets the result on resume; server keeps serving', async () => {
  const auth = { 'x-runloop-api-key': KEY };
  const sid = await openSession(S.port, auth, { sampling: {} });
  const hdrs = { ...JSON_HDRS, ...auth, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  // test_sampling waits for our answer to its sampling request, so the call
  // cannot finish before we drop the connection.
  const { lastId, samplingReq } = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: S.port, method: 'POST', path: '/mcp', headers: hdrs, agent: false }, (res) => {
      assert.equal(res.headers['content-type'], 'text/event-stream');
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        buf += c;
        const evs = sseEvents(buf.slice(0, buf.lastIndexOf('\n\n') + 2));
        const s = evs.find((e) => e.data && JSON.parse(e.data).method === 'sampling/createMessage');
        if (s) {
          req.destroy(); // drop the connection mid-stream
          resolve({ lastId: s.id, samplingReq: JSON.parse(s.data) });
        }
      });
    });
    req.on('error', (e) => { if (e.code !== 'ECONNRESET') reject(e); });
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'test_sampling', arguments: { prompt: 'hi' } } }));
  });
  assert.match(lastId, /^\d+-\d+$/);
  // Answer the sampling request on a new POST: 202.
  const answer = await request(S.port, { headers: hdrs, body: JSON.stringify({
    jsonrpc: '2.0', id: samplingReq.id,
    result: { role: 'assistant', content: { type: 'text', text: 'resumed fine' }, model: 'test', stopReason: 'endTurn' },
  }) });
  assert.equal(answer.status, 202);
  // Resume: the rest of the stream, ending with the call's result.
  const resumed = await request(S.port, { method: 'GET', headers: { accept: 'text/event-stream', ...auth, 'mcp-session-id': sid, 'last-event-id': lastId } });
  assert.equal(resumed.status, 200, resumed.body);
  const msgs = sseEvents(resumed.body).filter((e) => e.data).map((e) => JSON.parse(e.data));
  const result = msgs.find((m) => m.id === 77);
  assert.ok(result, resumed.body);
  assert.match(result.result.content[0].text, /resumed fine/);
  // A reply written in full stays resumable (the client may not have read
  // it): a second resume replays the same result under the same event id.
  const resume = () => request(S.port, { method: 'GET', headers: { accept: 'text/event-stream', ...auth, 'mcp-session-id': sid, 'last-event-id': lastId } });
  const again = await resume();
  assert.equal(again.status, 200, again.body);
  const replayed = sseEvents(again.body).filter((e) => e.data && JSON.parse(e.data).id === 77);
  assert.equal(replayed.length, 1, again.body);
  assert.equal(replayed[0].id, sseEvents(resumed.body).find((e) => e.data && JSON.parse(e.data).id === 77).id);
  // Kept for the 64 most recent written replies only: after 70 more, it is gone.
  await Promise.all(Array.from({ length: 70 }, (_, i) => request(S.port, { headers: hdrs, body: JSON.stringify({
    jsonrpc: '2.0', id: 1000 + i, method: 'tools/call', params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: `t${i}` } },
  }) }).then((r) => assert.equal(r.status, 200, r.body))));
  assertRpcError(await resume(), 400, /delivered/);
  const ping = await request(S.port, { headers: hdrs, body: '{"jsonrpc":"2.0","id":78,"method":"ping"}' });
  assert.equal(ping.status, 200);
});

test('the caller key never reaches the log', async () => {
  // Everything above sent KEY in headers and the URL; add a few failures.
  await request(S.port, { path: `/mcp?api_key=${KEY}`, headers: { ...JSON_HDRS, 'mcp-session-id': 'nope' }, body: '{}' });
  await request(S.port, { headers: { ...JSON_HDRS, authorization: `Bearer ${KEY}` }, body: 'not json' });
  await stopServer(S);
  assert.match(S.log, /http: POST \/mcp/, 'no access log lines at debug level');
  assert.ok(!S.log.includes(KEY), 'the Runloop key appears in the server log');
  assert.ok(!S.log.includes(KEY.slice(8, 30)), 'part of the Runloop key appears in the server log');
});
