// Every bad input of issue 2, sent raw over stdio to the built host: each
// gets the right JSON-RPC error (or tool error) with a message saying what
// to fix, and the server keeps answering the next request.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RawHost, requireBuilt, waitFor } from './lib/host.mjs';

describe('bad input over stdio', () => {
  let host;
  let seq = 0;

  before(() => {
    requireBuilt();
    host = new RawHost();
  });
  after(async () => {
    const exit = await host.close();
    assert.deepEqual(host.junk, [], 'stdout carries only JSON-RPC messages');
    assert.equal(exit.code, 0, `clean exit on EOF; stderr:\n${host.stderr}`);
    assert.doesNotMatch(host.stderr, /Sanitizer|runtime error/);
  });

  // The server still answers: a ping with a fresh id.
  async function stillServing() {
    const id = `ping-${++seq}`;
    const r = await host.request(id, 'ping');
    assert.deepEqual(r.result, {});
  }

  // Send raw text; expect an error with id null.
  async function expectNullIdError(raw, code, text) {
    const before = host.messages.length;
    await host.send(raw);
    const m = await host.next((x, i) => host.messages.indexOf(x) >= before && x.id === null, 10000, `an error for ${String(raw).slice(0, 60)}`);
    assert.equal(m.error.code, code, JSON.stringify(m));
    assert.match(m.error.message, text);
    await stillServing();
  }

  it('a call before initialize is refused (ping is allowed)', async () => {
    await stillServing();
    const r = await host.request(1, 'tools/list');
    assert.equal(r.error.code, -32600);
    assert.match(r.error.message, /send initialize first/);
    const init = await host.initialize();
    assert.equal(init.result.protocolVersion, '2025-11-25');
    await stillServing();
  });

  it('invalid JSON: -32700', () => expectNullIdError('{"jsonrpc":"2.0","id":2,', -32700, /invalid JSON/));

  it('a JSON array (batch): -32600', () =>
    expectNullIdError('[{"jsonrpc":"2.0","id":3,"method":"ping"}]', -32600, /batches are not supported since 2025-06-18/));

  it('a request without id: -32600', () =>
    expectNullIdError('{"jsonrpc":"2.0","method":"tools/list"}', -32600, /no "id"/));

  it('a null id: -32600', () =>
    expectNullIdError('{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, /must not be null/));

  it('wrong jsonrpc version: -32600 carrying the id', async () => {
    await host.send({ jsonrpc: '1.0', id: 'v1', method: 'ping' });
    const r = await host.response('v1');
    assert.equal(r.error.code, -32600);
    assert.match(r.error.message, /"jsonrpc" must be the string "2\.0"/);
    await host.send({ id: 'v2', method: 'ping' });
    assert.equal((await host.response('v2')).error.code, -32600);
    await stillServing();
  });

  it('a non-string method: -32600', async () => {
    await host.send({ jsonrpc: '2.0', id: 'm1', method: 7 });
    const r = await host.response('m1');
    assert.equal(r.error.code, -32600);
    assert.match(r.error.message, /"method" must be a string/);
    await stillServing();
  });

  it('unknown method: -32601', async () => {
    const r = await host.request('u1', 'tools/explode', {});
    assert.equal(r.error.code, -32601);
    assert.match(r.error.message, /tools\/explode/);
    await stillServing();
  });

  it('invalid params: -32602', async () => {
    let r = await host.request('p1', 'tools/call', { name: 5 });
    assert.equal(r.error.code, -32602);
    assert.match(r.error.message, /name must be a tool name/);
    r = await host.request('p2', 'logging/setLevel', { level: 'verbose' });
    assert.equal(r.error.code, -32602);
    assert.match(r.error.message, /debug, info, notice/);
    await host.send('{"jsonrpc":"2.0","id":"p3","method":"tools/list","params":[1]}');
    r = await host.response('p3');
    assert.equal(r.error.code, -32602);
    r = await host.request('p4', 'tools/list', { cursor: 'not-a-cursor' });
    assert.equal(r.error.code, -32602);
    assert.match(r.error.message, /cursor/);
    await stillServing();
  });

  it('a 50 MB line is rejected without killing the server', async () => {
    const big = '{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"' + 'a'.repeat(50 * 1024 * 1024) + '"}}';
    await expectNullIdError(big, -32600, /exceeds the 16777216-byte limit/);
    assert.equal(host.messages.find((m) => m.id === 'big'), undefined, 'the oversized request itself is not answered');
  });

  it('10,000-deep nesting: -32700', () =>
    expectNullIdError('['.repeat(10000) + ']'.repeat(10000), -32700, /deeper than 1000 levels/));

  it('10,000-deep nesting inside a request: -32700', () =>
    expectNullIdError(`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"echo","arguments":{"a":${'['.repeat(10000)}${']'.repeat(10000)}}}}`, -32700, /deeper than/));

  it('invalid UTF-8: -32700', () =>
    expectNullIdError(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"utf","method":"p'), Buffer.from([0xff, 0xfe]), Buffer.from('ing"}')]), -32700, /not valid UTF-8/));

  it('unknown tool: -32602', async () => {
    const r = await host.request('t1', 'tools/call', { name: 'no_such_tool', arguments: {} });
    assert.equal(r.error.code, -32602);
    assert.match(r.error.message, /unknown tool 'no_such_tool'; call tools\/list/);
    await stillServing();
  });

  it('arguments of the wrong type: an isError result naming the field', async () => {
    const r = await host.request('w1', 'tools/call', { name: 'hello', arguments: { name: 5 } });
    assert.equal(r.result.isError, true, JSON.stringify(r));
    const err = JSON.parse(r.result.content[0].text).error;
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /arguments\.name/);
    assert.ok(err.remedy);
    // The same error object is the structured content (docs/errors.md).
    assert.deepEqual(r.result.structuredContent, { error: err });
    const r2 = await host.request('w2', 'tools/call', { name: 'hello', arguments: 'Bob' });
    assert.equal(r2.result.isError, true);
    await stillServing();
  });

  it('a cancel for an unknown id is ignored', async () => {
    const before = host.messages.length;
    await host.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'never-sent' } });
    await host.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: {} });
    await stillServing();
    // Only the ping's answer arrived.
    assert.equal(host.messages.length, before + 1);
  });

  it('a cancelled call sends no response', async () => {
    await host.send({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'hello', arguments: { steps: 100, step_ms: 100 } } });
    await new Promise((r) => setTimeout(r, 200));
    await host.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'test' } });
    await stillServing();
    // Well past the point where a response would have come.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(host.messages.find((m) => m.id === 'slow'), undefined);
    await stillServing();
  });

  it('an unknown notification and a stray response are ignored', async () => {
    const before = host.messages.length;
    await host.send({ jsonrpc: '2.0', method: 'notifications/whatever' });
    await host.send({ jsonrpc: '2.0', id: 'nobody-asked', result: {} });
    await stillServing();
    assert.equal(host.messages.length, before + 1);
  });
});

describe('framing', () => {
  it('2,000 pipelined requests in one write, CRLF endings: each answered once', async () => {
    requireBuilt();
    const host = new RawHost();
    try {
      await host.initialize();
      const lines = [];
      for (let i = 0; i < 2000; i++) {
        lines.push(i % 2 === 0
          ? JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping' })
          : JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: `n${i}` } } }));
      }
      await host.send(lines.join('\r\n') + '\r\n');
      await waitFor(() => host.messages.filter((m) => typeof m.id === 'number').length >= 2000, 60000, '2,000 answers');
      const ids = host.messages.filter((m) => typeof m.id === 'number').map((m) => m.id);
      assert.equal(new Set(ids).size, 2000, 'no answer lost or duplicated');
      for (const m of host.messages.filter((x) => typeof x.id === 'number' && x.id % 2 === 1)) {
        assert.match(JSON.stringify(m.result.content), new RegExp(`n${m.id}`));
      }
      assert.deepEqual(host.junk, []);
    } finally {
      await host.close();
      host.kill();
    }
  });
});

describe('shutdown', () => {
  it('SIGTERM with a call in flight: the call is answered, the exit is clean', async () => {
    requireBuilt();
    const host = new RawHost();
    try {
      await host.initialize();
      await host.send({ jsonrpc: '2.0', id: 'long', method: 'tools/call', params: { name: 'hello', arguments: { steps: 100, step_ms: 100 } } });
      await new Promise((r) => setTimeout(r, 200));
      host.child.kill('SIGTERM');
      const exit = await Promise.race([host.exited, new Promise((r) => setTimeout(() => r('timeout'), 8000))]);
      assert.notEqual(exit, 'timeout', 'the host exits within 8 s of SIGTERM');
      assert.equal(exit.code, 0, host.stderr);
      assert.doesNotMatch(host.stderr, /Sanitizer|runtime error/);
      const r = host.messages.find((m) => m.id === 'long');
      assert.ok(r, 'the in-flight call got an answer before exit');
      assert.equal(r.result.isError, true);
      assert.match(r.result.content[0].text, /shutting down/);
    } finally {
      host.kill();
    }
  });

  it('EOF ends the host by itself', async () => {
    const host = new RawHost({ args: ['--log-level', 'debug'] });
    try {
      await host.initialize();
      const exit = await host.close(30000);
      assert.equal(exit.code, 0, host.stderr);
      assert.equal(exit.signal, null);
      assert.match(host.stderr, /stdio: end of input; 0 call\(s\) in flight/);
    } finally {
      host.kill();
    }
  });
});
