// http_concurrency.test.mjs - many concurrent tools/call POSTs on one
// session, a third of them dropped after their first event and resumed with
// GET + Last-Event-ID, plus sessions deleted while their calls run. Every
// call's result must arrive exactly once; the server must stop cleanly (and
// without sanitizer reports when built with -DRLMCP_SANITIZE=ON).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';

const SRC = process.env.RLMCP_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
const BUILD = process.env.RLMCP_BUILD_DIR ?? path.join(SRC, 'build');
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-http-conc-'));
let srv;

before(async () => {
  const conf = path.join(work, 'c.yaml');
  writeFileSync(conf, [
    'server:', '  name: http-concurrency', '  http:', '    listen: 127.0.0.1:0', '    max_connections: 1024',
    'runloop:', '  backend: cloud', '  base_url: http://127.0.0.1:9', '  api_key: deployment-key-for-fixtures',
    'plugins:', '  - name: conformance', '',
  ].join('\n'));
  const env = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins') };
  const child = spawn(path.join(BUILD, 'bin', 'runloop-mcp'), ['-c', conf, '--transport', 'http'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  srv = { child, log: '', port: 0 };
  child.stderr.setEncoding('utf8');
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no start:\n${srv.log}`)), 60000);
    child.stderr.on('data', (d) => {
      srv.log += d;
      const m = /\(port (\d+)\)/.exec(srv.log);
      if (m && !srv.port) { srv.port = Number(m[1]); clearTimeout(t); resolve(); }
    });
    child.on('close', (c) => { clearTimeout(t); if (!srv.port) reject(new Error(`exit ${c}:\n${srv.log}`)); });
  });
});

after(async () => {
  if (srv?.child.exitCode === null) srv.child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

function post(body, headers, { dropAfterFirstEvent = false } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/mcp', agent: dropAfterFirstEvent ? false : agent, headers: { ...HDRS, ...headers } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        data += c;
        if (dropAfterFirstEvent) {
          const m = /id: (\d+-\d+)\n/.exec(data);
          if (m) { req.destroy(); resolve({ status: res.statusCode, dropped: true, lastId: m[1], body: data }); }
        }
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', (e) => { if (!dropAfterFirstEvent) reject(e); });
    req.end(body);
  });
}

function resume(sid, lastId) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'GET', path: '/mcp', agent,
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': lastId } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    });
    req.on('error', reject);
    req.end();
  });
}

const messages = (body) => body.split('\n\n').map((b) => b.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join(''))
  .filter(Boolean).map((d) => JSON.parse(d));

async function session() {
  const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }), {});
  assert.equal(r.status, 200);
  const sid = r.headers['mcp-session-id'];
  await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { 'mcp-session-id': sid });
  return sid;
}

const call = (id, name = 'test_tool_with_progress') => JSON.stringify({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: { progressToken: `p${id}` } },
});

test('120 concurrent calls on one session, 40 dropped and resumed: every result exactly once', async () => {
  const sid = await session();
  const h = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const runs = [];
  for (let id = 1; id <= 120; id++) {
    const drop = id % 3 === 0;
    runs.push((async () => {
      const r = await post(call(id), h, { dropAfterFirstEvent: drop });
      assert.equal(r.status, 200);
      let msgs = messages(r.body);
      if (r.dropped) {
        const g = await resume(sid, r.lastId);
        assert.equal(g.status, 200, g.body);
        msgs = msgs.concat(messages(g.body));
      }
      const results = msgs.filter((m) => m.id === id);
      assert.equal(results.length, 1, `call ${id}: ${results.length} results`);
      assert.match(results[0].result.content[0].text, /Progress tool completed/);
      const progress = msgs.filter((m) => m.method === 'notifications/progress').map((m) => m.params);
      assert.ok(progress.every((p) => p.progressToken === `p${id}`), `call ${id} got another call's progress`);
    })());
  }
  await Promise.all(runs);
});

// POST a call; `started` resolves at its first SSE bytes (the call is
// dispatched), `ended` with the whole reply.
function startCall(body, headers) {
  let started;
  const startedP = new Promise((r) => { started = r; });
  const ended = new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/mcp', agent: false, headers: { ...HDRS, ...headers } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; started(); });
      res.on('end', () => { started(); resolve({ status: res.statusCode, body: data }); });
    });
    req.on('error', (e) => { started(); reject(e); });
    req.end(body);
  });
  return { started: startedP, ended };
}

test('sessions deleted while their calls run: the streams end, the server keeps serving', async () => {
  const sids = await Promise.all(Array.from({ length: 10 }, () => session()));
  const calls = sids.map((sid, i) => startCall(call(1000 + i, 'test_tool_with_logging'), { 'mcp-session-id': sid }));
  await Promise.all(calls.map((c) => c.started));
  const deleted = await Promise.all(sids.map((sid) => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'DELETE', path: '/mcp', agent, headers: { 'mcp-session-id': sid } }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
    req.on('error', reject);
    req.end();
  })));
  assert.deepEqual(deleted, sids.map(() => 200));
  // Each stream ends: with the result if the call won the race, else cut short.
  for (const c of calls) assert.equal((await c.ended).status, 200);
  const sid = await session();
  const r = await post(call(2000, 'test_simple_text'), { 'mcp-session-id': sid });
  assert.match(messages(r.body).find((m) => m.id === 2000).result.content[0].text, /simple text/);
});

test('a clean stop with calls waiting on the client, after the load', async () => {
  // A call blocked on a sampling request nobody answers keeps its SSE reply
  // suspended; a second one's client has gone. Stopping must still be clean.
  const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { sampling: {} }, clientInfo: { name: 'c', version: '1' } } }), {});
  const sid = r.headers['mcp-session-id'];
  await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { 'mcp-session-id': sid });
  const sampling = JSON.stringify({ jsonrpc: '2.0', id: 3000, method: 'tools/call', params: { name: 'test_sampling', arguments: { prompt: 'x' } } });
  const waiting = startCall(sampling, { 'mcp-session-id': sid });
  await waiting.started;
  const gone = await post(sampling.replace('3000', '3001'), { 'mcp-session-id': sid }, { dropAfterFirstEvent: true });
  assert.ok(gone.dropped);
  waiting.ended.catch(() => {});
  agent.destroy();
  const done = new Promise((r) => srv.child.once('close', (code, sig) => r({ code, sig })));
  srv.child.kill('SIGTERM');
  const { code, sig } = await done;
  assert.doesNotMatch(srv.log, /AddressSanitizer|LeakSanitizer|runtime error:/, srv.log.slice(-4000));
  assert.equal(code, 0, `exit ${code ?? sig}:\n${srv.log.slice(-2000)}`);
});
