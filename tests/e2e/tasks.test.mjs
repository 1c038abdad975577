// tasks.test.mjs - execute_command as an MCP task, with the official MCP SDK
// client (its experimental tasks API) against runloop-mcp over Streamable
// HTTP on a real devboxd: a task started, polled and its result fetched; a
// cancel that kills the command (checked in the devbox); the task found
// again from a new session and after the host restarted; another caller's
// credential, forged and malformed ids refused; the 2026-07-28 tasks
// extension (server-directed creation, tasks/get with the result inline,
// tasks/cancel's empty ack, the capability gate) with raw HTTP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { waitFor as waitForEvery } from './lib/host.mjs';
import { rawCall, rpcError, startTrackedEngine, startTrackedHost, stopTracked, stopTrackedHost } from './lib/tasks.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const REV = '2026-07-28';
const LONG = { timeout: 300000 };
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-tasks-'));
const state = path.join(work, 'state');
const conf = path.join(work, 'tasks.yaml');
const procs = [];
let host;
let box;

// Every 100 ms: some conditions here are tool calls on the devbox.
const waitFor = (cond, ms, what) => waitForEvery(cond, ms, what, 100);

const startHost = () => startTrackedHost(procs, conf);
const stopHost = stopTrackedHost;

async function connect(key) {
  const headers = key ? { 'X-Runloop-Api-Key': key } : {};
  const client = new Client({ name: 'tasks-test', version: '1' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${host.port}/mcp`),
    { requestInit: { headers } });
  await client.connect(transport);
  return client;
}

async function tool(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 280000 });
  assert.ok(!r.isError, JSON.stringify(r));
  return r.structuredContent;
}

// Collect a task-augmented call through the SDK's stream (create, poll, result).
async function streamTask(client, args, ttl = 600000) {
  const msgs = [];
  const stream = client.experimental.tasks.callToolStream({ name: 'execute_command', arguments: args },
    undefined, { task: { ttl }, timeout: 280000 });
  for await (const m of stream) msgs.push(m);
  return msgs;
}

before(async () => {
  await startTrackedEngine(procs, state);
  writeFileSync(conf, [
    'server:', '  name: tasks-test', '  http:', '    listen: 127.0.0.1:0',
    'host:', '  log_level: info',
    'runloop:', '  backend: local', `  state_dir: ${JSON.stringify(state)}`,
    'plugins:',
    '  - name: lifecycle', '    config: {create_wait_seconds: 120}',
    '  - name: exec', '    config: {default_timeout_seconds: 120, create_wait_seconds: 120}', '',
  ].join('\n'));
  host = await startHost();
  const c = await connect();
  box = (await tool(c, 'create_devbox', { name: 'tasks' })).id;
  assert.ok(box);
  await c.close();
});

after(async () => {
  if (box && host && !host.exited) {
    try {
      const c = await connect();
      await tool(c, 'shutdown_devbox', { devbox_id: box });
      await c.close();
    } catch { /* the engine goes next anyway */ }
  }
  await stopTracked(procs);
  rmSync(work, { recursive: true, force: true });
});

test('execute_command offers tasks; the server says it serves them', async () => {
  const c = await connect();
  const caps = c.getServerCapabilities();
  assert.deepEqual(caps.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
  const { tools } = await c.listTools();
  const exec = tools.find((t) => t.name === 'execute_command');
  assert.deepEqual(exec.execution, { taskSupport: 'optional' });
  assert.equal(tools.find((t) => t.name === 'get_execution').execution, undefined);
  await c.close();
});

let doneTask;

test('a task is started, polled until completed, and its result fetched', LONG, async () => {
  const c = await connect();
  await c.listTools(); // the SDK learns which tools take tasks
  const msgs = await streamTask(c, { devbox_id: box, command: 'sleep 2; echo task-out; echo err >&2; exit 3' });
  const kinds = msgs.map((m) => m.type);
  assert.equal(kinds[0], 'taskCreated', JSON.stringify(msgs));
  const task = msgs[0].task;
  assert.match(task.taskId, /^rt1\./);
  assert.equal(task.status, 'working');
  assert.equal(task.ttl, 600000);
  assert.ok(task.pollInterval > 0);
  assert.ok(!Number.isNaN(Date.parse(task.createdAt)));
  assert.ok(kinds.includes('taskStatus'));
  assert.ok(msgs.some((m) => m.type === 'taskStatus' && m.task.status === 'completed'), JSON.stringify(msgs));
  const last = msgs.at(-1);
  assert.equal(last.type, 'result', JSON.stringify(last));
  // A non-zero exit is a normal result, as with the plain call.
  assert.equal(last.result.structuredContent.exit_code, 3);
  assert.equal(last.result.structuredContent.stdout, 'task-out\n');
  assert.equal(last.result.structuredContent.stderr, 'err\n');
  assert.equal(last.result._meta['io.modelcontextprotocol/related-task'].taskId, task.taskId);
  const got = await c.experimental.tasks.getTask(task.taskId);
  assert.equal(got.status, 'completed');
  const listed = await c.experimental.tasks.listTasks();
  assert.ok(listed.tasks.some((t) => t.taskId === task.taskId && t.status === 'completed'), JSON.stringify(listed));
  doneTask = task.taskId;
  await c.close();
});

test('tasks/result blocks until the command ends', LONG, async () => {
  const c = await connect();
  const created = await c.request({ method: 'tools/call', params: { name: 'execute_command',
    arguments: { devbox_id: box, command: 'sleep 3; echo late' }, task: {} } },
  CreateTaskResultSchema);
  const id = created.task.taskId;
  assert.equal((await c.experimental.tasks.getTask(id)).status, 'working');
  const r = await c.experimental.tasks.getTaskResult(id, CallToolResultSchema, { timeout: 120000 });
  assert.equal(r.structuredContent.stdout, 'late\n');
  await c.close();
});

test('tasks/cancel kills the command, confirmed in the devbox', LONG, async () => {
  const c = await connect();
  const marker = `/tmp/task-cancel-${process.pid}`;
  const created = await c.request({ method: 'tools/call', params: { name: 'execute_command',
    arguments: { devbox_id: box, command: `sleep 317 && touch ${marker}` }, task: { ttl: 600000 } } },
  CreateTaskResultSchema);
  const id = created.task.taskId;
  // Running before the cancel: the sleep is there.
  await waitFor(async () => (await tool(c, 'execute_command', { devbox_id: box, command: 'pgrep -f "sleep 31[7]" || true' })).stdout.trim() !== '',
    60000, 'the command to run');
  const cancelled = await c.experimental.tasks.cancelTask(id);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal(cancelled.taskId, id);
  assert.equal((await c.experimental.tasks.getTask(id)).status, 'cancelled');
  const after = await tool(c, 'execute_command', { devbox_id: box, command: `pgrep -f "sleep 31[7]"; test -e ${marker}; echo $?` });
  assert.equal(after.stdout.trim(), '1', `the command is gone and never finished: ${after.stdout}`);
  const r = await c.experimental.tasks.getTaskResult(id, CallToolResultSchema);
  assert.equal(r.structuredContent.ended_by, 'killed');
  // A terminal task cannot be cancelled (2025-11-25: -32602).
  const e = await rpcError(c.experimental.tasks.cancelTask(id));
  assert.equal(e.code, -32602);
  assert.match(e.message, /already ended/);
  await c.close();
});

test('a new session (reconnect) resolves the task', async () => {
  assert.ok(doneTask);
  const c = await connect();
  assert.equal((await c.experimental.tasks.getTask(doneTask)).status, 'completed');
  const r = await c.experimental.tasks.getTaskResult(doneTask, CallToolResultSchema);
  assert.equal(r.structuredContent.stdout, 'task-out\n');
  await c.close();
});

test('another caller, forged and malformed ids are refused', async () => {
  assert.ok(doneTask);
  const other = await connect('another-callers-key');
  for (const call of [
    () => other.experimental.tasks.getTask(doneTask),
    () => other.experimental.tasks.getTaskResult(doneTask, CallToolResultSchema),
    () => other.experimental.tasks.cancelTask(doneTask),
  ]) {
    const e = await rpcError(call());
    assert.equal(e.code, -32602);
    assert.match(e.message, /no task .* for this caller/);
  }
  assert.ok(!(await other.experimental.tasks.listTasks()).tasks.some((t) => t.taskId === doneTask));
  await other.close();
  const c = await connect();
  const [pre, payload, sig] = doneTask.split('.');
  const forged = Buffer.from(payload, 'base64url').toString().replace('"l":600000', '"l":600001');
  const bad = [
    'nope', '', 'rt1.', 'rt1.x.y', `${pre}.${Buffer.from(forged).toString('base64url')}.${sig}`,
    `${pre}.${payload}.${sig.slice(0, -2)}AA`, `${doneTask}x`, 'rt1.' + 'A'.repeat(5000),
  ];
  for (const id of bad) {
    const e = await rpcError(c.experimental.tasks.getTask(id));
    assert.equal(e.code, -32602, `id ${id.slice(0, 40)}`);
  }
  for (const params of [{}, { taskId: 7 }]) {
    const e = await rpcError(c.request({ method: 'tasks/get', params }, GetTaskResultSchema));
    assert.equal(e.code, -32602);
    assert.match(e.message, /taskId/);
  }
  for (const task of [{ ttl: -1 }, { ttl: 'soon' }, 5]) {
    const e = await rpcError(c.request({ method: 'tools/call', params: { name: 'execute_command',
      arguments: { devbox_id: box, command: 'true' }, task } }, CreateTaskResultSchema));
    assert.equal(e.code, -32602, JSON.stringify(task));
  }
  // A tool error at the start is the tool's answer; no task is made.
  const r = await c.request({ method: 'tools/call', params: { name: 'execute_command',
    arguments: { devbox_id: 'dbx_missing', command: 'true' }, task: {} } },
  CallToolResultSchema);
  assert.equal(r.isError, true);
  assert.equal(r.task, undefined);
  await c.close();
});

test('a host restart still resolves the task (key in the state dir)', LONG, async () => {
  assert.ok(doneTask);
  const keyFile = path.join(state, 'task.key');
  assert.equal(statSync(keyFile).mode & 0o777, 0o600);
  await stopHost(host);
  host = await startHost();
  const c = await connect();
  assert.equal((await c.experimental.tasks.getTask(doneTask)).status, 'completed');
  const r = await c.experimental.tasks.getTaskResult(doneTask, CallToolResultSchema);
  assert.equal(r.structuredContent.stdout, 'task-out\n');
  await c.close();
});

// ---- 2026-07-28 (raw HTTP) --------------------------------------------------

const META = {
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
const call = (method, params = {}, meta = META) => rawCall(host.port, method, params, meta);

test('2026-07-28: the tasks extension', LONG, async () => {
  const disc = await call('server/discover');
  assert.deepEqual(disc.msg.result.capabilities.extensions, { 'io.modelcontextprotocol/tasks': {} });
  assert.equal(disc.msg.result.capabilities.tasks, undefined);
  // Declared: the server makes a task (flat CreateTaskResult).
  const created = await call('tools/call', { name: 'execute_command', arguments: { devbox_id: box, command: 'sleep 2; echo v2' } });
  const t = created.msg.result;
  assert.equal(t.resultType, 'task', created.body);
  assert.equal(t.task, undefined);
  assert.equal(t.status, 'working');
  assert.ok(Number.isInteger(t.ttlMs) && Number.isInteger(t.pollIntervalMs));
  assert.equal(t.ttl, undefined);
  assert.ok(!('requestState' in t));
  let got;
  await waitFor(async () => {
    got = (await call('tasks/get', { taskId: t.taskId })).msg.result;
    return got.status !== 'working';
  }, 120000, 'the task to end');
  assert.equal(got.status, 'completed', JSON.stringify(got));
  assert.equal(got.resultType, 'complete');
  assert.equal(got.result.structuredContent.stdout, 'v2\n');
  assert.equal(got.result._meta?.['io.modelcontextprotocol/related-task'], undefined);
  // Cancel: an empty ack, also on a terminal task.
  const ack = await call('tasks/cancel', { taskId: t.taskId });
  assert.deepEqual(ack.msg.result, { resultType: 'complete' });
  const upd = await call('tasks/update', { taskId: t.taskId, inputResponses: {} });
  assert.deepEqual(upd.msg.result, { resultType: 'complete' });
  // A 2025-11-25 task id works here too (one key, one caller).
  assert.equal((await call('tasks/get', { taskId: doneTask })).msg.result.status, 'completed');
  // Removed in the extension.
  for (const m of ['tasks/result', 'tasks/list']) {
    const r = await call(m, { taskId: t.taskId });
    assert.equal(r.msg.error.code, -32601, r.body);
  }
  // Not declared: tools/call runs in place, tasks/* need the extension.
  const plain = { ...META, 'io.modelcontextprotocol/clientCapabilities': {} };
  const sync = await call('tools/call', { name: 'execute_command', arguments: { devbox_id: box, command: 'echo sync' }, task: { ttl: 1000 } }, plain);
  assert.equal(sync.msg.result.resultType, 'complete');
  assert.equal(sync.msg.result.structuredContent.stdout, 'sync\n');
  for (const m of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
    const r = await call(m, { taskId: t.taskId, inputResponses: {} }, plain);
    assert.equal(r.status, 400, r.body);
    assert.equal(r.msg.error.code, -32021, r.body);
  }
  // Mcp-Name must carry the task id.
  const mismatch = await new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 999, method: 'tasks/get', params: { taskId: t.taskId, _meta: META } });
    const req = http.request({ host: '127.0.0.1', port: host.port, method: 'POST', path: '/mcp', agent: false, headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': REV, 'mcp-method': 'tasks/get', 'mcp-name': 'rt1.other' } }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.equal(mismatch.status, 400);
  assert.equal(JSON.parse(mismatch.body).error.code, -32020);
  // Other tools never become tasks.
  const other = await call('tools/call', { name: 'get_devbox', arguments: { devbox_id: box } });
  assert.equal(other.msg.result.resultType, 'complete', other.body);
});
