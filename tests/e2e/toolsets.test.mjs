// toolsets.test.mjs - dynamic toolset discovery (docs/deployments.md
// "Toolsets") through the official MCP TypeScript client:
//  - over stdio: the first tools/list is the core (tools of no toolset) and
//    the meta tools; enable_toolset sends notifications/tools/list_changed
//    and the next list has the toolset's tools; a tool of the toolset can be
//    called (also before its toolset is enabled); a bad toolset name is a
//    tool error naming the toolsets; a reload (SIGHUP) keeps the session's
//    enabled toolsets by name;
//  - over Streamable HTTP: enabling a toolset in one session changes that
//    session's list only, and only it is notified;
//  - a client named in tools.full_list_clients, and a 2026-07-28 stateless
//    request, get every tool and no meta tools;
//  - the shipped default deployment starts with its core set;
//  - bad toolsets sections are refused at start with the place and the fix.
// The deployments use the test plugins on a cloud backend nothing answers
// (127.0.0.1:9): no tool here calls Runloop.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  hostBin, hostEnv, pluginDir, sourceDir, requireBuilt, waitFor,
  connectStdioHost, closeStdioHost, checkStdioHostExit, startHttpHost, stopHttpHost,
} from './lib/host.mjs';

requireBuilt();
const work = mkdtempSync(path.join(tmpdir(), 'rlmcp-toolsets-'));
const servers = [];
after(async () => {
  for (const s of servers) await stopHttpHost(s);
  rmSync(work, { recursive: true, force: true });
});

const TOOLSETS = `tools:
  toolsets:
    testing:
      description: The test plugin's tools.
      tools: [plugin:testtools]
  full_list_clients: [legacy-*]
`;

function writeConf(name, body) {
  const file = path.join(work, `${name}.yaml`);
  writeFileSync(file, body);
  return file;
}

function conf(name, { transport = 'stdio', tools = TOOLSETS } = {}) {
  return writeConf(name, `server:
  name: toolsets-test
  transport: ${transport}
  http: {listen: 127.0.0.1:0}
runloop:
  backend: cloud
  base_url: http://127.0.0.1:9
  api_key: e2e-unused-key
plugins:
  - name: hello
  - name: testtools
${tools}`);
}

const names = (r) => r.tools.map((t) => t.name);
const TESTTOOLS = ['ask_client', 'big_output', 'crash_free_internal', 'echo', 'fail', 'serial_counter',
  'sleep', 'slow_progress', 'ws_exchange'];
const CORE = ['enable_toolset', 'hello', 'list_toolsets'];
const ALL = [...CORE, ...TESTTOOLS].sort();
const ALL_NO_META = ['hello', ...TESTTOOLS].sort();

function counter(client) {
  const seen = { n: 0 };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { seen.n++; });
  return seen;
}

test('stdio: core first, enable_toolset notifies and lists the toolset, calls work', async () => {
  let seen = null;
  const host = await connectStdioHost({
    name: 'toolsets-stdio', args: ['--config', conf('stdio')], env: hostEnv(),
    setup: (c) => { seen = counter(c); },
  });
  try {
    const c = host.client;
    assert.deepEqual(names(await c.listTools()), CORE);
    const meta = (await c.listTools()).tools.find((t) => t.name === 'enable_toolset');
    assert.match(meta.description, /Toolsets: testing \([a-z_, ]*\bws_exchange\b[a-z_, ]*\): The test plugin's tools\./);
    assert.deepEqual(meta.inputSchema.properties.toolset.enum, ['testing']);
    // Like every tool of the shipped deployments, the meta tools declare an
    // outputSchema (the client checks structuredContent against it).
    for (const t of (await c.listTools()).tools.filter((x) => x.name.endsWith('_toolset') || x.name === 'list_toolsets')) {
      assert.equal(t.outputSchema?.type, 'object', t.name);
    }

    // A tool of a toolset not yet enabled can still be called.
    const early = await c.callTool({ name: 'echo', arguments: { text: 'early' } });
    assert.notEqual(early.isError, true, JSON.stringify(early));

    const bad = await c.callTool({ name: 'enable_toolset', arguments: { toolset: 'testin' } });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.error.code, 'invalid_argument');
    assert.match(bad.structuredContent.error.message, /unknown toolset 'testin' \(did you mean 'testing'\?\); the toolsets are: testing/);
    const missing = await c.callTool({ name: 'enable_toolset', arguments: {} });
    assert.equal(missing.isError, true);
    assert.match(missing.structuredContent.error.message, /pass \{"toolset": NAME\}, one of testing/);
    const wrongType = await c.callTool({ name: 'enable_toolset', arguments: { toolset: 5 } });
    assert.equal(wrongType.isError, true);
    assert.equal(wrongType.structuredContent.error.code, 'invalid_argument');
    assert.match(wrongType.structuredContent.error.message, /toolset must be a string \(a toolset name\)/);
    assert.doesNotMatch(wrongType.structuredContent.error.message, /missing/);
    assert.equal(seen.n, 0, 'no list change yet');

    const listed = await c.callTool({ name: 'list_toolsets', arguments: {} });
    assert.deepEqual(listed.structuredContent.toolsets.map((t) => [t.name, t.enabled]), [['testing', false]]);

    const on = await c.callTool({ name: 'enable_toolset', arguments: { toolset: 'testing' } });
    assert.notEqual(on.isError, true, JSON.stringify(on));
    assert.equal(on.structuredContent.list_changed, true);
    assert.deepEqual([...on.structuredContent.tools].sort(), TESTTOOLS);
    await waitFor(() => seen.n === 1, 10000, 'notifications/tools/list_changed');
    assert.deepEqual(names(await c.listTools()), ALL);

    const r = await c.callTool({ name: 'echo', arguments: { text: 'hi' } });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.match(JSON.stringify(r.content), /hi/);

    // Enabling it again changes nothing and sends nothing.
    const again = await c.callTool({ name: 'enable_toolset', arguments: { toolset: 'testing' } });
    assert.equal(again.structuredContent.list_changed, false);
    const after2 = await c.callTool({ name: 'list_toolsets', arguments: {} });
    assert.equal(after2.structuredContent.toolsets[0].enabled, true);
    assert.equal(seen.n, 1);
  } finally {
    await closeStdioHost(host);
  }
  await checkStdioHostExit(host);
});

test('stdio: a reload keeps the session\'s enabled toolsets by name', async () => {
  let seen = null;
  const file = conf('reload');
  const host = await connectStdioHost({
    name: 'toolsets-reload', args: ['--config', file], env: hostEnv(),
    setup: (c) => { seen = counter(c); },
  });
  try {
    const c = host.client;
    await c.callTool({ name: 'enable_toolset', arguments: { toolset: 'testing' } });
    await waitFor(() => seen.n === 1, 10000, 'list_changed after enable_toolset');
    // The new file moves echo into a toolset of its own, not enabled here.
    writeFileSync(file, readFileSync(file, 'utf8').replace('      tools: [plugin:testtools]\n',
      '      tools: [ask_client, big_output, crash_free_internal, fail, serial_counter, sleep, slow_progress, ws_exchange]\n' +
      '    echoing:\n      description: Echo.\n      tools: [echo]\n'));
    process.kill(c.transport.pid, 'SIGHUP');
    await waitFor(() => seen.n === 2, 60000, `list_changed after the reload:\n${host.err.slice(-2000)}`);
    assert.deepEqual(names(await c.listTools()), ALL.filter((n) => n !== 'echo'));
    const listed = await c.callTool({ name: 'list_toolsets', arguments: {} });
    assert.deepEqual(listed.structuredContent.toolsets.map((t) => [t.name, t.enabled]),
      [['testing', true], ['echoing', false]]);
  } finally {
    await closeStdioHost(host);
  }
  await checkStdioHostExit(host);
});

test('stdio: a client in full_list_clients gets every tool, no meta tools', async () => {
  const host = await connectStdioHost({ name: 'legacy-client', args: ['--config', conf('legacy')], env: hostEnv() });
  try {
    assert.deepEqual(names(await host.client.listTools()), ALL_NO_META);
  } finally {
    await closeStdioHost(host);
  }
  await checkStdioHostExit(host);
});

test('HTTP: enabling a toolset changes that session only', async () => {
  const srv = await startHttpHost('toolsets-http', ['--config', conf('http', { transport: 'http' })],
    { env: hostEnv(), list: servers });
  const url = new URL(`http://127.0.0.1:${srv.port}/mcp`);
  const a = new Client({ name: 'session-a', version: '1' });
  const b = new Client({ name: 'session-b', version: '1' });
  const seenA = counter(a);
  const seenB = counter(b);
  try {
    await a.connect(new StreamableHTTPClientTransport(url));
    await b.connect(new StreamableHTTPClientTransport(url));
    assert.deepEqual(names(await a.listTools()), CORE);
    assert.deepEqual(names(await b.listTools()), CORE);
    const on = await a.callTool({ name: 'enable_toolset', arguments: { toolset: 'testing' } });
    assert.notEqual(on.isError, true, JSON.stringify(on));
    await waitFor(() => seenA.n === 1, 10000, 'list_changed on session A');
    assert.deepEqual(names(await a.listTools()), ALL);
    const r = await a.callTool({ name: 'echo', arguments: { text: 'over http' } });
    assert.match(JSON.stringify(r.content), /over http/);
    // B: same list, no notification (give a stray one time to arrive).
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(seenB.n, 0);
    assert.deepEqual(names(await b.listTools()), CORE);
    const listed = await b.callTool({ name: 'list_toolsets', arguments: {} });
    assert.equal(listed.structuredContent.toolsets[0].enabled, false);
    // Concurrent calls enabling the same toolset: one changes the list and
    // notifies, the others find it enabled.
    const many = await Promise.all(Array.from({ length: 16 },
      () => b.callTool({ name: 'enable_toolset', arguments: { toolset: 'testing' } })));
    for (const m of many) assert.notEqual(m.isError, true, JSON.stringify(m));
    assert.equal(many.filter((m) => m.structuredContent.list_changed).length, 1,
      JSON.stringify(many.map((m) => m.structuredContent.list_changed)));
    await waitFor(() => seenB.n >= 1, 10000, 'list_changed on session B');
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(seenB.n, 1);
    assert.deepEqual(names(await b.listTools()), ALL);
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
  }
  // A stateless (2026-07-28) request has no session to keep toolsets in.
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 'stateless', version: '1' } } } }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const msg = JSON.parse(text.startsWith('{') ? text : /data: (.*)/.exec(text)[1]);
  assert.deepEqual(msg.result.tools.map((t) => t.name), ALL_NO_META, text);
  await stopHttpHost(srv);
});

test('the default deployment starts with its core set', async () => {
  const env = hostEnv({ RUNLOOP_API_KEY: 'e2e-unused-key', RUNLOOP_BASE_URL: 'http://127.0.0.1:9' });
  const host = await connectStdioHost({ name: 'toolsets-default',
    args: ['--config', path.join(sourceDir, 'conf', 'runloop-mcp.yaml')], env });
  try {
    const first = names(await host.client.listTools());
    assert.deepEqual(first, ['create_devbox', 'enable_toolset', 'execute_command', 'get_devbox', 'list_devboxes',
      'list_files', 'list_toolsets', 'read_file', 'run_code', 'shutdown_devbox', 'write_file']);
    const listed = await host.client.callTool({ name: 'list_toolsets', arguments: {} });
    const sets = listed.structuredContent.toolsets;
    // Every tool is in the core or in exactly one toolset.
    const all = [...first.filter((n) => !n.endsWith('_toolset') && n !== 'list_toolsets'), ...sets.flatMap((s) => s.tools)];
    assert.equal(new Set(all).size, all.length);
    // computer (the desktop plugin) is a toolset of its own, not in the core.
    assert.deepEqual(sets.find((s) => s.name === 'computer')?.tools, ['computer']);
    const full = spawnSync(hostBin, ['--config', path.join(sourceDir, 'conf', 'runloop-mcp.yaml'), '--list-tools'],
      { env, encoding: 'utf8' });
    const every = full.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0]).sort();
    assert.deepEqual([...all].sort(), every);
    // --list-tools names each tool's toolset.
    assert.match(full.stdout, /^run_python\s.*\(toolset languages\)$/m);
    assert.match(full.stdout, /^create_devbox\s+lifecycle\s+read-write\s*$/m);
  } finally {
    await closeStdioHost(host);
  }
  await checkStdioHostExit(host);
});

test('bad toolsets sections are refused with the place and the fix', () => {
  const cases = [
    [`tools:\n  toolsets:\n    Bad-Name: {description: x, tools: [echo]}\n`,
      /toolset name 'Bad-Name' is not valid; use 1-64 of a-z 0-9 _/],
    [`tools:\n  toolsets:\n    t: {tools: [echo]}\n`, /toolset 't' has no description/],
    [`tools:\n  toolsets:\n    t: {description: x, tools: []}\n`, /toolset 't' has no tools/],
    [`tools:\n  toolsets:\n    t: {description: x, tools: [ecko]}\n`,
      /unknown tool 'ecko' in 'tools.toolsets.t.tools'.*did you mean 'echo'/],
    [`tools:\n  toolsets:\n    t: {description: x, tools: [echo]}\n    u: {description: y, tools: [plugin:testtools]}\n`,
      /tool 'echo' is in toolsets 't' and 'u'; a tool belongs to one toolset/],
    [`tools:\n  exclude: [echo]\n  toolsets:\n    t: {description: x, tools: [echo, fail]}\n`,
      /tool 'echo' in toolset 't' is not offered by this deployment/],
    [`tools:\n  toolsets:\n    t: {description: x, tools: [plugin:nope]}\n`,
      /names plugin 'nope', which is not in 'plugins'/],
    [`tools:\n  aliases: {echo: list_toolsets}\n  toolsets:\n    t: {description: x, tools: [fail]}\n`,
      /has the name of a toolsets meta tool; rename it/],
    [`tools:\n  toolsets:\n    t: {description: x, tools: [echo], extra: 1}\n`, /extra/],
  ];
  for (const [tools, want] of cases) {
    const file = conf('bad', { tools });
    const r = spawnSync(hostBin, ['--config', file, '--check-config'],
      { env: hostEnv({ RLMCP_PLUGIN_DIR: pluginDir }), encoding: 'utf8' });
    assert.notEqual(r.status, 0, `accepted:\n${tools}`);
    assert.match(r.stderr, want, tools);
    assert.match(r.stderr, /bad\.yaml:\d+:\d+:/, r.stderr);
  }
});
