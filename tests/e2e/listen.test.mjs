// listen.test.mjs - subscriptions/listen (MCP 2026-07-28) with raw HTTP and
// raw stdio: a stream opened with a filter is acknowledged with the part
// of the filter the server honours; a SIGHUP reload that changes the tools
// sends notifications/tools/list_changed, tagged with the stream's
// subscription id, only to the streams that asked for it; at shutdown every
// stream ends with its {resultType: "complete"} result. Bad input: a
// missing or malformed filter (-32602 naming the field), listen on a
// 2025-11-25 session (-32601), more streams than a client may hold (429;
// the place of a client that went is freed once a keep-alive finds it gone).
// On stdio, notifications/cancelled naming the listen request ends it.
//
// The server runs the conformance fixtures on a cloud backend nothing
// answers (127.0.0.1:9) with a placeholder key: the fixtures never call it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, renameSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { buildDir as BUILD, hostBin as BIN, waitFor } from './lib/host.mjs';

const REV = '2026-07-28';
const SUB = 'io.modelcontextprotocol/subscriptionId';
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-listen-'));
const conf = path.join(work, 'listen.yaml');
const META = {
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientInfo': { name: 'listen-test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const children = [];

// The deployment; exclude: tools left out (a reload changes them).
function put(exclude = [], plugins = ['conformance']) {
  const text = [
    'server:', '  name: listen-test', '  http:', '    listen: 127.0.0.1:0',
    'runloop:', '  backend: cloud', '  base_url: "http://127.0.0.1:9"', '  api_key: "rl_placeholder"',
    'plugins:', ...plugins.map((p) => `  - name: ${p}`),
    ...(exclude.length ? ['tools:', `  exclude: [${exclude.join(', ')}]`] : []), '',
  ].join('\n');
  writeFileSync(`${conf}.new`, text);
  renameSync(`${conf}.new`, conf);
}

function spawnHost(transport) {
  const env = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins'),
    RLMCP_STATE_DIR: path.join(work, `state-${transport}`) };
  delete env.RUNLOOP_API_KEY;
  const child = spawn(BIN, ['-c', conf, '--transport', transport],
    { env, stdio: [transport === 'stdio' ? 'pipe' : 'ignore', transport === 'stdio' ? 'pipe' : 'ignore', 'pipe'] });
  const s = { child, log: '', port: 0, exited: false, code: null };
  children.push(s);
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { s.log += d; });
  child.on('close', (code) => { s.exited = true; s.code = code; });
  return s;
}

async function startHttp() {
  const s = spawnHost('http');
  await waitFor(() => {
    const m = /\(port (\d+)\)/.exec(s.log);
    if (m) s.port = Number(m[1]);
    if (s.exited) throw new Error(`server exited:\n${s.log}`);
    return s.port > 0;
  }, 60000, 'the HTTP server to listen');
  return s;
}

// SIGTERM once (a second one during the shutdown would end it at once).
function term(s) {
  if (!s.exited && !s.termed) s.child.kill('SIGTERM');
  s.termed = true;
}

async function stop(s) {
  term(s);
  await waitFor(() => s.exited, 60000, 'the server to exit');
  assert.doesNotMatch(s.log, /AddressSanitizer|LeakSanitizer|runtime error:/, s.log.slice(-4000));
  assert.equal(s.code, 0, s.log.slice(-2000));
}

const RELOADED = /reload: .*: \d+ tools from \d+ plugins/g;
const reloads = (s) => (s.log.match(RELOADED) ?? []).length;

let nextId = 1;
function body(method, params, id = nextId++) {
  return { id, text: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: META } }) };
}

function headers(method, extra = {}) {
  return { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': REV, 'mcp-method': method, ...extra };
}

// A whole request (JSON or SSE reply read to its end).
function request(port, hdrs, text) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: hdrs, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error('request timed out')));
    req.end(text);
  });
}

// An open listen stream: its messages as they come, and whether it ended.
function listen(port, notifications) {
  const { id, text } = body('subscriptions/listen', { notifications });
  const st = { id, msgs: [], ended: false, status: 0, buf: '', req: null };
  st.req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp',
    headers: headers('subscriptions/listen'), agent: false }, (res) => {
    st.status = res.statusCode;
    res.setEncoding('utf8');
    res.on('data', (c) => {
      st.buf += c;
      let i;
      while ((i = st.buf.indexOf('\n\n')) >= 0) {
        const ev = st.buf.slice(0, i);
        st.buf = st.buf.slice(i + 2);
        const data = ev.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (data) st.msgs.push(JSON.parse(data));
      }
      if (st.buf.trimStart().startsWith('{')) { /* a JSON reply: parsed at the end */ }
    });
    res.on('end', () => {
      if (st.buf.trim().startsWith('{')) st.msgs.push(JSON.parse(st.buf));
      st.ended = true;
    });
    res.on('error', () => { st.ended = true; });
  });
  st.req.on('error', () => { st.ended = true; });
  st.req.end(text);
  return st;
}

const ack = (st) => st.msgs.find((m) => m.method === 'notifications/subscriptions/acknowledged');
const changes = (st, list = 'tools') => st.msgs.filter((m) => m.method === `notifications/${list}/list_changed`);

async function toolNames(port) {
  const { text } = body('tools/list', {});
  const r = await request(port, headers('tools/list'), text);
  return JSON.parse(r.body).result.tools.map((t) => t.name);
}

before(() => { put(); });

after(async () => {
  for (const s of children) if (!s.exited) s.child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

test('HTTP: filtered, tagged notifications on a SIGHUP reload; the result at shutdown', async () => {
  const srv = await startHttp();
  try {
    const tools = listen(srv.port, { toolsListChanged: true });
    const prompts = listen(srv.port, { promptsListChanged: true });
    const res = listen(srv.port, { resourceSubscriptions: ['test://static-text', 'test://no-such-thing'] });
    const rlist = listen(srv.port, { resourcesListChanged: true, promptsListChanged: false });
    for (const st of [tools, prompts, res, rlist]) await waitFor(() => ack(st) || st.ended, 30000, 'the acknowledgement');
    for (const st of [tools, prompts, res, rlist]) {
      assert.equal(st.status, 200);
      assert.equal(st.msgs[0].method, 'notifications/subscriptions/acknowledged', JSON.stringify(st.msgs));
      assert.equal(st.msgs[0].params._meta[SUB], st.id);
    }
    assert.deepEqual(ack(tools).params.notifications, { toolsListChanged: true });
    assert.deepEqual(ack(prompts).params.notifications, { promptsListChanged: true });
    assert.deepEqual(ack(rlist).params.notifications, { resourcesListChanged: true });
    assert.deepEqual(ack(res).params.notifications, { resourceSubscriptions: ['test://static-text'] });

    assert.ok((await toolNames(srv.port)).includes('test_simple_text'));
    const n = reloads(srv);
    put(['test_simple_text']);
    srv.child.kill('SIGHUP');
    await waitFor(() => reloads(srv) > n, 60000, `the reload:\n${srv.log.slice(-2000)}`);
    await waitFor(() => changes(tools).length > 0, 30000, 'tools/list_changed on the stream that asked');
    assert.equal(changes(tools).length, 1);
    assert.equal(changes(tools)[0].params._meta[SUB], tools.id);
    assert.ok(!(await toolNames(srv.port)).includes('test_simple_text'), 'the reload removed the tool');
    // Prompts and resources did not change: nothing for them.
    assert.equal(changes(prompts, 'prompts').length + changes(rlist, 'resources').length, 0);

    // Another plugin set: the prompts go, the resources change.
    put([], ['files']);
    srv.child.kill('SIGHUP');
    await waitFor(() => reloads(srv) > n + 1, 60000, `the second reload:\n${srv.log.slice(-2000)}`);
    await waitFor(() => changes(prompts, 'prompts').length > 0, 30000, 'prompts/list_changed');
    await waitFor(() => changes(rlist, 'resources').length > 0, 30000, 'resources/list_changed');
    await waitFor(() => changes(tools).length > 1, 30000, 'the second tools/list_changed');
    assert.match(srv.log, /the prompts changed; notifications\/prompts\/list_changed sent/);

    // The reload's log line comes after its notifications were queued on
    // every stream: the result at shutdown comes after any of them.
    term(srv);
    for (const st of [tools, prompts, res, rlist]) await waitFor(() => st.ended, 30000, 'the stream to end');
    for (const st of [tools, prompts, res, rlist]) {
      const last = st.msgs.at(-1);
      assert.equal(last.id, st.id, JSON.stringify(st.msgs));
      assert.equal(last.result.resultType, 'complete');
      assert.equal(last.result._meta[SUB], st.id);
      for (const m of st.msgs.filter((x) => x.method)) assert.equal(m.params._meta[SUB], st.id);
    }
    assert.equal(changes(prompts).length, 0, 'tools/list_changed on a stream that did not ask for it');
    assert.equal(changes(res).length, 0, 'tools/list_changed on a stream that did not ask for it');
    assert.deepEqual(prompts.msgs.map((m) => m.method ?? 'result'),
      ['notifications/subscriptions/acknowledged', 'notifications/prompts/list_changed', 'result']);
    assert.deepEqual(rlist.msgs.map((m) => m.method ?? 'result'),
      ['notifications/subscriptions/acknowledged', 'notifications/resources/list_changed', 'result']);
  } finally {
    put();
    await stop(srv);
  }
});

test('HTTP: bad filters, listen on a 2025-11-25 session, too many streams', async () => {
  const srv = await startHttp();
  try {
    const bad = [
      [{}, /params\.notifications must be an object/],
      [{ notifications: 'all' }, /params\.notifications must be an object/],
      [{ notifications: { toolsListChanged: 'yes' } }, /params\.notifications\.toolsListChanged must be true or false/],
      [{ notifications: { resourceSubscriptions: 'test://static-text' } }, /resourceSubscriptions must be an array/],
      [{ notifications: { resourceSubscriptions: [7] } }, /resourceSubscriptions must hold resource URIs/],
    ];
    for (const [params, re] of bad) {
      const { id, text } = body('subscriptions/listen', params);
      const r = await request(srv.port, headers('subscriptions/listen'), text);
      const m = JSON.parse(r.body);
      assert.equal(m.id, id, r.body);
      assert.equal(m.error?.code, -32602, r.body);
      assert.match(m.error.message, re);
    }

    // 2025-11-25: the GET stream and resources/subscribe, no listen.
    const init = await request(srv.port, { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } } }));
    const sid = init.headers['mcp-session-id'];
    assert.ok(sid, init.body);
    const r = await request(srv.port, { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } }));
    assert.equal(JSON.parse(r.body).error?.code, -32601, r.body);

    // One client holds at most 16 streams at once.
    const open = [];
    for (let i = 0; i < 16; i++) open.push(listen(srv.port, { toolsListChanged: true }));
    for (const st of open) await waitFor(() => ack(st) || st.ended, 30000, 'the acknowledgement');
    for (const st of open) assert.ok(ack(st), JSON.stringify(st.msgs));
    const { text } = body('subscriptions/listen', { notifications: { toolsListChanged: true } });
    const over = await request(srv.port, headers('subscriptions/listen'), text);
    assert.equal(over.status, 429, over.body);
    assert.match(JSON.parse(over.body).error.message, /already has 16 subscriptions\/listen streams/);
    // A client that went is noticed at the next keep-alive (every 10 s)
    // and its place is freed.
    open[0].req.destroy();
    await waitFor(() => open[0].ended, 30000, 'the first stream to close');
    let again = null;
    await waitFor(async () => {
      const st = listen(srv.port, { toolsListChanged: true });
      await waitFor(() => st.status !== 0 || st.ended, 30000, 'an answer');
      if (st.status === 200) { again = st; return true; }
      await waitFor(() => st.ended, 30000, 'the refusal to end');
      await new Promise((r) => setTimeout(r, 500));
      return false;
    }, 120000, 'the place of the stream whose client went');
    open.push(again);
    await waitFor(() => ack(again), 30000, 'the acknowledgement');
    term(srv);
    for (const st of open.slice(1)) await waitFor(() => st.ended, 30000, 'the stream to end');
    for (const st of open.slice(1)) assert.equal(st.msgs.at(-1).result?.resultType, 'complete', JSON.stringify(st.msgs));
  } finally {
    await stop(srv);
  }
});

test('stdio: tagged notifications per subscription, cancel ends one, EOF ends the rest with their result', async () => {
  const s = spawnHost('stdio');
  const out = [];
  let buf = '';
  s.child.stdout.setEncoding('utf8');
  s.child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim()) out.push(JSON.parse(line));
    }
  });
  const send = (o) => s.child.stdin.write(`${JSON.stringify(o)}\n`);
  const tagged = (method, id) => out.filter((m) => m.method === method && m.params?._meta?.[SUB] === id);
  try {
    const a = body('subscriptions/listen', { notifications: { toolsListChanged: true } });
    const b = body('subscriptions/listen', { notifications: { toolsListChanged: true } });
    const c = body('subscriptions/listen', { notifications: { promptsListChanged: true } });
    for (const x of [a, b, c]) s.child.stdin.write(`${x.text}\n`);
    for (const x of [a, b, c]) {
      await waitFor(() => tagged('notifications/subscriptions/acknowledged', x.id).length === 1, 30000, 'the acknowledgements');
    }
    // b ends on the client's notifications/cancelled: no answer comes.
    send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: b.id } });
    // Lines are served in order: once this is answered, the cancel was too.
    const p = body('tools/list', {});
    s.child.stdin.write(`${p.text}\n`);
    await waitFor(() => out.some((m) => m.id === p.id), 30000, 'tools/list');
    const n = reloads(s);
    put(['test_simple_text']);
    s.child.kill('SIGHUP');
    await waitFor(() => reloads(s) > n, 60000, `the reload:\n${s.log.slice(-2000)}`);
    await waitFor(() => tagged('notifications/tools/list_changed', a.id).length === 1, 30000, 'tools/list_changed for a');
    // After the change was sent: a request answered now comes after it.
    const t = body('tools/list', {});
    s.child.stdin.write(`${t.text}\n`);
    await waitFor(() => out.some((m) => m.id === t.id), 30000, 'tools/list');
    assert.ok(!out.find((m) => m.id === t.id).result.tools.some((x) => x.name === 'test_simple_text'));
    assert.equal(tagged('notifications/tools/list_changed', b.id).length, 0, 'a cancelled stream got a notification');
    assert.equal(tagged('notifications/tools/list_changed', c.id).length, 0, 'an unrequested type was sent');
    // Untagged tools/list_changed: none (there is no 2025-11-25 session here).
    assert.equal(out.filter((m) => m.method === 'notifications/tools/list_changed' && !m.params?._meta?.[SUB]).length, 0);
    s.child.stdin.end();
    await waitFor(() => s.exited, 60000, 'the host to exit');
    for (const x of [a, c]) {
      const res = out.find((m) => m.id === x.id);
      assert.ok(res, `no result for ${x.id}: ${JSON.stringify(out)}`);
      assert.equal(res.result.resultType, 'complete');
      assert.equal(res.result._meta[SUB], x.id);
    }
    assert.equal(out.find((m) => m.id === b.id), undefined, 'a cancelled listen got an answer');
    assert.doesNotMatch(s.log, /AddressSanitizer|LeakSanitizer|runtime error:/, s.log.slice(-4000));
    assert.equal(s.code, 0, s.log.slice(-2000));
  } finally {
    put();
    if (!s.exited) s.child.kill('SIGTERM');
  }
});
