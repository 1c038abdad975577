// tasks_input.test.mjs - MCP 2025-11-25 tasks that wait for input, with the
// official MCP SDK client over stdio and over Streamable HTTP: on
// input_required the client calls tasks/result (the SDK's callToolStream
// does), the server sends the task's elicitation/create on that request's
// stream with _meta["io.modelcontextprotocol/related-task"], the answer
// goes to the task and tasks/result returns the task's result. Two
// questions at once, a declined question, and a client without the
// elicitation capability (-32602, the task unchanged).
//
// The server runs the conformance fixture tools (confirm_delete,
// multi_input) on a cloud backend nothing answers (127.0.0.1:9) with a
// placeholder key: the fixtures never call it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { hostBin, pluginDir, startHttpHost, stopHttpHost, waitFor } from './lib/host.mjs';

const RELATED = 'io.modelcontextprotocol/related-task';
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-tasks-input-'));
const servers = [];
const clients = [];
let srv;

function conf(transport) {
  const file = path.join(work, `${transport}.yaml`);
  writeFileSync(file, [
    'server:', '  name: tasks-input-test',
    ...(transport === 'http' ? ['  http:', '    listen: 127.0.0.1:0'] : ['  transport: stdio']),
    'runloop:', '  backend: cloud', '  base_url: "http://127.0.0.1:9"', '  api_key: "rl_placeholder"',
    'plugins:', '  - name: conformance', '',
  ].join('\n'));
  return file;
}

function env() {
  const e = { ...process.env, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_STATE_DIR: path.join(work, 'state') };
  delete e.RUNLOOP_API_KEY;
  return e;
}

// A client; answer(request) answers each elicitation/create (none: the
// client does not declare the capability).
async function connect(transport, answer) {
  const client = new Client({ name: 'tasks-input-test', version: '1' },
    { capabilities: answer ? { elicitation: { form: {} } } : {} });
  const asked = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return answer(req.params);
    });
  }
  const t = transport === 'http'
    ? new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${srv.port}/mcp`))
    : new StdioClientTransport({ command: hostBin, args: ['-c', conf('stdio')], env: env(), stderr: 'pipe' });
  const c = { client, asked, err: '' };
  t.stderr?.on('data', (d) => { c.err += d; });
  await client.connect(t);
  clients.push(c);
  await client.listTools(); // the SDK learns which tools take tasks
  return c;
}

async function stream(client, name, args) {
  const msgs = [];
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args },
    CallToolResultSchema, { task: { ttl: 600000 }, timeout: 120000 })) msgs.push(m);
  return msgs;
}

before(async () => {
  srv = await startHttpHost('tasks-input', ['-c', conf('http'), '--transport', 'http'], { env: env(), list: servers });
});

after(async () => {
  for (const c of clients) {
    try { await c.client.close(); } catch { /* gone */ }
    assert.doesNotMatch(c.err, /AddressSanitizer|LeakSanitizer|runtime error:/, c.err);
  }
  for (const s of servers) await stopHttpHost(s);
  rmSync(work, { recursive: true, force: true });
});

for (const transport of ['stdio', 'http']) {
  test(`${transport}: tasks/result asks the task's question and returns its result`, async () => {
    const c = await connect(transport, (p) => ({ action: 'accept', content: { confirm: true } }));
    const msgs = await stream(c.client, 'confirm_delete', { filename: 'a.txt' });
    const created = msgs.find((m) => m.type === 'taskCreated');
    assert.ok(created, JSON.stringify(msgs));
    const id = created.task.taskId;
    assert.ok(msgs.some((m) => m.type === 'taskStatus' && m.task.status === 'input_required'), JSON.stringify(msgs));
    const last = msgs.at(-1);
    assert.equal(last.type, 'result', JSON.stringify(last));
    assert.equal(last.result.content[0].text, 'Deleted a.txt');
    assert.equal(last.result._meta[RELATED].taskId, id);
    // The question came once, named the task, and carried no server key.
    assert.equal(c.asked.length, 1, JSON.stringify(c.asked));
    assert.equal(c.asked[0].message, 'Delete a.txt?');
    assert.deepEqual(c.asked[0]._meta[RELATED], { taskId: id });
    assert.equal((await c.client.experimental.tasks.getTask(id)).status, 'completed');
  });

  test(`${transport}: two questions at once, one declined`, async () => {
    const names = ['Ann', 'Bob'];
    const c = await connect(transport, (p) => ({ action: 'accept', content: { name: names.shift() } }));
    const msgs = await stream(c.client, 'multi_input', {});
    assert.equal(msgs.at(-1).type, 'result', JSON.stringify(msgs));
    assert.equal(msgs.at(-1).result.content[0].text, 'Got Ann and Bob');
    assert.deepEqual(c.asked.map((p) => p.message), ['Input 1 of 2: what is your name?', 'Input 2 of 2: what is your name?']);
    const d = await connect(transport, () => ({ action: 'decline' }));
    const kept = await stream(d.client, 'confirm_delete', { filename: 'b.txt' });
    assert.equal(kept.at(-1).result.content[0].text, 'Kept b.txt', JSON.stringify(kept));
  });
}

test('a client without the elicitation capability: tasks/result is -32602 and the task still waits', async () => {
  const c = await connect('http', null);
  const made = await c.client.request({ method: 'tools/call',
    params: { name: 'confirm_delete', arguments: { filename: 'c.txt' }, task: {} } }, CreateTaskResultSchema);
  const id = made.task.taskId;
  await waitFor(async () => (await c.client.experimental.tasks.getTask(id)).status === 'input_required',
    60000, 'the task to ask', 100);
  let err;
  try {
    await c.client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
  } catch (e) {
    err = e;
  }
  assert.equal(err?.code, -32602, String(err));
  assert.match(err.message, /did not declare the capability/);
  assert.equal((await c.client.experimental.tasks.getTask(id)).status, 'input_required');
  // Another client that can answer finishes it.
  const d = await connect('http', () => ({ action: 'accept', content: { confirm: false } }));
  const r = await d.client.experimental.tasks.getTaskResult(id, CallToolResultSchema, { timeout: 120000 });
  assert.equal(r.content[0].text, 'Kept c.txt');
  assert.equal(d.asked[0]._meta[RELATED].taskId, id);
});
