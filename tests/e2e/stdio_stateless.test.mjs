// stdio_stateless.test.mjs - MCP 2026-07-28 over stdio: a request carrying
// the revision in params._meta is served without initialize (resultType,
// progress on its own request, input rounds, cancellation), bad _meta is
// refused, and a 2025-11-25 session in the same process goes on unchanged.
// Raw JSON lines to the real host (the SDK client speaks 2025-11-25 only).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RawHost, requireBuilt } from './lib/host.mjs';

const REV = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
};
let h;
let nextId = 1;

async function call(method, params = {}, meta = META) {
  const id = `s${nextId++}`;
  await h.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...meta, ...(params._meta ?? {}) } } });
  return h.response(id, 30000);
}

before(() => {
  requireBuilt();
  h = new RawHost();
});

after(async () => {
  const e = await h.close();
  assert.equal(e.code, 0, h.stderr.slice(-2000));
  assert.doesNotMatch(h.stderr, /AddressSanitizer|LeakSanitizer|runtime error:/);
  assert.deepEqual(h.junk, [], 'stdout carries only JSON-RPC');
  assert.ok(!h.messages.some((m) => m.id === 'slow'), 'the cancelled call was never answered');
});

test('served without initialize, in 2026-07-28 shape', async () => {
  const d = await call('server/discover');
  assert.ok(d.result.supportedVersions.includes(REV), JSON.stringify(d));
  assert.equal(d.result.resultType, 'complete');
  assert.equal(d.result.ttlMs, 60000);
  const l = await call('tools/list');
  assert.equal(l.result.resultType, 'complete');
  assert.equal(l.result.cacheScope, 'private');
  const names = l.result.tools.map((t) => t.name);
  assert.deepEqual(names, [...names].sort(), 'tools in name order');
  const r = await call('tools/call', { name: 'echo', arguments: { text: 'hi' } });
  assert.equal(r.result.resultType, 'complete', JSON.stringify(r));
  assert.equal(r.result.isError, undefined);
});

test('progress goes with its request; the result comes last', async () => {
  const id = 'prog';
  await h.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow_progress', arguments: { seconds: 0.3, steps: 3 }, _meta: { ...META, progressToken: 'pt' } } });
  const res = await h.response(id, 30000);
  assert.equal(res.result.resultType, 'complete');
  const at = h.messages.indexOf(res);
  const progress = h.messages.filter((m) => m.method === 'notifications/progress' && m.params.progressToken === 'pt');
  assert.ok(progress.length >= 1, 'progress arrived');
  assert.ok(progress.every((p) => h.messages.indexOf(p) < at));
});

test('a client request becomes an input round (no server-to-client request)', async () => {
  const args = { name: 'ask_client', arguments: { method: 'elicitation/create', params: { message: 'name?', requestedSchema: { type: 'object', properties: {} } } } };
  const r1 = await call('tools/call', args);
  assert.equal(r1.result.resultType, 'input_required', JSON.stringify(r1));
  const [key] = Object.keys(r1.result.inputRequests);
  assert.equal(r1.result.inputRequests[key].method, 'elicitation/create');
  assert.ok(!h.messages.some((m) => m.method === 'elicitation/create'), 'nothing sent to the client');
  const r2 = await call('tools/call', { ...args, inputResponses: { [key]: { action: 'accept', content: { n: 'Ada' } } }, requestState: r1.result.requestState });
  assert.equal(r2.result.resultType, 'complete', JSON.stringify(r2));
  assert.match(r2.result.content[0].text, /Ada/);
});

test('notifications/cancelled stops a 2026-07-28 call: no answer', async () => {
  const id = 'slow';
  await h.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'sleep', arguments: { seconds: 60 }, _meta: META } });
  await new Promise((r) => setTimeout(r, 200));
  await h.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
  // The process is free again and nothing is ever answered for it.
  const after = await call('tools/call', { name: 'echo', arguments: { text: 'after' } });
  assert.equal(after.result.resultType, 'complete');
  assert.ok(!h.messages.some((m) => m.id === id), 'a cancelled request gets no response');
  // Checked again after the exit: an uncancelled sleep would be answered
  // with a shutdown error when stdin closes.
});

test('bad _meta and removed methods are refused; the process goes on', async () => {
  const bad = [
    [{ 'io.modelcontextprotocol/protocolVersion': REV }, -32602, /clientCapabilities/],
    [{ ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' }, -32602, /clientCapabilities/],
    [{ ...META, 'io.modelcontextprotocol/logLevel': 'loud' }, -32602, /logLevel/],
    [{ ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }, -32022, /unsupported protocol version/],
  ];
  for (const [meta, code, re] of bad) {
    const r = await call('tools/list', {}, meta);
    assert.equal(r.error?.code, code, JSON.stringify(r));
    assert.match(r.error.message, re);
  }
  for (const m of ['ping', 'logging/setLevel', 'initialize']) {
    const r = await call(m, { level: 'info' });
    assert.equal(r.error?.code, -32601, JSON.stringify(r));
  }
});

test('a 2025-11-25 session in the same process is unchanged', async () => {
  // Without _meta and before initialize: still the session's rules.
  const early = await h.request('e1', 'tools/list', {});
  assert.equal(early.error.code, -32600);
  const init = await h.initialize();
  assert.equal(init.result.protocolVersion, '2025-11-25');
  const l = await h.request('e2', 'tools/list', {});
  assert.equal(l.result.resultType, undefined, '2025-11-25 results have no resultType');
  assert.equal(l.result.ttlMs, undefined);
  // A 2026-07-28 request between them, then the session again.
  const s = await call('tools/call', { name: 'echo', arguments: { text: 'mixed' } });
  assert.equal(s.result.resultType, 'complete');
  const p = await h.request('e3', 'ping');
  assert.deepEqual(p.result, {});
  // An initialized session's request naming 2025-11-25 in _meta stays its own.
  const own = await h.request('e4', 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } });
  assert.equal(own.result.resultType, undefined, JSON.stringify(own).slice(0, 200));
  assert.ok(Array.isArray(own.result.tools));
});
