// End-to-end: code contexts (run_python / run_code with `context`, and
// create/list/restart/delete_code_context) through the built host and the
// official MCP SDK client over stdio, against a real devboxd whose contexts
// devbox runs the universal image (IPython kernel, numpy, pandas,
// matplotlib from Debian). Proves that state persists between calls and
// across a host restart, that figures come back as PNG image content and
// DataFrames as text and HTML, that errors carry ename/evalue/traceback,
// that a timeout or a cancel interrupts the cell and keeps the state, that
// restart clears it and delete ends the context, and that bad ids get
// clear errors.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { sourceDir, waitFor } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'contexts-local.yaml');
const LONG = { timeout: 600000 };
const CALL = { timeout: Number(process.env.CTX_CALL_MS ?? 590000) };

// The engine's defaults: the deployment names the contexts' image.
const engineEnv = { RLMCP_DEVBOX_IMAGE: undefined, RLMCP_DEVBOX_RUNTIME: undefined };

let apiSock;
function post(p) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: apiSock, method: 'POST', path: p, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function errorOf(r) {
  assert.equal(r.isError, true, `expected an error, got ${JSON.stringify(r.content)}`);
  return JSON.parse(r.content[0].text).error;
}

describe('code contexts end to end (local engine, universal image)', () => {
  let stack;
  let client;
  let ctx; // the context most tests share
  // What the host and devboxd logged, for a failure's message.
  const logs = () => `${stack.host.err}\n${stack.engine.stderr()}`;

  async function call(name, args, opts = {}) {
    const t0 = Date.now();
    try {
      return await client.callTool({ name, arguments: args }, undefined, { ...CALL, ...opts });
    } finally {
      if (process.env.CTX_DEBUG) console.error(`${name} ${JSON.stringify(args).slice(0, 80)}: ${Date.now() - t0} ms`);
    }
  }

  async function cell(code, extra = {}, opts = {}) {
    const r = await call('run_python', { context: ctx, code, ...extra }, opts);
    assert.notEqual(r.isError, true, `run_python: ${JSON.stringify(r.content)}\n${logs()}`);
    return r;
  }

  before(async () => {
    stack = await startEngineAndHost({ name: 'contexts', conf, plugins: ['exec'], engineEnv });
    ({ client } = stack);
    apiSock = stack.engine.sock;
  });

  after(async () => {
    if (process.env.CTX_DEBUG) console.error(`host:\n${stack?.host?.err.slice(-4000)}\nengine:\n${stack?.engine?.stderr().slice(-6000)}`);
    await stack?.stop();
  });

  it('lists the context tools, and context on run_python and run_code', async () => {
    const { tools } = await client.listTools();
    const by = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const n of ['create_code_context', 'list_code_contexts', 'restart_code_context', 'delete_code_context']) {
      assert.ok(by[n], `${n} is listed`);
    }
    assert.ok(by.run_python.inputSchema.properties.context);
    assert.ok(by.run_code.inputSchema.properties.context);
    assert.ok(by.run_python.outputSchema.properties.error);
  });

  it('creates a context and keeps state between calls', LONG, async () => {
    const r = await call('create_code_context', {});
    assert.notEqual(r.isError, true, `create: ${JSON.stringify(r.content)}\n${logs()}`);
    ctx = r.structuredContent.context_id;
    assert.match(ctx, /^ctx_[0-9a-f]{8}_/);
    assert.equal(r.structuredContent.language, 'python');
    await cell('x = 41\nimport math');
    const got = await cell('x + 1');
    const sc = got.structuredContent;
    assert.equal(sc.status, 'ok');
    assert.equal(sc.context_id, ctx);
    assert.equal(sc.error, null);
    assert.equal(sc.results.length, 1);
    assert.equal(sc.results[0].kind, 'result');
    assert.equal(sc.results[0].text, '42');
    assert.equal(typeof sc.execution_count, 'number');
    // run_code with context and code runs in the same interpreter.
    const rc = await call('run_code', { context: ctx, code: 'print(x, math.sqrt(16))' });
    assert.notEqual(rc.isError, true, JSON.stringify(rc.content));
    assert.equal(rc.structuredContent.stdout, '41 4.0\n');
  });

  it('lists the context', async () => {
    const r = await call('list_code_contexts', {});
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    const ids = r.structuredContent.contexts.map((c) => c.context_id);
    assert.ok(ids.includes(ctx), `${ctx} in ${ids}`);
  });

  it('streams stdout as progress while a cell runs', LONG, async () => {
    const seen = [];
    const r = await cell('import time, sys\nfor i in range(3):\n    print("tick", i, flush=True)\n    time.sleep(0.7)\nprint("oops", file=sys.stderr)',
      {}, { onprogress: (p) => { if (p.message) seen.push(p.message); }, resetTimeoutOnProgress: true });
    assert.equal(r.structuredContent.stdout, 'tick 0\ntick 1\ntick 2\n');
    assert.equal(r.structuredContent.stderr, 'oops\n');
    const joined = seen.join('');
    assert.match(joined, /tick 0/, `progress messages: ${JSON.stringify(seen)}`);
    // Streamed while running: more than one notification for the ticks.
    assert.ok(seen.filter((m) => m.includes('tick')).length >= 2, `progress messages: ${JSON.stringify(seen)}`);
  });

  it('returns a matplotlib figure as PNG image content', LONG, async () => {
    const r = await cell('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [x, 0, x])\nplt.title("t")\nplt.show()');
    const img = r.content.find((c) => c.type === 'image');
    assert.ok(img, `no image content in ${JSON.stringify(r.content).slice(0, 500)}`);
    assert.equal(img.mimeType, 'image/png');
    const png = Buffer.from(img.data, 'base64');
    assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    assert.ok(r.structuredContent.results.some((x) => x.formats.includes('image/png')));
  });

  it('returns a DataFrame as a text table and an HTML resource', LONG, async () => {
    const r = await cell('import pandas as pd\ndf = pd.DataFrame({"a": [1, 2], "b": ["p", "q"]})\ndf');
    const res = r.structuredContent.results[0];
    assert.match(res.text, /a\s+b/);
    assert.match(res.text, /1\s+2\s+q/);
    const html = r.content.find((c) => c.type === 'resource');
    assert.ok(html, `no resource in ${JSON.stringify(r.content).slice(0, 500)}`);
    assert.equal(html.resource.mimeType, 'text/html');
    assert.match(html.resource.text, /<table/);
  });

  it('reports an exception as ename, evalue and traceback', LONG, async () => {
    const r = await cell('def f():\n    return 1 / 0\nf()');
    const sc = r.structuredContent;
    assert.equal(sc.status, 'error');
    assert.equal(sc.error.ename, 'ZeroDivisionError');
    assert.equal(sc.error.evalue, 'division by zero');
    assert.ok(sc.error.traceback.length > 0);
    // Still usable afterwards.
    assert.equal((await cell('x')).structuredContent.results[0].text, '41');
  });

  it('stops a cell at its timeout and keeps the state', LONG, async () => {
    const t0 = Date.now();
    const r = await cell('y = 7\nimport time\ntime.sleep(120)', { timeout_seconds: 3 });
    assert.ok(Date.now() - t0 < 60000, 'the timeout ended the call');
    const sc = r.structuredContent;
    assert.equal(sc.status, 'timeout');
    assert.equal(sc.error.ename, 'KeyboardInterrupt');
    assert.equal((await cell('(x, y)')).structuredContent.results[0].text, '(41, 7)');
  });

  it('a cancelled call interrupts its cell and keeps the state', LONG, async () => {
    const ac = new AbortController();
    const started = cell('z = 5\nimport time\ntime.sleep(120)\nz = 6', {}, { signal: ac.signal });
    setTimeout(() => ac.abort(), 3000);
    await assert.rejects(started);
    // The interrupt reached the kernel: the context is free again (not
    // busy) well before the 120 s sleep, and z kept its value.
    const r = await waitFor(async () => {
      const got = await call('run_python', { context: ctx, code: 'z' });
      return got.isError ? null : got;
    }, 60000, 'the cancelled cell to be interrupted', 500);
    assert.equal(r.structuredContent.results[0].text, '5');
  });

  it('the context outlives a host restart', LONG, async () => {
    client = await stack.reconnect();
    assert.equal((await cell('x')).structuredContent.results[0].text, '41');
  });

  it('restart clears the state, delete ends the context', LONG, async () => {
    // A cell that is running when the context restarts ends (the kernel
    // is replaced, not waited for).
    const running = call('run_code', { context: ctx, code: 'import time\ntime.sleep(120)' });
    await sleep(1500);
    const t0 = Date.now();
    const r = await call('restart_code_context', { context_id: ctx });
    const ended = await running;
    assert.ok(Date.now() - t0 < 60000, 'restart did not wait for the cell');
    assert.notEqual(ended.isError, true, JSON.stringify(ended.content));
    assert.equal(ended.structuredContent.status, 'died', JSON.stringify(ended.structuredContent));
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    assert.equal(r.structuredContent.context_id, ctx);
    const gone = await cell('x');
    assert.equal(gone.structuredContent.error?.ename, 'NameError', JSON.stringify(gone.structuredContent));
    const d = await call('delete_code_context', { context_id: ctx });
    assert.notEqual(d.isError, true, JSON.stringify(d.content));
    assert.equal(d.structuredContent.deleted, true);
    const e = errorOf(await call('run_python', { context: ctx, code: '1' }));
    assert.equal(e.code, 'not_found');
    assert.match(e.message, /unknown context_id/);
    assert.match(e.remedy, /create_code_context/);
    const l = await call('list_code_contexts', {});
    assert.ok(!l.structuredContent.contexts.some((c) => c.context_id === ctx));
  });

  it('deleting a context during its cell leaves the other contexts working', LONG, async () => {
    const mk = async () => {
      const r = await call('create_code_context', {});
      assert.notEqual(r.isError, true, `create: ${JSON.stringify(r.content)}\n${logs()}`);
      return r.structuredContent.context_id;
    };
    const a = await mk();
    const b = await mk();
    const set = await call('run_python', { context: b, code: 'kept = 17' });
    assert.notEqual(set.isError, true, JSON.stringify(set.content));
    // A cell printing in a loop keeps its collector reading the kernel's
    // sockets while the delete closes them.
    const running = call('run_python', { context: a, code: 'import time\nwhile True:\n    print("t", flush=True)\n    time.sleep(0.01)' });
    await sleep(2000);
    const t0 = Date.now();
    const d = await call('delete_code_context', { context_id: a });
    assert.notEqual(d.isError, true, JSON.stringify(d.content));
    const ended = await running;
    assert.ok(Date.now() - t0 < 60000, 'the delete ended the running cell');
    // Its call ends as "died" or as the context's end, whichever it saw.
    if (ended.isError) assert.equal(errorOf(ended).code, 'not_found', JSON.stringify(ended.content));
    else assert.equal(ended.structuredContent.status, 'died', JSON.stringify(ended.structuredContent));
    // The gateway lived through it: the other context kept its state.
    const r = await call('run_python', { context: b, code: 'kept + 1' });
    assert.notEqual(r.isError, true, `${JSON.stringify(r.content)}\n${stack.engine.stderr().slice(-2000)}`);
    assert.equal(r.structuredContent.results[0].text, '18');
    const l = await call('list_code_contexts', {});
    const ids = l.structuredContent.contexts.map((c) => c.context_id);
    assert.ok(!ids.includes(a) && ids.includes(b), `${a} gone, ${b} kept: ${ids}`);
    assert.notEqual((await call('delete_code_context', { context_id: b })).isError, true);
  });

  it('a context ends with its devbox', LONG, async () => {
    const c = await call('create_code_context', {});
    assert.notEqual(c.isError, true, JSON.stringify(c.content));
    const id = c.structuredContent.context_id;
    assert.equal((await call('run_python', { context: id, code: '3 * 3' })).structuredContent.results[0].text, '9');
    const devbox = c.structuredContent.devbox_id;
    const status = await post(`/v1/devboxes/${devbox}/shutdown`);
    assert.equal(status, 200);
    const e = errorOf(await call('run_python', { context: id, code: '1' }));
    assert.equal(e.code, 'not_found');
    assert.match(e.message, /has ended: its devbox .* is shutdown/);
    assert.match(e.remedy, /create_code_context/);
    const l = await call('list_code_contexts', {});
    assert.deepEqual(l.structuredContent.contexts, []);
  });

  it('bad context ids and arguments get clear errors', LONG, async () => {
    let e = errorOf(await call('run_python', { context: 'nope', code: '1' }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /not a code context id/);
    e = errorOf(await call('run_python', { context: 'ctx_0123abcd_dbx_doesnotexist', code: '1' }));
    assert.equal(e.code, 'not_found');
    assert.match(e.message, /does not exist/);
    const devbox = ctx.slice('ctx_01234567_'.length);
    e = errorOf(await call('run_python', { context: `ctx_0123abcd_${devbox}`, code: '1' }));
    assert.equal(e.code, 'not_found');
    e = errorOf(await call('run_python', { context: ctx, code: '1', file_path: '/home/user/a.py' }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /file_path/);
    e = errorOf(await call('run_code', { context: ctx, command: 'ls' }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /'command' does not go with 'context'/);
    e = errorOf(await call('restart_code_context', { context_id: 'ctx_zz' }));
    assert.equal(e.code, 'invalid_argument');
  });
});

// An image without the kernel (the starter image: python3, no ipykernel):
// the first create says what the image lacks, instead of a kernel that
// cannot start.
describe('code contexts on an image without IPython (starter)', () => {
  let stack;

  before(async () => {
    stack = await startEngineAndHost({
      name: 'contexts-starter', plugins: ['exec'], engineEnv,
      conf: path.join(sourceDir, 'tests', 'e2e', 'conf', 'contexts-starter.yaml'),
    });
  });

  after(() => stack?.stop());

  it('create_code_context names the missing modules', LONG, async () => {
    const r = await stack.client.callTool({ name: 'create_code_context', arguments: {} }, undefined, CALL);
    const e = errorOf(r);
    assert.equal(e.code, 'unavailable');
    assert.match(e.message, /no Python module ipykernel, jupyter_client/);
    assert.match(e.remedy, /blueprint/);
  });
});
