// End-to-end: the admin plugin's secret tools (list_secrets, create_secret,
// update_secret, delete_secret), its MCP config tools (list/create/update/
// delete_mcp_config) and create_devbox's `secrets` and `mcp` through the
// built host, driven by the official MCP SDK client over stdio, against a
// real devboxd. A secret value reaches the devbox's environment and no tool
// result, error or log line; a devbox created with `mcp` reaches the
// reference MCP server through $RL_MCP_URL with only the allowed tools.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sourceDir, waitFor } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';
import { startEverything } from './lib/everything.mjs';

const LONG = { timeout: 300000 };
const VALUE = 'e2e-secret-value-4711';

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, 'structuredContent is set');
  return result.structuredContent;
}

function errorOf(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  return JSON.parse(result.content.find((c) => c.type === 'text').text).error;
}

describe('admin tools end to end (local engine)', () => {
  let stack;
  let engine;
  let client;
  let host;
  const seen = [];

  const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 280000 });
    seen.push(JSON.stringify(r));
    return r;
  };

  before(async () => {
    stack = await startEngineAndHost({ name: 'admin', plugins: ['admin', 'lifecycle', 'exec'], conf: writeConf });
    ({ engine, host, client } = stack);
  });

  after(() => stack?.stop());

  /** The deployment on the engine's state dir. */
  function writeConf({ tmp, state }) {
    const conf = path.join(tmp, 'admin.yaml');
    writeFileSync(conf, [
      'server:', '  name: runloop-mcp-admin-test', '  transport: stdio',
      'host:', '  log_level: debug',
      'runloop:', '  backend: local', `  state_dir: ${state}`,
      'plugins:',
      '  - name: admin',
      '  - name: lifecycle', '    config:', '      create_wait_seconds: 120',
      '  - name: exec', '    config:', '      create_wait_seconds: 120',
      '',
    ].join('\n'));
    return conf;
  }

  it('lists the secret tools with honest annotations', async () => {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const n of ['list_secrets', 'create_secret', 'update_secret', 'delete_secret'])
      assert.ok(byName[n], `${n} listed`);
    assert.equal(byName.list_secrets.annotations.readOnlyHint, true);
    assert.equal(byName.delete_secret.annotations.destructiveHint, true);
    assert.ok(byName.create_devbox.inputSchema.properties.secrets, 'create_devbox takes secrets');
  });

  it('create, list, update, delete; the value only reaches the devbox', LONG, async () => {
    const s = ok(await call('create_secret', { name: 'E2E_TOKEN', value: VALUE }));
    assert.match(s.id, /^sec_/);
    assert.equal(s.name, 'E2E_TOKEN');
    const list = ok(await call('list_secrets', {}));
    assert.deepEqual(list.secrets.map((x) => x.name), ['E2E_TOKEN']);
    assert.equal(list.has_more, false);

    const box = ok(await call('create_devbox', { name: 'with-secret', secrets: { GH_TOKEN: 'E2E_TOKEN' } }));
    assert.equal(box.status, 'running');
    const r = ok(await call('execute_command', { devbox_id: box.id, command: 'printf %s "$GH_TOKEN"' }));
    assert.equal(r.stdout, VALUE);

    const u = ok(await call('update_secret', { name: 'E2E_TOKEN', value: 'second-value' }));
    assert.equal(u.id, s.id);
    const d = ok(await call('delete_secret', { name: 'E2E_TOKEN' }));
    assert.deepEqual(d, { id: s.id, name: 'E2E_TOKEN', deleted: true });
    // The devbox keeps the value it was created with.
    const again = ok(await call('execute_command', { devbox_id: box.id, command: 'printf %s "$GH_TOKEN"' }));
    assert.equal(again.stdout, VALUE);
    ok(await call('shutdown_devbox', { devbox_id: box.id }));
  });

  it('bad input: names, a missing secret (nothing created), unknown secret', LONG, async () => {
    let e = errorOf(await call('create_secret', { name: '9LIVES', value: 'x' }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /name.*9LIVES.*pattern|not a valid secret name/);
    e = errorOf(await call('create_secret', { name: 'OK_NAME' }));
    assert.equal(e.code, 'invalid_argument');
    e = errorOf(await call('create_secret', { name: 'HUGE', value: 'x'.repeat(32 * 1024 + 1) }));
    assert.match(e.message, /at most 32768 bytes/);
    e = errorOf(await call('delete_secret', { name: 'NOT_THERE' }));
    assert.equal(e.code, 'not_found');

    const before = ok(await call('list_devboxes', {}));
    e = errorOf(await call('create_devbox', { name: 'no-secret', secrets: { X: 'NOT_THERE' } }));
    assert.match(e.message, /secret NOT_THERE, which does not exist/);
    const after = ok(await call('list_devboxes', {}));
    assert.equal(after.devboxes.length, before.devboxes.length, 'nothing was created');
  });

  it('MCP config tools: create, list, update, delete; bad input', async () => {
    const c = ok(await call('create_mcp_config', { name: 'e2e-docs', endpoint: 'https://mcp.example.com/mcp',
      allowed_tools: ['search_*'], custom_headers: [{ name: 'X-Team', value: 'qa' }] }));
    assert.match(c.id, /^mcp_/);
    assert.deepEqual(c.auth_mechanism, { type: 'bearer' });
    const list = ok(await call('list_mcp_configs', { name: 'e2e-' }));
    assert.deepEqual(list.mcp_configs.map((x) => x.id), [c.id]);
    const u = ok(await call('update_mcp_config', { mcp_config_id: c.id, allowed_tools: ['*'], description: 'all' }));
    assert.deepEqual(u.allowed_tools, ['*']);
    assert.equal(u.description, 'all');
    assert.equal(u.custom_headers.length, 1);
    assert.deepEqual(ok(await call('delete_mcp_config', { mcp_config_id: c.id })), { mcp_config_id: c.id, deleted: true });
    assert.equal(ok(await call('list_mcp_configs', {})).mcp_configs.length, 0);

    let e = errorOf(await call('create_mcp_config', { name: 'x', endpoint: 'ftp://h/mcp', allowed_tools: ['*'] }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /http:\/\/ or https:\/\//);
    e = errorOf(await call('create_mcp_config', { name: 'x', endpoint: 'https://h/mcp', allowed_tools: ['*'],
      custom_headers: [{ name: 'Authorization', value: 'v' }] }));
    assert.match(e.message, /reserved/);
    e = errorOf(await call('update_mcp_config', { mcp_config_id: 'mcp_missing', description: 'x' }));
    assert.equal(e.code, 'not_found');
    e = errorOf(await call('delete_mcp_config', { mcp_config_id: 'mcp_missing' }));
    assert.equal(e.code, 'not_found');
  });

  it('create_devbox mcp: only the allowed tools through $RL_MCP_URL', LONG, async () => {
    const upstream = await startEverything();
    try {
      ok(await call('create_secret', { name: 'EVERY_TOKEN', value: VALUE }));
      const cfg = ok(await call('create_mcp_config', { name: 'everything', endpoint: upstream.url,
        allowed_tools: ['echo', 'get-sum'] }));
      let e = errorOf(await call('create_devbox', { mcp: { EVERY_MCP: { mcp_config: cfg.id, secret: 'NOPE' } } }));
      assert.match(e.message, /not an account secret/);
      e = errorOf(await call('create_devbox', { mcp: { EVERY_MCP: { mcp_config: cfg.id } } }));
      assert.equal(e.code, 'invalid_argument');
      const box = ok(await call('create_devbox', { name: 'hub',
        mcp: { EVERY_MCP: { mcp_config: 'everything', secret: 'EVERY_TOKEN' } },
        files: { '/home/user/hub_client.py': readFileSync(path.join(sourceDir, 'tests', 'fixtures', 'mcp_hub_client.py'), 'utf8') } }));
      const r = ok(await call('execute_command', { devbox_id: box.id, command: 'python3 /home/user/hub_client.py' }));
      const out = JSON.parse(r.stdout);
      assert.equal(out.init.status, 200, r.stdout);
      const names = out.list.msgs.find((m) => m.id === 2).result.tools.map((t) => t.name).sort();
      assert.deepEqual(names, ['echo', 'get-sum']);
      assert.match(JSON.stringify(out.echo.msgs), /hi hub/);
      assert.match(out.denied.msgs[0].error.message, /not allowed/);
      assert.ok(upstream.seen.every((x) => x.headers.authorization === `Bearer ${VALUE}`));
      ok(await call('shutdown_devbox', { devbox_id: box.id }));
      ok(await call('delete_mcp_config', { mcp_config_id: cfg.id }));
      ok(await call('delete_secret', { name: 'EVERY_TOKEN' }));
    } finally {
      await upstream.stop();
    }
  });

  it('never shows the value in results, errors or logs', () => {
    for (const text of seen) {
      if (text.includes('"stdout"') || text.includes('hub_client')) continue; // the devbox's own output
      assert.doesNotMatch(text, new RegExp(VALUE));
    }
    assert.doesNotMatch(host.err, new RegExp(`${VALUE}|second-value`));
    assert.doesNotMatch(engine.stderr(), new RegExp(`${VALUE}|second-value`));
  });
});
