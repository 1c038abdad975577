// End-to-end: answers that never mislead, through the official MCP SDK
// client against the shipped deployments (conf/full.yaml, the default
// conf/runloop-mcp.yaml, conf/testing.yaml) and a real devboxd:
// - every tool declares an outputSchema, and the client (which validates
//   structured content also on error results) accepts every answer;
// - no text an agent reads (instructions, descriptions, schemas, error
//   messages and remedies) names a REST route it cannot call;
// - every error carries structuredContent {error:{code,message,remedy}}
//   equal to its text, and a timed-out command's output as "result";
// - a duplicate name is answered at once with a remedy that fits;
// - a not_found remedy names the kind and the tool listing it, as the
//   deployment names that tool.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildDir, hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';

const devboxdBin = path.join(buildDir, 'bin', 'devboxd');
const LONG = { timeout: 300000 };
// A REST route or an HTTP request line: nothing an agent can call.
const ROUTE = /\/v1\/|\b(GET|POST|PUT|DELETE) \//;

let tmp;
let engine;
let state;
const hosts = [];

async function connect(conf, env = {}) {
  const transport = new StdioClientTransport({
    command: hostBin,
    args: ['--config', path.join(sourceDir, 'conf', conf)],
    // backend auto, no key: the local engine on RLMCP_STATE_DIR.
    env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_STATE_DIR: state, ...env },
    stderr: 'ignore',
  });
  const client = new Client({ name: `answers-${conf}`, version: '1' });
  await client.connect(transport);
  hosts.push(client);
  return client;
}

// Every error: isError, the text's error object is the structured content.
const seenErrors = [];
function errorOf(r, code) {
  assert.equal(r.isError, true, `expected a tool error, got ${JSON.stringify(r)}`);
  const e = JSON.parse(r.content[0].text).error;
  assert.ok(r.structuredContent, `no structuredContent: ${JSON.stringify(r)}`);
  assert.deepEqual(r.structuredContent.error, e);
  if (code) assert.equal(e.code, code, JSON.stringify(e));
  assert.ok(e.remedy, 'a remedy');
  seenErrors.push(e);
  return e;
}

function ok(r) {
  assert.notEqual(r.isError, true, `tool error: ${JSON.stringify(r.content)}`);
  assert.ok(r.structuredContent, 'structuredContent');
  return r.structuredContent;
}

before(async () => {
  for (const f of [hostBin, devboxdBin]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
  }
  tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-answers-'));
  state = path.join(tmp, 'state');
  engine = spawn(devboxdBin, ['--state-dir', state], { stdio: ['ignore', 'ignore', 'inherit'] });
  await waitFor(() => existsSync(path.join(state, 'devboxd.sock')), 30000, 'devboxd socket');
});

after(async () => {
  for (const c of hosts) {
    try { await c.close(); } catch { /* gone */ }
  }
  if (engine && engine.exitCode === null) {
    const gone = new Promise((r) => engine.once('exit', r));
    engine.kill('SIGTERM');
    const t = setTimeout(() => engine.kill('SIGKILL'), 30000);
    await gone;
    clearTimeout(t);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('tool lists of the shipped deployments', () => {
  for (const conf of ['full.yaml', 'runloop-mcp.yaml', 'testing.yaml']) {
    it(`${conf}: every tool has an outputSchema; no route in what the agent reads`, async () => {
      const client = await connect(conf);
      const { tools } = await client.listTools();
      assert.ok(tools.length >= 10, `${tools.length} tools`);
      const missing = tools.filter((t) => t.outputSchema?.type !== 'object').map((t) => t.name);
      assert.deepEqual(missing, [], `tools without an outputSchema in ${conf}`);
      for (const t of tools) {
        const text = JSON.stringify(t);
        assert.doesNotMatch(text, ROUTE, `${t.name} in ${conf}: ${text.match(ROUTE)?.[0]}`);
      }
      assert.doesNotMatch(client.getInstructions() ?? '', ROUTE);
      const caps = client.getServerCapabilities();
      const more = [];
      if (caps.resources) {
        more.push(...(await client.listResources()).resources);
        more.push(...(await client.listResourceTemplates()).resourceTemplates);
      }
      if (caps.prompts) more.push(...(await client.listPrompts()).prompts);
      if (conf === 'full.yaml') assert.ok(more.length > 0, 'resources or prompts listed');
      for (const x of more) assert.doesNotMatch(JSON.stringify(x), ROUTE, `${x.name} in ${conf}`);
    });
  }
});

describe('errors through conf/full.yaml', () => {
  let client;
  const call = (name, args, ms = 280000) => client.callTool({ name, arguments: args }, undefined, { timeout: ms });

  before(async () => { client = await connect('full.yaml'); });

  it('a duplicate name is a conflict answered at once, with a remedy that fits', async () => {
    ok(await call('create_secret', { name: 'DUP_SECRET', value: 'x' }));
    let t0 = Date.now();
    let e = errorOf(await call('create_secret', { name: 'DUP_SECRET', value: 'y' }), 'conflict');
    // Retried 409s took 25-28 s before.
    assert.ok(Date.now() - t0 < 8000, `answered after ${Date.now() - t0} ms`);
    assert.match(e.message, /already exists/);
    assert.match(e.remedy, /another name/);
    assert.match(e.remedy, /update_secret/);
    assert.doesNotMatch(e.remedy, /force|busy|devbox/);

    const cfg = { name: 'dup-cfg', endpoint: 'https://mcp.example.com/mcp', allowed_tools: ['*'] };
    ok(await call('create_mcp_config', cfg));
    t0 = Date.now();
    e = errorOf(await call('create_mcp_config', cfg), 'conflict');
    assert.ok(Date.now() - t0 < 8000, `answered after ${Date.now() - t0} ms`);
    assert.match(e.remedy, /another name/);
    assert.match(e.remedy, /update_mcp_config/);
    assert.doesNotMatch(e.remedy, /force|busy|devbox/);
  });

  it('not_found names the kind and the tool that lists it', LONG, async () => {
    const cases = [
      ['get_snapshot_status', { snapshot_id: 'snp_nope' }, /list_snapshots/],
      ['delete_secret', { name: 'NOPE' }, /list_secrets/],
      ['update_mcp_config', { mcp_config_id: 'mcp_nope', description: 'x' }, /list_mcp_configs/],
      ['get_devbox', { devbox_id: 'dbx_nope' }, /list_devboxes/],
    ];
    for (const [tool, args, re] of cases) {
      const e = errorOf(await call(tool, args), 'not_found');
      assert.match(e.remedy, re, `${tool}: ${e.remedy}`);
      if (tool !== 'get_devbox') assert.doesNotMatch(e.remedy, /devbox/, `${tool}: ${e.remedy}`);
    }
    const box = ok(await call('create_devbox', {}));
    try {
      const e = errorOf(await call('get_execution', { devbox_id: box.id, execution_id: 'exe_nope' }), 'not_found');
      assert.match(e.remedy, /list_executions/);
    } finally {
      await call('shutdown_devbox', { devbox_id: box.id });
    }
  });

  it("a command's timeout carries its output so far as structured content; kill_execution's result passes its schema", LONG, async () => {
    const box = ok(await call('create_devbox', {}));
    try {
      const r = await call('execute_command', { devbox_id: box.id, command: 'echo so-far; sleep 60', timeout_seconds: 8 }, 90000);
      const e = errorOf(r, 'timeout');
      assert.match(e.message, /execution \S+ on devbox/);
      const partial = r.structuredContent.result;
      assert.ok(partial, JSON.stringify(r.structuredContent));
      assert.equal(partial.ended_by, 'timeout');
      assert.equal(partial.stdout, 'so-far\n');
      // The text blocks say the same for clients that read only content.
      assert.deepEqual(JSON.parse(r.content[1].text).result, partial);

      const a = ok(await call('execute_command_async', { devbox_id: box.id, command: 'sleep 60' }));
      const k = ok(await call('kill_execution', { devbox_id: box.id, execution_id: a.execution_id }));
      assert.equal(k.execution_id, a.execution_id);
      assert.equal(typeof k.status, 'string');
    } finally {
      await call('shutdown_devbox', { devbox_id: box.id });
    }
  });

  it('input errors are structured too; no error names a route', async () => {
    errorOf(await call('get_devbox', { devbox_id: 5 }), 'invalid_argument');
    errorOf(await call('create_secret', { name: '9LIVES', value: 'x' }), 'invalid_argument');
    assert.ok(seenErrors.length >= 8, `${seenErrors.length} errors seen`);
    for (const e of seenErrors) {
      assert.doesNotMatch(e.message, ROUTE, e.message);
      assert.doesNotMatch(e.remedy, ROUTE, e.remedy);
    }
  });
});

describe('errors through conf/testing.yaml (renamed tools)', () => {
  it('a not_found remedy uses the name this deployment gives the listing tool', async () => {
    const client = await connect('testing.yaml');
    const r = await client.callTool({ name: 'get_sandbox', arguments: { sandbox_id: 'dbx_nope' } });
    const e = errorOf(r, 'not_found');
    assert.match(e.remedy, /list_sandbox\b/);
    assert.doesNotMatch(e.remedy, /list_devboxes/);
    assert.doesNotMatch(e.message, ROUTE, e.message);
  });
});

describe('an unreachable backend', () => {
  it('is unavailable, saying why without the URL or route', LONG, async () => {
    const port = await new Promise((resolve, reject) => {
      const srv = net.createServer();
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => { const p = srv.address().port; srv.close(() => resolve(p)); });
    });
    const client = await connect('runloop-mcp.yaml', {
      RUNLOOP_BASE_URL: `http://127.0.0.1:${port}`, RUNLOOP_API_KEY: 'ak_answers_test',
    });
    const r = await client.callTool({ name: 'get_devbox', arguments: { devbox_id: 'dbx_1' } }, undefined,
      { timeout: 170000 });
    const e = errorOf(r, 'unavailable');
    assert.match(e.message, /could not be reached/);
    assert.doesNotMatch(e.message, ROUTE, e.message);
    assert.doesNotMatch(e.message, new RegExp(`127\\.0\\.0\\.1:${port}`), e.message);
  });
});
