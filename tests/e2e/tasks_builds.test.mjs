// tasks_builds.test.mjs - build_blueprint and create_snapshot as MCP tasks,
// with the official MCP SDK client (its experimental tasks API) against
// runloop-mcp over Streamable HTTP on a real devboxd: a build to completed
// with the blueprint in the result; a failing build to failed with the
// reason; a cancel that deletes a building blueprint (its build stopped, as
// devboxd reads it back); a snapshot to completed; a snapshot's cancel
// refused once it ended; another caller's and forged ids refused; the host
// restarted in the middle of a build and the task still resolving, and on
// a second host process with the same key (a replica); the
// 2026-07-28 tasks extension (a build's failure inline, a snapshot's result
// inline) with raw HTTP; and bad input (no task made).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor as waitForEvery } from './lib/host.mjs';
import { rawCall, rpcError, startTrackedEngine, startTrackedHost, stopTracked, stopTrackedHost } from './lib/tasks.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const REV = '2026-07-28';
const RELATED = 'io.modelcontextprotocol/related-task';
const LONG = { timeout: 400000 };
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-tasks-builds-'));
const state = path.join(work, 'state');
const conf = path.join(work, 'tasks-builds.yaml');
const procs = [];
let host;
let box;

const waitFor = (cond, ms, what) => waitForEvery(cond, ms, what, 200);

const startHost = () => startTrackedHost(procs, conf);
const stopHost = stopTrackedHost;

async function connect(key, port = host.port) {
  const headers = key ? { 'X-Runloop-Api-Key': key } : {};
  const client = new Client({ name: 'tasks-builds-test', version: '1' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`),
    { requestInit: { headers } }));
  await client.listTools(); // the SDK learns which tools take tasks
  return client;
}

async function tool(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 380000 });
  assert.ok(!r.isError, JSON.stringify(r));
  return r.structuredContent;
}

function startTask(client, name, args, task = {}) {
  return client.request({ method: 'tools/call', params: { name, arguments: args, task } }, CreateTaskResultSchema);
}

async function settled(client, id) {
  let t;
  await waitFor(async () => {
    t = await client.experimental.tasks.getTask(id);
    return t.status !== 'working';
  }, 380000, `task ${id.slice(0, 24)}… to end`);
  return t;
}

before(async () => {
  await startTrackedEngine(procs, state);
  writeFileSync(conf, [
    'server:', '  name: tasks-builds-test', '  http:', '    listen: 127.0.0.1:0',
    'host:', '  log_level: info',
    'runloop:', '  backend: local', `  state_dir: ${JSON.stringify(state)}`,
    'plugins:',
    '  - name: lifecycle', '    config: {create_wait_seconds: 300}',
    '  - name: exec', '    config: {default_timeout_seconds: 120, create_wait_seconds: 300}',
    '  - name: snapshots', '    config: {poll_interval_ms: 100, wait_seconds: 300}',
    '  - name: blueprints', '    config: {poll_interval_ms: 100, build_wait_seconds: 300}', '',
  ].join('\n'));
  host = await startHost();
  const c = await connect();
  box = (await tool(c, 'create_devbox', { name: 'tasks-builds' })).id;
  await tool(c, 'execute_command', { devbox_id: box, command: 'echo snapped > ~/marker.txt' });
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

test('build_blueprint and create_snapshot may run as tasks', async () => {
  const c = await connect();
  const { tools } = await c.listTools();
  const by = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.deepEqual(by.build_blueprint.execution, { taskSupport: 'optional' });
  assert.deepEqual(by.create_snapshot.execution, { taskSupport: 'optional' });
  for (const n of ['get_blueprint', 'delete_blueprint', 'get_snapshot_status', 'delete_snapshot'])
    assert.equal(by[n].execution, undefined, n);
  await c.close();
});

let builtTask;

test('a blueprint build as a task: completed, with the blueprint in the result', LONG, async () => {
  const c = await connect();
  const msgs = [];
  for await (const m of c.experimental.tasks.callToolStream({ name: 'build_blueprint',
    arguments: { name: 'task-bp', system_setup_commands: ['echo task-build-ok'] } },
  CallToolResultSchema, { task: { ttl: 600000 }, timeout: 380000 })) msgs.push(m);
  assert.equal(msgs[0].type, 'taskCreated', JSON.stringify(msgs));
  const id = msgs[0].task.taskId;
  assert.match(id, /^rt1\./);
  assert.equal(msgs[0].task.status, 'working');
  const last = msgs.at(-1);
  assert.equal(last.type, 'result', JSON.stringify(msgs));
  const bp = last.result.structuredContent;
  assert.equal(bp.status, 'build_complete', JSON.stringify(bp));
  assert.match(bp.id, /^bpt_/);
  assert.equal(bp.name, 'task-bp');
  assert.ok(bp.log_lines >= 1, JSON.stringify(bp));
  assert.equal(last.result._meta[RELATED].taskId, id);
  assert.equal((await c.experimental.tasks.getTask(id)).status, 'completed');
  // The same blueprint the backend has.
  assert.equal((await tool(c, 'get_blueprint', { blueprint_id: bp.id })).status, 'build_complete');
  builtTask = { id, bp: bp.id };
  await c.close();
});

test('a failing build as a task: failed, with the reason', LONG, async () => {
  const c = await connect();
  const made = await startTask(c, 'build_blueprint', { name: 'task-bad', system_setup_commands: ['echo before', 'exit 3'] });
  const t = await settled(c, made.task.taskId);
  assert.equal(t.status, 'failed', JSON.stringify(t));
  assert.match(t.statusMessage, /blueprint bpt_\S+ \(task-bad\) failed to build/);
  assert.match(t.statusMessage, /failing step: .*exit 3/);
  const e = await rpcError(c.experimental.tasks.getTaskResult(made.task.taskId, CallToolResultSchema));
  assert.equal(e.code, -32603);
  assert.match(e.message, /failed to build.*exit 3/);
  // A failed task cannot be cancelled.
  const again = await rpcError(c.experimental.tasks.cancelTask(made.task.taskId));
  assert.equal(again.code, -32602);
  assert.match(again.message, /already ended/);
  await c.close();
});

test('tasks/cancel deletes a building blueprint and stops its build', LONG, async () => {
  const c = await connect();
  const made = await startTask(c, 'build_blueprint', { name: 'task-cancel', system_setup_commands: ['sleep 600'] });
  const id = made.task.taskId;
  const bpId = JSON.parse(Buffer.from(id.split('.')[1], 'base64url')).h.blueprint_id;
  await waitFor(async () => (await tool(c, 'get_blueprint', { blueprint_id: bpId })).status === 'building',
    300000, 'the build to run');
  assert.equal((await c.experimental.tasks.getTask(id)).status, 'working');
  const cancelled = await c.experimental.tasks.cancelTask(id);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal(cancelled.taskId, id);
  // devboxd stopped the build before it marked the blueprint deleted.
  const bp = await tool(c, 'get_blueprint', { blueprint_id: bpId });
  assert.equal(bp.state, 'deleted', JSON.stringify(bp));
  assert.notEqual(bp.status, 'build_complete');
  const logs = await tool(c, 'get_blueprint_logs', { blueprint_id: bpId });
  assert.ok(logs.lines.some((l) => /deleted during the build/.test(l.message)), JSON.stringify(logs.lines.slice(-5)));
  assert.equal((await c.experimental.tasks.getTask(id)).status, 'cancelled');
  const e = await rpcError(c.experimental.tasks.cancelTask(id));
  assert.equal(e.code, -32602);
  assert.match(e.message, /already ended/);
  await c.close();
});

test('a snapshot as a task: completed, with the snapshot in the result; no cancel once ended', LONG, async () => {
  const c = await connect();
  const msgs = [];
  for await (const m of c.experimental.tasks.callToolStream({ name: 'create_snapshot',
    arguments: { devbox_id: box, name: 'task-snap', commit_message: 'as a task' } },
  CallToolResultSchema, { task: { ttl: 600000 }, timeout: 380000 })) msgs.push(m);
  assert.equal(msgs[0].type, 'taskCreated', JSON.stringify(msgs));
  const id = msgs[0].task.taskId;
  const last = msgs.at(-1);
  assert.equal(last.type, 'result', JSON.stringify(msgs));
  const snap = last.result.structuredContent;
  assert.equal(snap.status, 'complete', JSON.stringify(snap));
  assert.equal(snap.name, 'task-snap');
  assert.equal(snap.source_devbox_id, box);
  assert.equal(last.result._meta[RELATED].taskId, id);
  assert.equal((await tool(c, 'get_snapshot_status', { snapshot_id: snap.id })).status, 'complete');
  assert.equal((await c.experimental.tasks.getTask(id)).status, 'completed');
  const e = await rpcError(c.experimental.tasks.cancelTask(id));
  assert.equal(e.code, -32602);
  assert.match(e.message, /already ended/);
  // The snapshot holds the devbox's file.
  const from = await tool(c, 'create_devbox', { snapshot_id: snap.id });
  assert.equal((await tool(c, 'execute_command', { devbox_id: from.id, command: 'cat ~/marker.txt' })).stdout, 'snapped\n');
  await tool(c, 'shutdown_devbox', { devbox_id: from.id });
  await c.close();
});

test('another caller, forged and malformed ids are refused', async () => {
  assert.ok(builtTask);
  const other = await connect('another-callers-key');
  for (const call of [
    () => other.experimental.tasks.getTask(builtTask.id),
    () => other.experimental.tasks.getTaskResult(builtTask.id, CallToolResultSchema),
    () => other.experimental.tasks.cancelTask(builtTask.id),
  ]) {
    const e = await rpcError(call());
    assert.equal(e.code, -32602);
    assert.match(e.message, /no task .* for this caller/);
  }
  await other.close();
  const c = await connect();
  const [pre, payload, sig] = builtTask.id.split('.');
  // Another blueprint in a genuine id's payload: the signature no longer fits.
  const forged = Buffer.from(Buffer.from(payload, 'base64url').toString().replace(builtTask.bp, 'bpt_forged')).toString('base64url');
  for (const id of [`${pre}.${forged}.${sig}`, `${pre}.${payload}.${sig.slice(0, -2)}AA`, 'rt1.x.y', '']) {
    const e = await rpcError(c.experimental.tasks.getTask(id));
    assert.equal(e.code, -32602, `id ${id.slice(0, 40)}`);
  }
  await c.close();
});

test('another host process with the same key (a replica) resolves the task', async () => {
  assert.ok(builtTask);
  const replica = await startHost();
  const c = await connect(undefined, replica.port);
  assert.equal((await c.experimental.tasks.getTask(builtTask.id)).status, 'completed');
  const r = await c.experimental.tasks.getTaskResult(builtTask.id, CallToolResultSchema);
  assert.equal(r.structuredContent.id, builtTask.bp);
  assert.equal(r.structuredContent.status, 'build_complete');
  await c.close();
  await stopHost(replica);
});

test('bad input: the tool\'s own errors, and no task', async () => {
  const c = await connect();
  for (const [name, args, pattern] of [
    ['build_blueprint', {}, /name/],
    ['build_blueprint', { name: 'x', base_blueprint_id: 'bpt_a', base_blueprint_name: 'b' }, /at most one/],
    ['create_snapshot', { name: 'x' }, /devbox_id/],
    ['create_snapshot', { devbox_id: 'dbx_missing' }, /dbx_missing/],
  ]) {
    const r = await c.request({ method: 'tools/call', params: { name, arguments: args, task: {} } }, CallToolResultSchema);
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
    assert.match(r.content[0].text, pattern);
    assert.equal(r.task, undefined);
  }
  for (const task of [{ ttl: 0 }, { ttl: 'soon' }, []]) {
    const e = await rpcError(startTask(c, 'create_snapshot', { devbox_id: box }, task));
    assert.equal(e.code, -32602, JSON.stringify(task));
  }
  await c.close();
});

test('a host restart in the middle of a build: the task still resolves', LONG, async () => {
  let c = await connect();
  // Long enough that the host's restart falls inside the build.
  const made = await startTask(c, 'build_blueprint', { name: 'task-restart', system_setup_commands: ['sleep 30', 'echo after-restart'] });
  const id = made.task.taskId;
  // Still building right before the restart, so the restart is in the middle of it.
  const running = await c.experimental.tasks.getTask(id);
  assert.equal(running.status, 'working', JSON.stringify(running));
  await c.close();
  await stopHost(host);
  host = await startHost();
  c = await connect();
  assert.notEqual((await c.experimental.tasks.getTask(id)).status, 'failed');
  const r = await c.experimental.tasks.getTaskResult(id, CallToolResultSchema, { timeout: 380000 });
  assert.equal(r.structuredContent.status, 'build_complete', JSON.stringify(r));
  assert.equal(r.structuredContent.name, 'task-restart');
  assert.equal((await c.experimental.tasks.getTask(id)).status, 'completed');
  await c.close();
});

// ---- 2026-07-28 (raw HTTP) --------------------------------------------------

const META = {
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
const call = (method, params = {}) => rawCall(host.port, method, params, META, 380000);

async function settled2026(taskId) {
  let got;
  await waitFor(async () => {
    got = (await call('tasks/get', { taskId })).msg.result;
    return got.status !== 'working';
  }, 380000, 'the task to end');
  return got;
}

test('2026-07-28: a snapshot task with its result inline; a build\'s failure inline; cancel acks', LONG, async () => {
  const made = await call('tools/call', { name: 'create_snapshot', arguments: { devbox_id: box, name: 'v2' } });
  assert.equal(made.msg.result.resultType, 'task', made.body);
  const cancelAck = await call('tasks/cancel', { taskId: made.msg.result.taskId });
  assert.deepEqual(cancelAck.msg.result, { resultType: 'complete' }, cancelAck.body);
  const snap = await settled2026(made.msg.result.taskId);
  // A snapshot is not stopped by a cancel: it ends as it ends.
  assert.equal(snap.status, 'completed', JSON.stringify(snap));
  assert.equal(snap.result.structuredContent.status, 'complete');
  assert.equal(snap.result.structuredContent.name, 'v2');
  const bad = await call('tools/call', { name: 'build_blueprint', arguments: { name: 'v2-bad', system_setup_commands: ['exit 4'] } });
  assert.equal(bad.msg.result.resultType, 'task', bad.body);
  const failed = await settled2026(bad.msg.result.taskId);
  assert.equal(failed.status, 'failed', JSON.stringify(failed));
  assert.equal(failed.error.code, -32603);
  assert.match(failed.error.message, /\(v2-bad\) failed to build.*exit 4/);
  assert.equal(failed.result, undefined);
});
