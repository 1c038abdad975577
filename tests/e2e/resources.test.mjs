// End-to-end: devbox resources through the built host, driven by the
// official MCP SDK client over stdio against a real devboxd: file and
// execution-output templates, reads (text, blob, size cap, not found,
// bad URIs), subscriptions to a growing execution, and completion of
// devbox ids and snapshot names; over stdio, and subscriptions also over
// Streamable HTTP (the session's GET stream).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';
import { engineRequest, startEngine, startEngineAndHost } from './lib/engine.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-local.yaml');
const LONG = { timeout: 300000 };
const FILE_TEMPLATE = 'devbox://{devbox_id}/{+path}';

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

/** The JSON-RPC error a read fails with. */
async function readError(client, uri) {
  try {
    const r = await client.readResource({ uri });
    assert.fail(`reading ${uri} succeeded: ${JSON.stringify(r)}`);
  } catch (e) {
    if (e.code === undefined) throw e;
    return e;
  }
}

describe('devbox resources (local engine)', () => {
  let stack;
  let engine;
  let client;
  let box;
  const updates = [];

  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 280000 });

  before(async () => {
    stack = await startEngineAndHost({
      name: 'resources', conf, plugins: ['exec'],
      setup: (c) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); }),
    });
    ({ engine, client } = stack);
    box = ok(await call('create_devbox', { name: 'resources-e2e' }));
    assert.equal(box.status, 'running');
  });

  after(() => stack?.stop());

  it('lists the file and execution-output templates; subscribe is offered', async () => {
    const caps = client.getServerCapabilities();
    assert.equal(caps.resources?.subscribe, true);
    assert.ok(caps.completions);
    const { resourceTemplates } = await client.listResourceTemplates();
    const uris = resourceTemplates.map((t) => t.uriTemplate);
    for (const u of [FILE_TEMPLATE, 'devbox://{devbox_id}/executions/{execution_id}/stdout',
      'devbox://{devbox_id}/executions/{execution_id}/stderr']) assert.ok(uris.includes(u), `${u} in ${uris}`);
  });

  it('reads a text file as text and a binary file as a blob', LONG, async () => {
    ok(await call('write_file', { devbox_id: box.id, file_path: '/home/user/dir with space/notes.txt', contents: 'hello resources\n' }));
    const r = await client.readResource({ uri: `devbox://${box.id}/home/user/dir%20with%20space/notes.txt` });
    assert.equal(r.contents.length, 1);
    assert.equal(r.contents[0].text, 'hello resources\n');
    assert.match(r.contents[0].mimeType, /^text\/plain/);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0xff, 0xfe]);
    ok(await call('upload_file', { devbox_id: box.id, file_path: '/home/user/pic.png', content_base64: png.toString('base64') }));
    const b = await client.readResource({ uri: `devbox://${box.id}/home/user/pic.png` });
    assert.equal(b.contents[0].text, undefined);
    assert.equal(Buffer.from(b.contents[0].blob, 'base64').compare(png), 0);
    assert.equal(b.contents[0].mimeType, 'image/png');
  });

  it('refuses a file over the size cap with a clear invalid-params error', LONG, async () => {
    ok(await call('execute_command', { devbox_id: box.id, command: 'head -c 70000 /dev/zero | tr "\\0" a > /home/user/big.txt' }));
    const e = await readError(client, `devbox://${box.id}/home/user/big.txt`);
    assert.equal(e.code, -32602, e.message);
    assert.match(e.message, /larger than this server's limit of 65536 bytes/);
    assert.equal(e.data.code, 'too_large');
  });

  it('a missing file or unknown devbox is resource-not-found', LONG, async () => {
    let e = await readError(client, `devbox://${box.id}/home/user/no-such-file`);
    assert.equal(e.code, -32002, e.message);
    assert.equal(e.data.code, 'not_found');
    assert.equal(e.data.uri, `devbox://${box.id}/home/user/no-such-file`);
    e = await readError(client, 'devbox://dbx_doesnotexist/etc/hostname');
    assert.equal(e.code, -32002, e.message);
    assert.match(e.message, /dbx_doesnotexist does not exist/);
    e = await readError(client, `devbox://${box.id}/executions/exe_nope/stdout`);
    assert.equal(e.code, -32002, e.message);
  });

  it('bad URIs: outside any template, path escapes, malformed ids and escapes', async () => {
    let e = await readError(client, 'file:///etc/passwd');
    assert.equal(e.code, -32002);
    assert.match(e.message, /resource not found/);
    for (const [uri, why] of [
      [`devbox://${box.id}/home/user/../../etc/shadow`, /'\.' or '\.\.' segment/],
      [`devbox://${box.id}/home/user/%2e%2e/x`, /'\.' or '\.\.' segment/],
      [`devbox://${box.id}/home//user`, /empty segment/],
      [`devbox://${box.id}/home/user/`, /name a file, not a directory/],
      [`devbox://${box.id}/a%00b`, /bad %-escape/],
      [`devbox://${box.id}/a%zz`, /bad %-escape/],
      ['devbox://bad$id/etc/hostname', /is not a devbox id/],
      [`devbox://${box.id}/executions/e$x/stdout`, /not an execution output URI|is not a devbox id/],
    ]) {
      e = await readError(client, uri);
      assert.equal(e.code, -32602, `${uri}: ${e.message}`);
      assert.match(e.message, why, uri);
    }
  });

  it('reads execution output while it runs and once it completed', LONG, async () => {
    const a = ok(await call('execute_command_async', { devbox_id: box.id,
      command: 'echo line1; sleep 2; echo line2; echo oops >&2' }));
    const uri = `devbox://${box.id}/executions/${a.execution_id}/stdout`;
    const early = await client.readResource({ uri });
    assert.match(early._meta['runloop/status'], /^(queued|running|completed)$/);
    assert.ok('line1\nline2\n'.startsWith(early.contents[0].text), early.contents[0].text);
    const w = ok(await call('wait_for_execution', { devbox_id: box.id, execution_id: a.execution_id, timeout_seconds: 120 }));
    assert.equal(w.status, 'completed');
    const r = await client.readResource({ uri });
    assert.equal(r.contents[0].text, 'line1\nline2\n');
    assert.equal(r.contents[0].mimeType, 'text/plain');
    assert.equal(r._meta['runloop/status'], 'completed');
    assert.equal(r._meta['runloop/exit_status'], 0);
    const err = await client.readResource({ uri: `devbox://${box.id}/executions/${a.execution_id}/stderr` });
    assert.equal(err.contents[0].text, 'oops\n');
  });

  it('subscribers hear an execution grow and complete; unsubscribing stops it', LONG, async () => {
    const a = ok(await call('execute_command_async', { devbox_id: box.id,
      command: 'for i in 1 2 3 4 5 6; do echo tick$i; sleep 1; done' }));
    const uri = `devbox://${box.id}/executions/${a.execution_id}/stdout`;
    const other = `devbox://${box.id}/executions/${a.execution_id}/stderr`;
    const count = (u) => updates.filter((x) => x === u).length;
    await client.subscribeResource({ uri });
    // The output grows while it runs: at least one update before the end.
    await waitFor(() => count(uri) >= 1, 120000, 'a resources/updated notification while it runs');
    const w = ok(await call('wait_for_execution', { devbox_id: box.id, execution_id: a.execution_id, timeout_seconds: 120 }));
    assert.equal(w.status, 'completed');
    // Its completion changes the resource (_meta status): announced too.
    await waitFor(async () => {
      const r = await client.readResource({ uri });
      return r._meta['runloop/status'] === 'completed' && count(uri) >= 2;
    }, 60000, 'the update announcing the completion');
    const r = await client.readResource({ uri });
    assert.equal(r.contents[0].text, 'tick1\ntick2\ntick3\ntick4\ntick5\ntick6\n');
    assert.equal(count(other), 0, 'no update for a resource nobody subscribed to');
    await client.unsubscribeResource({ uri });
    // A second execution, unsubscribed while it still writes: nothing more
    // comes for it (one update may have been on its way already).
    const b = ok(await call('execute_command_async', { devbox_id: box.id, command: 'for i in 1 2 3 4 5 6 7 8; do echo x$i; sleep 1; done' }));
    const uri2 = `devbox://${box.id}/executions/${b.execution_id}/stdout`;
    await client.subscribeResource({ uri: uri2 });
    await waitFor(() => count(uri2) >= 1, 120000, 'an update for the second execution');
    await client.unsubscribeResource({ uri: uri2 });
    const seen = count(uri2);
    const done = ok(await call('wait_for_execution', { devbox_id: box.id, execution_id: b.execution_id, timeout_seconds: 120 }));
    assert.equal(done.status, 'completed');
    const left = await client.readResource({ uri: uri2 });
    assert.match(left.contents[0].text, /x8\n$/, 'it kept writing after the unsubscribe');
    assert.ok(count(uri2) <= seen + 1, `${count(uri2) - seen} updates after unsubscribe`);
  });

  it('subscribing to a URI outside every template is resource-not-found', async () => {
    await assert.rejects(client.subscribeResource({ uri: 'nope://x' }), (e) => e.code === -32002);
  });

  it('completes devbox ids and snapshot names; other arguments get nothing', LONG, async () => {
    const ref = { type: 'ref/resource', uri: FILE_TEMPLATE };
    let c = await client.complete({ ref, argument: { name: 'devbox_id', value: box.id.slice(0, 4) } });
    assert.ok(c.completion.values.includes(box.id), JSON.stringify(c));
    c = await client.complete({ ref, argument: { name: 'devbox_id', value: 'zzz-no-such' } });
    assert.deepEqual(c.completion.values, []);
    const snapName = `e2e-snap-${process.pid}`;
    await engineRequest(engine.sock, 'POST', `/v1/devboxes/${box.id}/snapshot_disk`, { name: snapName });
    c = await client.complete({ ref, argument: { name: 'snapshot_name', value: 'e2e-snap' } });
    assert.ok(c.completion.values.includes(snapName), JSON.stringify(c));
    c = await client.complete({ ref, argument: { name: 'blueprint_name', value: '' } });
    assert.ok(Array.isArray(c.completion.values));
    c = await client.complete({ ref, argument: { name: 'path', value: '/ho' } });
    assert.deepEqual(c.completion, { values: [], total: 0, hasMore: false });
  });
});

describe('devbox resource subscriptions over Streamable HTTP (local engine)', () => {
  let tmp;
  let engine;
  let host;
  let hostLog = '';
  let client;
  let port;
  const updates = [];

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-resources-http-'));
    engine = await startEngine(path.join(tmp, 'state'));
    host = spawn(hostBin, ['--config', conf, '--transport', 'http', '--listen', '127.0.0.1:0', '--log-level', 'notice'], {
      env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_TEST_STATE_DIR: path.join(tmp, 'state') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    host.stderr.setEncoding('utf8');
    host.stderr.on('data', (d) => { hostLog += d; });
    port = await waitFor(() => { const m = /\(port (\d+)\)/.exec(hostLog); return m && Number(m[1]); }, 60000, 'the HTTP server to listen');
    client = new Client({ name: 'resources-http-e2e', version: '1' });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  });

  after(async () => {
    try { await client?.close(); } catch { /* gone */ }
    if (host && host.exitCode === null) {
      const gone = new Promise((r) => host.on('exit', r));
      host.kill('SIGTERM');
      const t = setTimeout(() => host.kill('SIGKILL'), 20000);
      await gone;
      clearTimeout(t);
    }
    await engine?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    assert.doesNotMatch(hostLog, /AddressSanitizer|LeakSanitizer|runtime error/, hostLog);
  });

  it('updates arrive on the session\'s GET stream; 2026-07-28 reads (not found: -32602) and completion', LONG, async () => {
    const call = async (name, args) => {
      const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 280000 });
      return ok(r);
    };
    const box = await call('create_devbox', { name: 'resources-http' });
    const a = await call('execute_command_async', { devbox_id: box.id, command: 'for i in 1 2 3 4; do echo t$i; sleep 1; done' });
    const uri = `devbox://${box.id}/executions/${a.execution_id}/stdout`;
    await client.subscribeResource({ uri });
    await waitFor(() => updates.includes(uri), 120000, 'resources/updated over HTTP');
    const r = await client.readResource({ uri });
    assert.match(r.contents[0].text, /^t1\n/);
    await client.unsubscribeResource({ uri });

    // MCP 2026-07-28 (stateless): the same reads; not found is -32602.
    const rev = async (method, params, name) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'resources-e2e', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      } } });
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
      if (name) headers['mcp-name'] = name;
      const res = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers, body });
      const text = await res.text();
      const line = text.trimStart().startsWith('{') ? text : text.split('\n').find((l) => l.startsWith('data: {'))?.slice(6);
      return JSON.parse(line);
    };
    let m = await rev('resources/read', { uri }, uri);
    assert.equal(m.result.resultType, 'complete');
    assert.match(m.result.contents[0].text, /^t1\n/);
    const missing = `devbox://${box.id}/home/user/none.txt`;
    m = await rev('resources/read', { uri: missing }, missing);
    assert.equal(m.error.code, -32602, JSON.stringify(m));
    assert.equal(m.error.data.code, 'not_found');
    m = await rev('completion/complete', { ref: { type: 'ref/resource', uri: 'devbox://{devbox_id}/{+path}' },
      argument: { name: 'devbox_id', value: box.id } });
    assert.deepEqual(m.result.completion.values, [box.id]);
    await call('shutdown_devbox', { devbox_id: box.id });
  });
});
