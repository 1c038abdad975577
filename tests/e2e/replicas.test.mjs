// replicas.test.mjs - two runloop-mcp HTTP processes behind haproxy (round
// robin), one engine behind both, and one MCP 2026-07-28 client whose
// requests alternate between the replicas: lists, input rounds started on
// one replica and finished on the other, a devbox created on one and used
// on the other, a streamed exec with progress, an async exec started on one
// replica and awaited on the other.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { trackChild, waitFor as waitForEvery } from './lib/host.mjs';

const SRC = process.env.RLMCP_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
const BUILD = process.env.RLMCP_BUILD_DIR ?? path.join(SRC, 'build');
const BIN = path.join(BUILD, 'bin', 'runloop-mcp');
const DEVBOXD = path.join(BUILD, 'bin', 'devboxd');
const REV = '2026-07-28';
const LONG = { timeout: 300000 };
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-replicas-'));
const state = path.join(work, 'state');
const procs = [];

const track = (name, child) => trackChild(procs, name, child);
// Every 100 ms: some conditions here are tool calls on the devbox.
const waitFor = (cond, ms, what) => waitForEvery(cond, ms, what, 100);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.on('connect', () => { c.destroy(); resolve(true); });
    c.on('error', () => resolve(false));
  });
}

async function startReplica(name, conf) {
  const env = { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins') };
  delete env.RUNLOOP_API_KEY;
  const p = track(name, spawn(BIN, ['-c', conf, '--transport', 'http'], { env, stdio: ['ignore', 'ignore', 'pipe'] }));
  await waitFor(() => {
    if (p.exited) throw new Error(`${name} exited:\n${p.log}`);
    return /\(port (\d+)\)/.test(p.log);
  }, 60000, `${name} to listen`);
  p.port = Number(/\(port (\d+)\)/.exec(p.log)[1]);
  return p;
}

let lbPort;

before(async () => {
  assert.ok(spawnSync('haproxy', ['-v']).status === 0, 'haproxy is missing: run scripts/bootstrap');
  const engine = track('devboxd', spawn(DEVBOXD, ['--state-dir', state], { stdio: ['ignore', 'ignore', 'pipe'] }));
  await waitFor(() => {
    if (engine.exited) throw new Error(`devboxd exited:\n${engine.log}`);
    return existsSync(path.join(state, 'devboxd.sock'));
  }, 30000, 'devboxd');
  const conf = path.join(work, 'replica.yaml');
  writeFileSync(conf, [
    'server:', '  name: replica-test', '  http:', '    listen: 127.0.0.1:0',
    '    state_secret: "replica-test-secret-0123456789abcdef0123456789"',
    'host:', '  log_level: info',
    'runloop:', '  backend: local', `  state_dir: ${JSON.stringify(state)}`,
    'plugins:', '  - name: conformance',
    '  - name: lifecycle', '    config: {create_wait_seconds: 120}',
    '  - name: exec', '    config: {default_timeout_seconds: 120, create_wait_seconds: 120}', '',
  ].join('\n'));
  const a = await startReplica('replica-a', conf);
  const b = await startReplica('replica-b', conf);
  lbPort = await freePort();
  const cfg = path.join(work, 'haproxy.cfg');
  writeFileSync(cfg, [
    'global', '  maxconn 256',
    'defaults', '  mode http', '  timeout connect 5s', '  timeout client 300s', '  timeout server 300s',
    'frontend mcp', `  bind 127.0.0.1:${lbPort}`, '  default_backend replicas',
    'backend replicas', '  balance roundrobin',
    // The replicas bind loopback and check Host against their own port.
    '  http-request set-header Host localhost',
    '  http-response set-header X-Replica %[srv_name]',
    `  server a 127.0.0.1:${a.port}`, `  server b 127.0.0.1:${b.port}`, '',
  ].join('\n'));
  const lb = track('haproxy', spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] }));
  await waitFor(async () => {
    if (lb.exited) throw new Error(`haproxy exited:\n${lb.log}`);
    return canConnect(lbPort);
  }, 30000, 'haproxy');
});

after(async () => {
  // The balancer first, then the replicas (clean exit), then the engine.
  for (const p of [...procs].reverse()) {
    if (!p.exited) p.child.kill('SIGTERM');
    const t = setTimeout(() => p.child.kill('SIGKILL'), 20000);
    const { code, sig } = await p.gone;
    clearTimeout(t);
    if (p.name.startsWith('replica')) {
      assert.doesNotMatch(p.log, /AddressSanitizer|LeakSanitizer|runtime error:/, p.log.slice(-4000));
      assert.equal(code, 0, `${p.name} exited with ${code ?? sig}:\n${p.log.slice(-2000)}`);
    }
  }
  rmSync(work, { recursive: true, force: true });
});

const META = {
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
};
let nextId = 1;

// One 2026-07-28 request through the balancer; every message of the reply.
function call(method, params = {}) {
  const id = nextId++;
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...META, ...(params._meta ?? {}) } } });
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': REV, 'mcp-method': method,
  };
  if (method === 'tools/call') headers['mcp-name'] = params.name;
  if (method.startsWith('tasks/')) headers['mcp-name'] = params.taskId;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: lbPort, method: 'POST', path: '/mcp', headers, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        const msgs = data.trimStart().startsWith('{') ? [JSON.parse(data)]
          : data.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
        const msg = msgs.find((m) => m.id === id);
        resolve({ status: res.statusCode, replica: res.headers['x-replica'], msgs, msg, body: data });
      });
    });
    req.on('error', reject);
    req.setTimeout(280000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

async function tool(name, args, meta) {
  const r = await call('tools/call', { name, arguments: args, ...(meta ? { _meta: meta } : {}) });
  assert.equal(r.status, 200, r.body);
  assert.ok(r.msg?.result, r.body);
  assert.ok(!r.msg.result.isError, r.body);
  return r;
}

test('requests alternate between the replicas and see the same deployment', async () => {
  const seen = [];
  let first;
  for (let i = 0; i < 4; i++) {
    const r = await call('tools/list');
    assert.equal(r.status, 200, r.body);
    seen.push(r.replica);
    const names = r.msg.result.tools.map((t) => t.name);
    first ??= names;
    assert.deepEqual(names, first, 'one deployment, one tool order');
  }
  assert.deepEqual(new Set(seen), new Set(['a', 'b']), `replicas seen: ${seen}`);
  for (let i = 1; i < seen.length; i++) assert.notEqual(seen[i], seen[i - 1], `round robin: ${seen}`);
});

test('an input round started on one replica finishes on the other', async () => {
  const args = { name: 'test_input_required_result_multi_round', arguments: {} };
  const r1 = await call('tools/call', args);
  assert.equal(r1.msg.result.resultType, 'input_required', r1.body);
  const r2 = await call('tools/call', { ...args, inputResponses: { step1: { action: 'accept', content: { name: 'Ada' } } }, requestState: r1.msg.result.requestState });
  assert.notEqual(r2.replica, r1.replica);
  assert.equal(r2.msg.result.resultType, 'input_required', r2.body);
  const r3 = await call('tools/call', { ...args, inputResponses: { step2: { action: 'accept', content: { color: 'blue' } } }, requestState: r2.msg.result.requestState });
  assert.notEqual(r3.replica, r2.replica);
  assert.equal(r3.msg.result.content[0].text, 'Ada likes blue', r3.body);
});

test('a devbox, a streamed exec with progress and an async exec across replicas', LONG, async () => {
  const created = await tool('create_devbox', { name: 'replicas' });
  const box = created.msg.result.structuredContent;
  assert.ok(box.id, created.body);
  try {
    const streamed = await tool('execute_command', { devbox_id: box.id, command: 'for i in 1 2 3; do echo tick $i; sleep 1; done' }, { progressToken: 'p1' });
    assert.notEqual(streamed.replica, created.replica);
    assert.equal(streamed.msg.result.structuredContent.stdout, 'tick 1\ntick 2\ntick 3\n');
    const progress = streamed.msgs.filter((m) => m.method === 'notifications/progress');
    assert.ok(progress.length >= 2, `progress through the balancer: ${streamed.body}`);
    assert.ok(progress.every((p) => p.params.progressToken === 'p1'));
    const started = await tool('execute_command_async', { devbox_id: box.id, command: 'sleep 2; echo done' });
    const exec = started.msg.result.structuredContent;
    const waited = await tool('wait_for_execution', { devbox_id: box.id, execution_id: exec.execution_id, timeout_seconds: 60 });
    assert.notEqual(waited.replica, started.replica);
    assert.equal(waited.msg.result.structuredContent.status, 'completed', waited.body);
    assert.equal(waited.msg.result.structuredContent.stdout, 'done\n');
    const got = await tool('get_execution', { devbox_id: box.id, execution_id: exec.execution_id });
    assert.equal(got.msg.result.structuredContent.exit_code, 0);
  } finally {
    await tool('shutdown_devbox', { devbox_id: box.id });
  }
});

test('a task started through one replica is followed and cancelled through the other', LONG, async () => {
  const created = await tool('create_devbox', { name: 'replica-tasks' });
  const box = created.msg.result.structuredContent.id;
  const ext = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
  try {
    const t1 = await call('tools/call', { name: 'execute_command', arguments: { devbox_id: box, command: 'sleep 1; echo across' }, _meta: ext });
    assert.equal(t1.msg.result.resultType, 'task', t1.body);
    let got;
    const seen = new Set();
    await waitFor(async () => {
      got = await call('tasks/get', { taskId: t1.msg.result.taskId, _meta: ext });
      seen.add(got.replica);
      return got.msg.result.status !== 'working';
    }, 120000, 'the task to end');
    assert.ok(seen.has(t1.replica === 'a' ? 'b' : 'a'), `read on the other replica: ${[...seen]}`);
    assert.equal(got.msg.result.status, 'completed', got.body);
    assert.equal(got.msg.result.result.structuredContent.stdout, 'across\n');
    const t2 = await call('tools/call', { name: 'execute_command', arguments: { devbox_id: box, command: 'sleep 300' }, _meta: ext });
    const ack = await call('tasks/cancel', { taskId: t2.msg.result.taskId, _meta: ext });
    assert.notEqual(ack.replica, t2.replica);
    assert.deepEqual(ack.msg.result, { resultType: 'complete' }, ack.body);
    await waitFor(async () => (await call('tasks/get', { taskId: t2.msg.result.taskId, _meta: ext })).msg.result.status === 'cancelled',
      60000, 'the task to read cancelled');
  } finally {
    await tool('shutdown_devbox', { devbox_id: box });
  }
});

test('server.http.state_secret shorter than 32 characters is refused at start', () => {
  const conf = path.join(work, 'short-secret.yaml');
  writeFileSync(conf, ['server:', '  http:', '    listen: 127.0.0.1:0', '    state_secret: "too-short"',
    'plugins:', '  - name: conformance', ''].join('\n'));
  const r = spawnSync(BIN, ['-c', conf, '--transport', 'http'], {
    env: { ...process.env, RLMCP_PLUGIN_DIR: path.join(BUILD, 'plugins'), RLMCP_STATE_DIR: path.join(work, 'state2') },
    encoding: 'utf8', timeout: 60000,
  });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /short-secret\.yaml:4:\d+: .*state_secret' must be at least 32 characters/);
  assert.doesNotMatch(r.stderr, /too-short/, 'the secret is never printed');
});
