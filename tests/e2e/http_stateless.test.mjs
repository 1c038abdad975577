// http_stateless.test.mjs - MCP 2026-07-28 (stateless, per-request _meta)
// beside 2025-11-25 sessions on one HTTP server, with raw HTTP: the answers
// the revision adds (server/discover, resultType, caching hints) and every
// bad-input case (missing or conflicting _meta, headers that disagree with
// the body, an unknown revision, methods the revision removed), Mcp-Param-*
// headers, and the tasks extension on the fixture task tools: input inside
// a task, input rounds before one, tool errors and broken work, unknown or
// another caller's task ids, task-only tools in both revisions.
//
// The server runs the conformance fixtures on a cloud backend nothing
// answers (127.0.0.1:9) with a placeholder key: the fixtures never call it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';

const SRC = process.env.RLMCP_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
const BUILD = process.env.RLMCP_BUILD_DIR ?? path.join(SRC, 'build');
const BIN = path.join(BUILD, 'bin', 'runloop-mcp');
const REV = '2026-07-28';
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-stateless-'));
let srv;

function start() {
  const conf = path.join(work, 'stateless.yaml');
  writeFileSync(conf, [
    'server:', '  name: stateless-test', '  http:', '    listen: 127.0.0.1:0',
    'runloop:', '  backend: cloud', '  base_url: "http://127.0.0.1:9"', '  api_key: "rl_placeholder"',
    'plugins:', '  - name: conformance', '',
  ].join('\n'));
  const env = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins'), RLMCP_STATE_DIR: path.join(work, 'state') };
  delete env.RUNLOOP_API_KEY;
  const child = spawn(BIN, ['-c', conf, '--transport', 'http'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const s = { child, log: '', port: 0, exited: false };
  child.stderr.setEncoding('utf8');
  child.on('close', () => { s.exited = true; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${s.log}`)), 60000);
    child.stderr.on('data', (d) => {
      s.log += d;
      const m = /\(port (\d+)\)/.exec(s.log);
      if (m && !s.port) { s.port = Number(m[1]); clearTimeout(timer); resolve(s); }
    });
    child.on('exit', (code) => { clearTimeout(timer); if (!s.port) reject(new Error(`server exited ${code}:\n${s.log}`)); });
  });
}

function request(headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/mcp', headers, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.setTimeout(30000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

// Every JSON-RPC message of a reply (JSON or SSE).
function messages(body) {
  if (body.trimStart().startsWith('{')) return [JSON.parse(body)];
  return body.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
}

const META = {
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientInfo': { name: 'stateless-test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
let nextId = 1;

// A 2026-07-28 request: standard headers from the body unless overridden.
async function call(method, params = {}, { meta = META, headers = {}, noMeta = false } = {}) {
  const id = nextId++;
  const p = noMeta ? params : { ...params, _meta: { ...meta, ...(params._meta ?? {}) } };
  const h = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': REV, 'mcp-method': method,
  };
  const name = method === 'resources/read' ? params.uri : params.name;
  if (name !== undefined && (method === 'tools/call' || method === 'prompts/get' || method === 'resources/read')) h['mcp-name'] = name;
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) delete h[k]; else h[k] = v;
  }
  const r = await request(h, JSON.stringify({ jsonrpc: '2.0', id, method, params: p }));
  const msgs = messages(r.body);
  return { ...r, id, msgs, msg: msgs.find((m) => m.id === id) };
}

function assertError(r, status, code, pattern) {
  assert.equal(r.status, status, `status ${r.status}: ${r.body}`);
  assert.ok(r.msg, `no answer with id ${r.id}: ${r.body}`);
  assert.equal(r.msg.error?.code, code, r.body);
  if (pattern) assert.match(r.msg.error.message, pattern);
}

before(async () => { srv = await start(); });

after(async () => {
  if (srv && !srv.exited) {
    const gone = new Promise((r) => srv.child.once('close', (code) => r(code)));
    srv.child.kill('SIGTERM');
    const code = await gone;
    assert.doesNotMatch(srv.log, /AddressSanitizer|LeakSanitizer|runtime error:/, srv.log.slice(-4000));
    assert.equal(code, 0, srv.log.slice(-2000));
  }
  rmSync(work, { recursive: true, force: true });
});

test('server/discover lists both revisions, capabilities and the server in _meta', async () => {
  const r = await call('server/discover');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.headers['mcp-session-id'], undefined, 'no session in 2026-07-28');
  const res = r.msg.result;
  assert.ok(res.supportedVersions.includes(REV) && res.supportedVersions.includes('2025-11-25'));
  assert.equal(res.resultType, 'complete');
  assert.equal(typeof res.capabilities.tools, 'object');
  assert.equal(res._meta['io.modelcontextprotocol/serverInfo'].name, 'stateless-test');
  // Delivered on a subscriptions/listen stream, not by resources/subscribe.
  assert.equal(res.capabilities.resources.subscribe, true);
  assert.equal(res.capabilities.tools.listChanged, true);
});

test('tools/list: resultType, caching hints, tools in name order', async () => {
  const r = await call('tools/list');
  const res = r.msg.result;
  assert.equal(res.resultType, 'complete');
  assert.ok(Number.isInteger(res.ttlMs) && res.ttlMs >= 0);
  assert.ok(['public', 'private'].includes(res.cacheScope));
  const names = res.tools.map((t) => t.name);
  assert.deepEqual(names, [...names].sort());
  for (const m of ['prompts/list', 'resources/list', 'resources/templates/list']) {
    const l = await call(m);
    assert.equal(l.msg.result.resultType, 'complete', m);
    assert.equal(typeof l.msg.result.ttlMs, 'number', m);
  }
});

test('tools/call and resources/read answer with resultType; no log without logLevel', async () => {
  const r = await call('tools/call', { name: 'test_simple_text', arguments: {} });
  assert.equal(r.msg.result.resultType, 'complete');
  assert.equal(r.msg.result.content[0].type, 'text');
  const read = await call('resources/read', { uri: 'test://static-text' });
  assert.equal(read.msg.result.resultType, 'complete');
  assert.equal(typeof read.msg.result.ttlMs, 'number');
  const quiet = await call('tools/call', { name: 'test_tool_with_logging', arguments: {} });
  assert.equal(quiet.msgs.filter((m) => m.method === 'notifications/message').length, 0, quiet.body);
  const loud = await call('tools/call', { name: 'test_tool_with_logging', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } });
  assert.ok(loud.msgs.filter((m) => m.method === 'notifications/message').length >= 3, loud.body);
  const bad = await call('tools/call', { name: 'test_simple_text', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'loud' } });
  assertError(bad, 400, -32602, /logLevel/);
});

test('missing _meta or its required members -> 400 -32602 with the request id', async () => {
  assertError(await call('tools/list', {}, { noMeta: true }), 400, -32602, /_meta is required/);
  const { ['io.modelcontextprotocol/protocolVersion']: _v, ...noVersion } = META;
  assertError(await call('tools/list', {}, { meta: noVersion }), 400, -32602, /protocolVersion/);
  const { ['io.modelcontextprotocol/clientCapabilities']: _c, ...noCaps } = META;
  assertError(await call('tools/list', {}, { meta: noCaps }), 400, -32602, /clientCapabilities/);
  const { ['io.modelcontextprotocol/clientInfo']: _i, ...noInfo } = META;
  assert.equal((await call('tools/list', {}, { meta: noInfo })).status, 200, 'clientInfo is optional');
  assertError(await call('tools/list', {}, { meta: { ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' } }), 400, -32602);
});

test('an unknown revision -> 400 -32022 listing what is supported', async () => {
  const r = await call('tools/list', {}, {
    meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' },
    headers: { 'mcp-protocol-version': '2099-01-01' },
  });
  assertError(r, 400, -32022);
  assert.equal(r.msg.error.data.requested, '2099-01-01');
  assert.ok(r.msg.error.data.supported.includes(REV));
});

test('headers that disagree with the body -> 400 -32020', async () => {
  // The version header against _meta.
  assertError(await call('tools/list', {}, { meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } }),
    400, -32020, /MCP-Protocol-Version/);
  // Mcp-Method missing or naming another method.
  assertError(await call('tools/list', {}, { headers: { 'mcp-method': 'prompts/list' } }), 400, -32020, /Mcp-Method/);
  assertError(await call('tools/list', {}, { headers: { 'mcp-method': undefined } }), 400, -32020, /Mcp-Method/);
  // Mcp-Name missing, another tool, another case.
  const args = { name: 'test_simple_text', arguments: {} };
  assertError(await call('tools/call', args, { headers: { 'mcp-name': 'test_error_handling' } }), 400, -32020, /Mcp-Name/);
  assertError(await call('tools/call', args, { headers: { 'mcp-name': undefined } }), 400, -32020, /Mcp-Name/);
  assertError(await call('tools/call', args, { headers: { 'mcp-name': 'TEST_SIMPLE_TEXT' } }), 400, -32020);
  assertError(await call('resources/read', { uri: 'test://static-text' }, { headers: { 'mcp-name': 'test://static-binary' } }), 400, -32020);
  // Optional whitespace around a value is not part of it (RFC 9110).
  const ok = await call('tools/call', args, { headers: { 'mcp-name': '  test_simple_text ' } });
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.msg.result.resultType, 'complete');
});

test('Mcp-Param-* headers against x-mcp-header arguments -> 400 -32020 on disagreement', async () => {
  const listed = (await call('tools/list')).msg.result.tools.find((t) => t.name === 'test_custom_header');
  assert.equal(listed?.inputSchema.properties.region['x-mcp-header'], 'Region', JSON.stringify(listed));
  const args = { name: 'test_custom_header', arguments: { region: 'us-west1' } };
  const with_ = (v) => ({ headers: { 'mcp-param-region': v } });
  // Literal, Base64-wrapped (any case of the header name), and with OWS.
  for (const v of ['us-west1', '=?base64?dXMtd2VzdDE=?=', '  us-west1\t']) {
    const ok = await call('tools/call', args, with_(v));
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.msg.result.content[0].text, 'Routed to region us-west1', ok.body);
  }
  const ok = await call('tools/call', args, { headers: { 'MCP-PARAM-REGION': 'us-west1' } });
  assert.equal(ok.status, 200, ok.body);
  // Non-ASCII text rides Base64.
  const utf = await call('tools/call', { name: 'test_custom_header', arguments: { region: 'zürich' } },
    with_(`=?base64?${Buffer.from('zürich').toString('base64')}?=`));
  assert.equal(utf.msg.result.content[0].text, 'Routed to region zürich', utf.body);
  // Missing, another value, bad Base64, a header without the argument.
  assertError(await call('tools/call', args), 400, -32020, /Mcp-Param-Region header is missing/);
  assertError(await call('tools/call', args, with_('eu-west1')), 400, -32020, /does not match arguments\.region/);
  assertError(await call('tools/call', args, with_('=?base64?dXMtd2VzdDE?=')), 400, -32020, /Base64/);
  assertError(await call('tools/call', args, with_('=?base64?dXMt!!!d2VzdDE=?=')), 400, -32020, /Base64/);
  assertError(await call('tools/call', { name: 'test_custom_header', arguments: {} }, with_('us-west1')),
    400, -32020, /absent or null/);
  // A 2025-11-25 session has no such headers to check.
  const init = await request({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }));
  const sid = init.headers['mcp-session-id'];
  const old = await request({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: args }));
  assert.equal(messages(old.body).find((m) => m.id === 2)?.result?.content[0].text, 'Routed to region us-west1', old.body);
});

test('methods 2026-07-28 removed -> 404 -32601; unknown resource -> -32602', async () => {
  for (const m of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'nope/nothing']) {
    assertError(await call(m, m === 'resources/subscribe' ? { uri: 'test://static-text' } : {}), 404, -32601);
  }
  const r = await call('resources/read', { uri: 'test://no-such-resource' });
  assert.equal(r.msg.error?.code, -32602, r.body);
});

test('a 2025-11-25 session on the same server is unchanged', async () => {
  const hdrs = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await request(hdrs, JSON.stringify({
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
  }));
  assert.equal(init.status, 200, init.body);
  const sid = init.headers['mcp-session-id'];
  assert.match(sid, /^[0-9a-f]{32}$/);
  assert.equal(JSON.parse(init.body).result.protocolVersion, '2025-11-25');
  const s = { ...hdrs, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const list = await request(s, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  const res = JSON.parse(list.body).result;
  assert.ok(res.tools.length > 0);
  assert.equal(res.resultType, undefined);
  assert.equal(res.ttlMs, undefined);
  const ping = await request(s, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }));
  assert.deepEqual(JSON.parse(ping.body).result, {});
  // server/discover belongs to 2026-07-28 only.
  const disc = await request(s, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'server/discover' }));
  assert.equal(JSON.parse(disc.body).error.code, -32601);
  // Without a session and without a 2026-07-28 request, the old refusal.
  const none = await request(hdrs, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }));
  assert.equal(none.status, 400);
  assert.match(JSON.parse(none.body).error.message, /Mcp-Session-Id/);
});

test('input rounds: input_required, answers, a signed requestState', async () => {
  const elicit = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const meta = { ...META, ...elicit };
  const args = { name: 'test_input_required_result_multi_round', arguments: {} };
  const r1 = await call('tools/call', args, { meta });
  const res1 = r1.msg.result;
  assert.equal(res1.resultType, 'input_required', r1.body);
  assert.equal(res1.inputRequests.step1.method, 'elicitation/create');
  assert.equal(res1.inputRequests.step1.params._meta, undefined, 'the host keeps its input key to itself');
  assert.equal(r1.msgs.filter((m) => m.method === 'elicitation/create').length, 0, 'no request on the stream');
  const r2 = await call('tools/call', { ...args, inputResponses: { step1: { action: 'accept', content: { name: 'Ada' } } }, requestState: res1.requestState }, { meta });
  const res2 = r2.msg.result;
  assert.equal(res2.resultType, 'input_required', r2.body);
  assert.ok(res2.inputRequests.step2);
  assert.notEqual(res2.requestState, res1.requestState);
  // The third round carries only step2: step1 comes back from the state.
  const r3 = await call('tools/call', { ...args, inputResponses: { step2: { action: 'accept', content: { color: 'green' } } }, requestState: res2.requestState }, { meta });
  assert.equal(r3.msg.result.resultType, 'complete', r3.body);
  assert.equal(r3.msg.result.content[0].text, 'Ada likes green');
});

test('input rounds: tampered or foreign requestState and malformed inputResponses -> -32602', async () => {
  const meta = { ...META, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const args = { name: 'test_input_required_result_multi_round', arguments: {} };
  const r1 = await call('tools/call', args, { meta });
  const state = r1.msg.result.requestState;
  const flipped = state.slice(0, 5) + (state[5] === 'A' ? 'B' : 'A') + state.slice(6);
  for (const requestState of [flipped, `${state}0`, 'v1.', 'garbage', '']) {
    const r = await call('tools/call', { ...args, inputResponses: {}, requestState }, { meta });
    assert.equal(r.msg.error?.code, -32602, `${requestState}: ${r.body}`);
    assert.match(r.msg.error.message, /requestState/);
  }
  // A state made for another tool does not unlock this one.
  const other = await call('tools/call', { name: 'test_input_required_result_elicitation', arguments: {}, requestState: state }, { meta });
  assert.equal(other.msg.error?.code, -32602, other.body);
  assert.match(other.msg.error.message, /another request/);
  // Another caller cannot replay this caller's answers; the owner still can.
  const answered = await call('tools/call', { ...args, inputResponses: { step1: { action: 'accept', content: { name: 'Ada' } } }, requestState: state }, { meta });
  const carried = answered.msg.result.requestState;
  assert.ok(carried, answered.body);
  const replay = await call('tools/call', { ...args, requestState: carried }, { meta, headers: { 'x-runloop-api-key': 'another-callers-key' } });
  assert.equal(replay.msg.error?.code, -32602, replay.body);
  assert.match(replay.msg.error.message, /requestState .*same credential/);
  const owner = await call('tools/call', { ...args, requestState: carried }, { meta });
  assert.equal(owner.msg.error, undefined, owner.body);
  for (const inputResponses of [{ step1: 12345 }, { step1: 'yes' }, [1, 2], 'all']) {
    const r = await call('tools/call', { ...args, inputResponses }, { meta });
    assert.equal(r.msg.error?.code, -32602, `${JSON.stringify(inputResponses)}: ${r.body}`);
    assert.match(r.msg.error.message, /inputResponses/);
  }
  const badState = await call('tools/call', { ...args, requestState: 42 }, { meta });
  assert.equal(badState.msg.error?.code, -32602, badState.body);
});

test('input rounds ask only for declared capabilities; a required one missing -> 400 -32021', async () => {
  const sampling = { ...META, 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } };
  const r = await call('tools/call', { name: 'test_input_required_result_capabilities', arguments: {} }, { meta: sampling });
  const keys = Object.entries(r.msg.result.inputRequests).map(([, v]) => v.method);
  assert.deepEqual(keys, ['sampling/createMessage'], r.body);
  const m = await call('tools/call', { name: 'test_missing_capability', arguments: {} });
  assertError(m, 400, -32021, /clientCapabilities/);
  assert.deepEqual(m.msg.error.data.requiredCapabilities, { sampling: {} });
  // Declared: an input round, not an error.
  const ok = await call('tools/call', { name: 'test_missing_capability', arguments: {} }, { meta: sampling });
  assert.equal(ok.msg.result.resultType, 'input_required', ok.body);
  // prompts/get takes input rounds too.
  const elicit = { ...META, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const p1 = await call('prompts/get', { name: 'test_input_required_result_prompt' }, { meta: elicit });
  assert.equal(p1.msg.result.resultType, 'input_required', p1.body);
  const p2 = await call('prompts/get', { name: 'test_input_required_result_prompt', inputResponses: { user_context: { action: 'accept', content: { context: 'tests' } } }, requestState: p1.msg.result.requestState }, { meta: elicit });
  assert.equal(p2.msg.result.resultType, 'complete', p2.body);
  assert.match(JSON.stringify(p2.msg.result.messages), /Use this context: tests/);
});

// ---- the tasks extension (SEP-2663) on the conformance task fixtures ------

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const TASKS = {
  ...META,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, extensions: { [TASKS_EXT]: {} } },
};

// A tasks/* request with the extension declared and Mcp-Name from taskId.
function taskCall(method, params, { key, meta = TASKS, headers = {} } = {}) {
  const h = { 'mcp-name': params.taskId, ...headers };
  if (key) h['x-runloop-api-key'] = key;
  return call(method, params, { meta, headers: h });
}

async function startTask(name, args, opts = {}) {
  const r = await call('tools/call', { name, arguments: args }, { meta: TASKS, ...opts });
  assert.equal(r.msg.result?.resultType, 'task', r.body);
  return r.msg.result.taskId;
}

// Poll tasks/get until pred(result) holds (bounded; never a fixed sleep).
async function untilTask(taskId, pred, what) {
  const end = Date.now() + 60000;
  for (;;) {
    const r = await taskCall('tasks/get', { taskId });
    assert.equal(r.status, 200, r.body);
    if (pred(r.msg.result)) return r.msg.result;
    if (Date.now() > end) assert.fail(`task ${taskId} never became ${what}: ${r.body}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

test('tasks: input inside a task, answered one key at a time through tasks/update', async () => {
  const id = await startTask('multi_input', {});
  const t = await untilTask(id, (x) => x.status === 'input_required', 'input_required');
  assert.deepEqual(Object.keys(t.inputRequests).sort(), ['first', 'second'], JSON.stringify(t));
  assert.equal(t.inputRequests.first.method, 'elicitation/create');
  assert.equal(t.inputRequests.first.params._meta, undefined, 'the input key stays in the host');
  assert.equal(t.requestState, undefined);
  assert.equal(t.result, undefined);
  const ack = await taskCall('tasks/update', { taskId: id, inputResponses: { first: { action: 'accept', content: { name: 'Ada' } } } });
  assert.deepEqual(ack.msg.result, { resultType: 'complete' }, ack.body);
  const half = (await taskCall('tasks/get', { taskId: id })).msg.result;
  assert.equal(half.status, 'input_required');
  assert.deepEqual(Object.keys(half.inputRequests), ['second'], JSON.stringify(half));
  // An answer again for an answered key and an unknown key are ignored.
  const more = await taskCall('tasks/update', {
    taskId: id,
    inputResponses: { first: { action: 'accept', content: { name: 'Eve' } }, nope: {}, second: { action: 'accept', content: { name: 'Grace' } } },
  });
  assert.deepEqual(more.msg.result, { resultType: 'complete' }, more.body);
  const done = await untilTask(id, (x) => x.status !== 'input_required' && x.status !== 'working', 'terminal');
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.content[0].text, 'Got Ada and Grace');
  assert.equal(done.result.resultType, 'complete');
});

test('tasks: a tool error is completed with isError; broken work is failed with error', async () => {
  const f = await untilTask(await startTask('failing_job', {}), (x) => x.status !== 'working', 'terminal');
  assert.equal(f.status, 'completed', JSON.stringify(f));
  assert.equal(f.result.isError, true);
  assert.match(f.result.content[0].text, /failing_job failed/);
  const p = await untilTask(await startTask('protocol_error_job', {}), (x) => x.status !== 'working', 'terminal');
  assert.equal(p.status, 'failed', JSON.stringify(p));
  assert.equal(p.error.code, -32603);
  assert.match(p.error.message, /broke/);
  assert.equal(p.result, undefined);
});

test('tasks: input rounds first, then the task; a tampered requestState is refused', async () => {
  const args = { name: 'test_tool_with_task', arguments: {} };
  const r1 = await call('tools/call', args, { meta: TASKS });
  assert.equal(r1.msg.result.resultType, 'input_required', r1.body);
  assert.equal(r1.msg.result.taskId, undefined);
  const state = r1.msg.result.requestState;
  const answer = { user_name: { action: 'accept', content: { name: 'Ada' } } };
  const bad = await call('tools/call', { ...args, inputResponses: answer, requestState: `${state}x` }, { meta: TASKS });
  assert.equal(bad.msg.error?.code, -32602, bad.body);
  const r2 = await call('tools/call', { ...args, inputResponses: answer, requestState: state }, { meta: TASKS });
  assert.equal(r2.msg.result.resultType, 'task', r2.body);
  assert.equal(r2.msg.result.requestState, undefined);
  assert.equal(r2.msg.result.inputRequests, undefined);
  const done = await untilTask(r2.msg.result.taskId, (x) => x.status !== 'working', 'terminal');
  assert.equal(done.result.content[0].text, 'Hello, Ada!', JSON.stringify(done));
});

test('tasks: unknown ids, another caller, headers, missing or conflicting params are refused', async () => {
  const id = await startTask('slow_compute', { seconds: 600, label: 'bad-input' });
  // Ids that do not exist, are malformed, or belong to another caller: one answer.
  for (const taskId of ['rt1.nope.nope', 'x', `${id}x`]) {
    assertError(await taskCall('tasks/get', { taskId }), 200, -32602, /no task .* for this caller/);
  }
  for (const m of ['tasks/get', 'tasks/cancel']) {
    assertError(await taskCall(m, { taskId: id }, { key: 'another-callers-key' }), 200, -32602, /for this caller/);
  }
  assertError(await taskCall('tasks/update', { taskId: id, inputResponses: {} }, { key: 'another-callers-key' }),
    200, -32602, /for this caller/);
  assert.equal((await taskCall('tasks/get', { taskId: id })).msg.result.status, 'working', 'the owner still sees it');
  // Headers that disagree with the body.
  assertError(await taskCall('tasks/get', { taskId: id }, { headers: { 'mcp-name': 'rt1.other' } }), 400, -32020, /Mcp-Name/);
  assertError(await taskCall('tasks/get', { taskId: id }, { headers: { 'mcp-name': undefined } }), 400, -32020, /Mcp-Name/);
  assertError(await taskCall('tasks/get', { taskId: id }, { headers: { 'mcp-method': 'tasks/cancel' } }), 400, -32020, /Mcp-Method/);
  // Missing or wrong params.
  assertError(await taskCall('tasks/get', {}), 200, -32602, /taskId/);
  assertError(await taskCall('tasks/get', { taskId: 42 }, { headers: { 'mcp-name': '42' } }), 200, -32602, /taskId/);
  for (const inputResponses of [undefined, [1], 'yes', null]) {
    assertError(await taskCall('tasks/update', { taskId: id, inputResponses }), 200, -32602, /inputResponses/);
  }
  // The extension not declared: tasks/* refused; a task-only tool refused;
  // a tool that may be a task runs as a plain call.
  for (const m of ['tasks/get', 'tasks/cancel']) {
    const r = await taskCall(m, { taskId: id }, { meta: META });
    assertError(r, 400, -32021, /io\.modelcontextprotocol\/tasks/);
    assert.deepEqual(r.msg.error.data.requiredCapabilities, { extensions: { [TASKS_EXT]: {} } });
  }
  const req = await call('tools/call', { name: 'failing_job', arguments: {} });
  assertError(req, 400, -32021, /runs only as a task/);
  assert.deepEqual(req.msg.error.data.requiredCapabilities, { extensions: { [TASKS_EXT]: {} } });
  const plain = await call('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'plain' }, task: { ttl: 1000 } });
  assert.equal(plain.msg.result.resultType, 'complete', plain.body);
  assert.equal(plain.msg.result.content[0].text, 'Computed plain in 0 s');
  // Methods this revision removed.
  for (const m of ['tasks/result', 'tasks/list']) assertError(await taskCall(m, { taskId: id }), 404, -32601);
  // Cancel twice: the same empty ack; the task settles to cancelled.
  for (let i = 0; i < 2; i++) {
    assert.deepEqual((await taskCall('tasks/cancel', { taskId: id })).msg.result, { resultType: 'complete' });
  }
  assert.equal((await taskCall('tasks/get', { taskId: id })).msg.result.status, 'cancelled');
});

test('tasks in a 2025-11-25 session: a task-only tool needs params.task; tasks/result cannot ask a client without elicitation', async () => {
  const hdrs = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await request(hdrs, JSON.stringify({
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
  }));
  const s = { ...hdrs, 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
  const rpc = async (id, method, params) => {
    const r = await request(s, JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return messages(r.body).find((m) => m.id === id);
  };
  const listed = (await rpc(1, 'tools/list', {})).result.tools;
  assert.deepEqual(listed.find((t) => t.name === 'failing_job').execution, { taskSupport: 'required' });
  assert.deepEqual(listed.find((t) => t.name === 'slow_compute').execution, { taskSupport: 'optional' });
  assert.equal(listed.find((t) => t.name === 'greet').execution, undefined);
  const refused = await rpc(2, 'tools/call', { name: 'failing_job', arguments: {} });
  assert.equal(refused.error?.code, -32601, JSON.stringify(refused));
  assert.match(refused.error.message, /params\.task/);
  const made = await rpc(3, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' }, task: {} });
  const taskId = made.result.task.taskId;
  let got;
  const end = Date.now() + 60000;
  do {
    got = await rpc(4, 'tasks/get', { taskId });
    if (got.result?.status === 'input_required') break;
    await new Promise((res) => setTimeout(res, 100));
  } while (Date.now() < end);
  assert.equal(got.result.status, 'input_required', JSON.stringify(got));
  assert.equal(got.result.inputRequests, undefined, 'a 2026-07-28 field');
  const res = await rpc(5, 'tasks/result', { taskId });
  // A client that declares elicitation is asked on this stream
  // (tasks_input.test.mjs); this one cannot be.
  assert.equal(res.error?.code, -32602, JSON.stringify(res));
  assert.match(res.error.message, /did not declare the capability/);
  assert.equal((await rpc(6, 'tasks/cancel', { taskId })).result.status, 'cancelled');
});
