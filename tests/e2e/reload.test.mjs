// reload.test.mjs - live reload (SIGHUP) of the deployment file, with the
// official MCP SDK client against runloop-mcp over stdio and over
// Streamable HTTP (the session's GET stream), both on a real devboxd:
// tools added, removed and aliased and a limit changed, with
// notifications/tools/list_changed on both transports; an unchanged plugin
// keeps its instance (its call counter goes on); a changed plugin is
// initialised anew while a long call started before the reload finishes on
// the old instance; a broken file (YAML, schema, a plugin that cannot load)
// keeps the running tools and names file:line:col; SIGHUPs in a row while
// calls run lose or misroute none of them; a task whose tool a reload
// removed is refused with an error that says so, and resolves once the
// tool is back.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema, ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  checkStdioHostExit, closeStdioHost, connectStdioHost, hostBin, hostEnv, pluginDir,
  startHttpHost, stopHttpHost, waitFor,
} from './lib/host.mjs';
import { devboxdBin, startEngine } from './lib/engine.mjs';

const LONG = { timeout: 300000 };
const CALL = { timeout: 240000 };

function ok(r) {
  assert.notEqual(r.isError, true, JSON.stringify(r));
  return r.structuredContent;
}

// The deployment: lifecycle, exec and testtools on the local engine, plus
// what a step changes.
function deployment(state, { exec = 120, files = false, exclude = 'big_output', tools = [], extra = [] } = {}) {
  return [
    'server:', '  name: reload-test', '  transport: stdio',
    'host:', '  log_level: info',
    'runloop:', '  backend: local', `  state_dir: ${JSON.stringify(state)}`,
    'plugins:',
    '  - name: lifecycle', '    config: {create_wait_seconds: 120}',
    ...(exec ? ['  - name: exec', `    config: {default_timeout_seconds: ${exec}, create_wait_seconds: 120}`] : []),
    '  - name: testtools', '    config: {echo_prefix: "> "}',
    ...(files ? ['  - name: files'] : []),
    ...extra,
    'tools:', `  exclude: [${exclude}]`, ...tools, '',
  ].join('\n');
}

describe('live reload on SIGHUP', () => {
  let tmp;
  let conf;
  let state;
  let engine;
  let stdio;        // { client, err, ... } of connectStdioHost
  let http;         // the HTTP server child
  let httpClient;
  let getOpen = false;
  let box;
  const servers = [];
  const changed = { stdio: 0, http: 0 };

  // The two hosts as one list: name, client, SIGHUP, stderr so far.
  const hosts = () => [
    { name: 'stdio', client: stdio.client, hup: () => process.kill(stdio.pid, 'SIGHUP'), log: () => stdio.err },
    { name: 'http', client: httpClient, hup: () => http.child.kill('SIGHUP'), log: () => http.log },
  ];
  const count = (text, re) => (text.match(re) ?? []).length;
  const RELOADED = /reload: .*: \d+ tools from \d+ plugins/g;

  // Replace the file at once: a reload never reads half of it.
  function put(text) {
    writeFileSync(`${conf}.new`, text);
    renameSync(`${conf}.new`, conf);
  }

  async function names(client) {
    const { tools } = await client.listTools();
    return tools.map((t) => t.name).sort();
  }

  // Rewrite the file, SIGHUP both hosts, wait until each has reloaded and
  // its client heard tools/list_changed.
  async function reload(text) {
    put(text);
    const before = hosts().map((h) => ({ h, n: count(h.log(), RELOADED), c: changed[h.name] }));
    for (const { h } of before) h.hup();
    for (const { h, n, c } of before) {
      await waitFor(() => count(h.log(), RELOADED) > n, 120000, `${h.name} to reload:\n${h.log().slice(-2000)}`);
      await waitFor(() => changed[h.name] > c, 30000, `tools/list_changed on ${h.name}`);
    }
  }

  before(async () => {
    for (const f of [hostBin, devboxdBin, path.join(pluginDir, 'rlmcp_testtools.so'),
      path.join(pluginDir, 'rlmcp_files.so')]) {
      if (!existsSync(f)) throw new Error(`${f} is missing: build the project first`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-reload-'));
    state = path.join(tmp, 'state');
    conf = path.join(tmp, 'deploy.yaml');
    engine = await startEngine(state);
    writeFileSync(conf, deployment(state));
    const env = hostEnv();
    delete env.RUNLOOP_API_KEY;
    stdio = await connectStdioHost({
      name: 'reload-stdio', args: ['--config', conf], env,
      setup: (c) => c.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed.stdio++; }),
    });
    stdio.pid = stdio.client.transport.pid;
    http = await startHttpHost('reload-http', ['--config', conf, '--listen', '127.0.0.1:0'], { env, list: servers });
    // The SDK opens the session's GET stream after initialize: note when
    // its response came, so no notification is sent before it is there.
    const fetchNoting = async (url, init) => {
      const r = await fetch(url, init);
      if ((init?.method ?? 'GET') === 'GET' && r.ok) getOpen = true;
      return r;
    };
    httpClient = new Client({ name: 'reload-http', version: '1' });
    httpClient.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed.http++; });
    await httpClient.connect(new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${http.port}/mcp`), { fetch: fetchNoting }));
    await waitFor(() => getOpen, 30000, 'the HTTP session\'s GET stream');
    box = ok(await stdio.client.callTool({ name: 'create_devbox', arguments: { name: 'reload' } }, undefined, CALL));
    assert.ok(box.id);
  });

  after(async () => {
    if (box?.id && stdio) {
      try {
        await stdio.client.callTool({ name: 'shutdown_devbox', arguments: { devbox_id: box.id } }, undefined, CALL);
      } catch { /* the engine stops next anyway */ }
    }
    try { await httpClient?.close(); } catch { /* gone */ }
    for (const s of servers) await stopHttpHost(s);
    await closeStdioHost(stdio);
    await checkStdioHostExit(stdio);
    await engine?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('advertises tools.listChanged on both transports', async () => {
    for (const h of hosts()) assert.equal(h.client.getServerCapabilities().tools.listChanged, true, h.name);
  });

  it('adds, removes and renames tools and changes a limit; an unchanged plugin keeps its state; '
    + 'a long call on a changed plugin finishes on its old instance', LONG, async () => {
    for (const h of hosts()) {
      const before = await names(h.client);
      assert.ok(before.includes('echo') && before.includes('fail') && !before.includes('read_file'), before.join());
      // testtools counts its calls in its instance's state.
      for (let i = 1; i <= 2; i++) {
        assert.equal(ok(await h.client.callTool({ name: 'serial_counter', arguments: {} })).calls, i);
      }
    }
    // Started before the reload, on exec, whose config the reload changes.
    const long = hosts().map((h) => h.client.callTool({
      name: 'execute_command', arguments: { devbox_id: box.id, command: `sleep 4; echo long-done-${h.name}` },
    }, undefined, CALL));
    // Both calls are running in the devbox before the file changes.
    const running = 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done | grep -c "^sleep 4 $" || true';
    await waitFor(async () => {
      const r = ok(await stdio.client.callTool({ name: 'execute_command',
        arguments: { devbox_id: box.id, command: running } }, undefined, CALL));
      return Number(r.stdout.trim()) >= 2;
    }, 120000, 'the long commands to start', 200);
    await reload(deployment(state, {
      exec: 110, files: true, exclude: 'big_output, fail',
      tools: ['  aliases: {echo: say}', '  timeout_ms: {sleep: 1500}'],
    }));
    for (const h of hosts()) {
      const after = await names(h.client);
      assert.ok(after.includes('say') && !after.includes('echo'), `alias: ${after.join()}`);
      assert.ok(!after.includes('fail'), `removed: ${after.join()}`);
      assert.ok(after.includes('read_file') && after.includes('write_file'), `added: ${after.join()}`);
      assert.equal(ok(await h.client.callTool({ name: 'say', arguments: { text: 'hi' } })).text, '> hi');
      const gone = await h.client.callTool({ name: 'echo', arguments: { text: 'hi' } }).catch((e) => e);
      assert.match(String(gone.message ?? JSON.stringify(gone)), /unknown tool 'echo'/);
      // Same instance: the counter goes on (a new init would restart at 1).
      assert.equal(ok(await h.client.callTool({ name: 'serial_counter', arguments: {} })).calls, 3, h.name);
      assert.match(h.log(), /testtools: path and config unchanged: kept as loaded/);
      // The new limit: sleep may run 1.5 s.
      const slow = await h.client.callTool({ name: 'sleep', arguments: { seconds: 30 } }, undefined, CALL);
      assert.equal(slow.isError, true, JSON.stringify(slow));
      assert.match(JSON.stringify(slow.content), /time limit of 1500 ms/);
    }
    const done = await Promise.all(long);
    for (const [i, h] of hosts().entries()) {
      assert.equal(ok(done[i]).stdout.trim(), `long-done-${h.name}`);
      assert.equal(ok(done[i]).exit_code, 0);
      // The replaced deployment (and the old exec) went with its last call.
      await waitFor(() => /a replaced deployment's last call ended; released/.test(h.log()), 60000,
        `${h.name} to release the old deployment`);
    }
  });

  it('a broken file keeps the running tools and names file:line:col', LONG, async () => {
    const good = deployment(state, {
      exec: 110, files: true, exclude: 'big_output, fail',
      tools: ['  aliases: {echo: say}', '  timeout_ms: {sleep: 1500}'],
    });
    const expected = await Promise.all(hosts().map((h) => names(h.client)));
    const cases = [
      { text: `${good}  bad: [\n`, re: /reload: [^\n]*deploy\.yaml:\d+:\d+: YAML syntax error[^\n]*still serving the previous deployment/ },
      { text: good.replace('  log_level: info', '  log_levl: info'),
        re: /reload: [^\n]*deploy\.yaml:\d+:\d+: [^\n]*log_levl[^\n]*still serving the previous deployment/ },
      { text: good.replace('tools:', '  - name: nosuchplugin\ntools:'),
        re: /plugin 'nosuchplugin' failed to load[\s\S]*a plugin failed to load \(see above\); still serving/ },
      { text: good.replace('  aliases: {echo: say}', '  aliases: {echo_nope: say}'),
        re: /reload: [^\n]*deploy\.yaml:\d+:\d+: alias for unknown tool 'echo_nope'[^\n]*still serving/ },
    ];
    for (const c of cases) {
      put(c.text);
      const seen = hosts().map((h) => ({ h, n: count(h.log(), /still serving the previous deployment/g), ch: changed[h.name] }));
      for (const { h } of seen) h.hup();
      for (const [i, { h, n, ch }] of seen.entries()) {
        await waitFor(() => count(h.log(), /still serving the previous deployment/g) > n, 120000,
          `${h.name} to refuse the file:\n${h.log().slice(-2000)}`);
        assert.match(h.log(), c.re);
        assert.deepEqual(await names(h.client), expected[i]);
        assert.equal(changed[h.name], ch, 'no tools/list_changed for a refused file');
        assert.equal(ok(await h.client.callTool({ name: 'say', arguments: { text: 'still' } })).text, '> still');
      }
    }
    put(good);
  });

  it('SIGHUPs in a row while calls run: every call answered once, by the right tool', LONG, async () => {
    const a = deployment(state, { exec: 110, files: true, tools: ['  aliases: {echo: say}'] });
    const b = deployment(state, { exec: 100, files: false, tools: ['  aliases: {echo: say}', '  timeout_ms: {sleep: 60000}'] });
    for (const h of hosts()) {
      const start = ok(await h.client.callTool({ name: 'serial_counter', arguments: {} })).calls;
      const calls = [];
      for (let i = 0; i < 24; i++) {
        if (i % 3 === 0) calls.push(h.client.callTool({ name: 'serial_counter', arguments: {} }, undefined, CALL));
        else if (i % 3 === 1) calls.push(h.client.callTool({ name: 'say', arguments: { text: `n${i}` } }, undefined, CALL));
        else calls.push(h.client.callTool({ name: 'sleep', arguments: { seconds: 0.2 } }, undefined, CALL));
      }
      const reloads = count(h.log(), RELOADED);
      for (let i = 0; i < 8; i++) {
        put(i % 2 ? b : a);
        h.hup();
        await new Promise((r) => setImmediate(r));
      }
      const res = await Promise.all(calls);
      const counters = [];
      for (const [i, r] of res.entries()) {
        const v = ok(r);
        if (i % 3 === 0) counters.push(v.calls);
        else if (i % 3 === 1) assert.equal(v.text, `> n${i}`);
        else assert.match(r.content[0].text, /^slept 0\.200 s$/);
      }
      // Each counter call ran once on the one kept instance.
      counters.sort((x, y) => x - y);
      assert.deepEqual(counters, Array.from({ length: 8 }, (_, k) => start + 1 + k));
      // The signals were coalesced into at least one reload; a file put
      // before the next SIGHUP is the one served in the end.
      await waitFor(() => count(h.log(), RELOADED) > reloads, 120000, `${h.name} to reload`);
      put(b);
      h.hup();
      await waitFor(async () => !(await names(h.client)).includes('read_file'), 120000,
        `${h.name} to serve the last file`, 100);
      assert.ok((await names(h.client)).includes('say'));
      assert.equal(ok(await h.client.callTool({ name: 'serial_counter', arguments: {} })).calls, start + 9);
    }
  });

  it('a task whose tool a reload removed fails with a clear error, and resolves once it is back', LONG, async () => {
    const withExec = deployment(state, { exec: 100, tools: ['  aliases: {echo: say}'] });
    await reload(withExec);
    const c = stdio.client;
    const created = await c.request({ method: 'tools/call', params: { name: 'execute_command',
      arguments: { devbox_id: box.id, command: 'sleep 1; echo task-done' }, task: { ttl: 600000 } } },
    CreateTaskResultSchema, CALL);
    const id = created.task.taskId;
    await reload(deployment(state, { exec: null, tools: ['  aliases: {echo: say}'] }));
    assert.ok(!(await names(c)).includes('execute_command'));
    const e = await c.request({ method: 'tasks/get', params: { taskId: id } }, GetTaskResultSchema).catch((x) => x);
    assert.equal(e.code, -32602, String(e));
    assert.match(e.message, /belongs to tool 'execute_command', which this deployment no longer offers/);
    await reload(withExec);
    const r = await c.experimental.tasks.getTaskResult(id, CallToolResultSchema, CALL);
    assert.equal(r.structuredContent.stdout, 'task-done\n');
    assert.equal((await c.experimental.tasks.getTask(id)).status, 'completed');
  });
});
