// The built host driven over stdio by the official MCP TypeScript SDK
// client (Client + StdioClientTransport), with the hello and testtools
// plugins: initialize, list, call, progress, cancellation, concurrency,
// logging, server-to-client requests.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema, LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { hostBin, hostEnv, requireBuilt, stdioConf, waitFor } from './lib/host.mjs';

async function connect(capabilities = {}) {
  const transport = new StdioClientTransport({
    command: hostBin, args: ['--config', stdioConf, '--log-level', 'debug'], env: hostEnv(), stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d; });
  const client = new Client({ name: 'host-stdio-test', version: '1.0.0' }, { capabilities });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

describe('host over stdio with the MCP SDK client', () => {
  let c;

  before(async () => {
    requireBuilt();
    c = await connect();
  });
  after(async () => {
    await c?.client.close();
    // The host saw EOF and left by itself (not through the SDK's SIGTERM).
    assert.match(c?.stderr() ?? '', /stdio: end of input/);
    assert.doesNotMatch(c?.stderr() ?? '', /stdio: stop requested/);
    // Sanitizer builds report on stderr at exit.
    assert.doesNotMatch(c?.stderr() ?? '', /Sanitizer|runtime error/);
  });

  it('initializes with the latest protocol and our server info', () => {
    const info = c.client.getServerVersion();
    assert.equal(info.name, 'runloop-mcp-test');
    assert.ok(info.version);
    const caps = c.client.getServerCapabilities();
    assert.deepEqual(caps.tools, { listChanged: true });
    assert.deepEqual(caps.logging, {});
  });

  it('lists the tools of both plugins, sorted', async () => {
    const { tools, nextCursor } = await c.client.listTools();
    assert.equal(nextCursor, undefined);
    const names = tools.map((t) => t.name);
    assert.deepEqual(names, [...names].sort());
    for (const n of ['hello', 'echo', 'sleep', 'slow_progress', 'fail', 'big_output', 'ask_client']) {
      assert.ok(names.includes(n), `${n} is listed: ${names.join(', ')}`);
    }
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.ok(t.description, t.name);
    }
  });

  it('calls a tool and gets structuredContent mirrored as text', async () => {
    const r = await c.client.callTool({ name: 'hello', arguments: { name: 'SDK' } });
    assert.equal(r.isError, undefined);
    assert.equal(r.structuredContent.greeting, 'Hello, SDK!');
    assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  });

  it('echo returns its input', async () => {
    const r = await c.client.callTool({ name: 'echo', arguments: { text: 'ping pong' } });
    assert.match(JSON.stringify(r.content), /ping pong/);
  });

  it('a tool failure is an isError result, not a protocol error', async () => {
    const r = await c.client.callTool({ name: 'hello', arguments: { name: 'nobody' } });
    assert.equal(r.isError, true);
    const err = JSON.parse(r.content[0].text).error;
    assert.equal(err.code, 'invalid_argument');
    assert.ok(err.remedy);
  });

  it('an unknown tool is a protocol error', async () => {
    await assert.rejects(c.client.callTool({ name: 'no_such_tool', arguments: {} }), /unknown tool 'no_such_tool'/);
  });

  it('delivers progress notifications while a call runs', async () => {
    const seen = [];
    const r = await c.client.callTool({ name: 'hello', arguments: { steps: 5, step_ms: 60 } }, undefined, {
      onprogress: (p) => seen.push(p),
    });
    assert.equal(r.structuredContent.steps, 5);
    // The SDK may drop a progress that shares a pipe read with the result.
    assert.ok(seen.length >= 3, `progress received: ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
    assert.equal(seen[0].total, 5);
  });

  it('slow_progress reports progress too', async () => {
    const seen = [];
    await c.client.callTool({ name: 'slow_progress', arguments: { seconds: 1 } }, undefined, {
      onprogress: (p) => seen.push(p),
    });
    assert.ok(seen.length >= 1, 'at least one progress notification');
  });

  it('honours cancellation and keeps serving', async () => {
    const ac = new AbortController();
    const call = c.client.callTool({ name: 'sleep', arguments: { seconds: 30 } }, undefined, { signal: ac.signal });
    setTimeout(() => ac.abort('test cancel'), 300);
    await assert.rejects(call, /abort|cancel/i);
    // The server received notifications/cancelled and is still serving.
    await waitFor(() => /request \S+ cancelled by the client/.test(c.stderr()), 10000, 'the cancel in the host log');
    await c.client.ping();
    const r = await c.client.callTool({ name: 'hello', arguments: {} });
    assert.equal(r.structuredContent.greeting, 'Hello, world!');
  });

  it('runs 10 concurrent calls; answers come out of order', async () => {
    const order = [];
    // Durations 1000, 900, ..., 100 ms: the last started finishes first.
    const calls = Array.from({ length: 10 }, (_, i) => {
      const steps = 10 - i;
      return c.client.callTool({ name: 'hello', arguments: { name: `c${i}`, steps, step_ms: 100 } })
        .then((r) => { order.push(i); return r; });
    });
    const results = await Promise.all(calls);
    results.forEach((r, i) => assert.equal(r.structuredContent.greeting, `Hello, c${i}!`));
    // Run one after another they would finish in start order.
    assert.notDeepEqual(order, [...order].sort((a, b) => a - b), `completion order ${order}`);
  });

  it('ping is answered while the workers are busy', async () => {
    let done = 0;
    const long = Array.from({ length: 10 }, () => c.client.callTool({ name: 'sleep', arguments: { seconds: 2 } })
      .then(() => { done++; }));
    await c.client.ping();
    // The ping was answered before any of the calls it followed ended.
    assert.equal(done, 0);
    await Promise.all(long);
  });

  it('sends log notifications at or above the level set', async () => {
    const logs = [];
    c.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
    await c.client.setLoggingLevel('debug');
    await c.client.callTool({ name: 'slow_progress', arguments: { seconds: 1 } });
    await waitFor(() => logs.length > 0, 5000, 'a log notification');
    assert.ok(logs.every((l) => typeof l.level === 'string' && 'data' in l));
    await c.client.setLoggingLevel('emergency');
    logs.length = 0;
    await c.client.callTool({ name: 'slow_progress', arguments: { seconds: 1 } });
    await c.client.ping();
    assert.deepEqual(logs, []);
  });

  it('big_output carries a large result intact', async () => {
    const r = await c.client.callTool({ name: 'big_output', arguments: { bytes: 1000000 } });
    const total = r.content.reduce((n, b) => n + (b.text?.length ?? 0), 0);
    assert.ok(total >= 1000000, `got ${total} characters`);
  });

  it('fail surfaces as an isError result', async () => {
    const r = await c.client.callTool({ name: 'fail', arguments: { code: 'not_found' } });
    assert.equal(r.isError, true);
    // The error object is the structured content too (docs/errors.md).
    assert.deepEqual(r.structuredContent, { error: JSON.parse(r.content[0].text).error });
    assert.equal(r.structuredContent.error.code, 'not_found');
  });
});

describe('server-to-client requests over stdio', () => {
  it('ask_client round-trips sampling/createMessage through the SDK client', async () => {
    requireBuilt();
    const c = await connect({ sampling: {} });
    try {
      let asked = null;
      c.client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
        asked = req.params;
        return { role: 'assistant', content: { type: 'text', text: 'forty-two' }, model: 'test-model' };
      });
      const r = await c.client.callTool({
        name: 'ask_client',
        arguments: { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'the answer?' } }], maxTokens: 10 } },
      });
      assert.ok(asked, 'the client received the request');
      assert.equal(asked.maxTokens, 10);
      assert.match(JSON.stringify(r.content), /forty-two/);
    } finally {
      await c.client.close();
      assert.doesNotMatch(c.stderr(), /Sanitizer|runtime error/);
    }
  });

  it('without the capability the tool learns it is not supported', async () => {
    const c = await connect({});
    try {
      const r = await c.client.callTool({
        name: 'ask_client',
        arguments: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } },
      });
      assert.match(JSON.stringify(r.content), /not supported|ENOTSUP|not_supported|-9/i);
    } finally {
      await c.client.close();
      assert.doesNotMatch(c.stderr(), /Sanitizer|runtime error/);
    }
  });
});
