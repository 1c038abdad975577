// End-to-end: the host's WebSocket client for any devbox tunnel port
// (plugin ABI 1.6, runloop_ws_*), through the built host and a real devboxd.
// A small WebSocket server (tests/fixtures/ws_echo_server.py, python3
// stdlib) runs inside the devbox on port 8765; the testtools plugin's
// ws_exchange tool opens a WebSocket to it through the devbox's tunnel,
// sends text and binary messages and returns what came back. Also each bad
// case with its exact error, and runloop_pty_exchange (ABI 1.1) through the
// same client.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const serverSrc = path.join(here, '..', 'fixtures', 'ws_echo_server.py');
const LONG = { timeout: 300000 };
const PORT = 8765;

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, 'structuredContent is set');
  return result.structuredContent;
}

function errorOf(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  return JSON.parse(result.content.find((c) => c.type === 'text').text).error;
}

describe('WebSockets to a devbox tunnel port (runloop_ws_*)', () => {
  let stack;
  let engine;
  let host;
  let client;
  let box;
  let tun;
  let base; // ws://8765-<key>.localhost:<port>

  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 280000 });
  const ws = (args) => call('ws_exchange', {
    tunnel_key: tun.tunnel_key, auth_token: tun.auth_token, port: PORT, ...args,
  });
  /** The tool error's message; it never holds the tunnel's token. */
  const wsError = async (args) => {
    const e = errorOf(await ws(args));
    assert.equal(e.code, 'unavailable');
    assert.ok(!e.message.includes(tun.auth_token), e.message);
    return e.message;
  };

  /** The deployment on the engine's state dir. */
  function writeConf({ tmp, state }) {
    const conf = path.join(tmp, 'ws.yaml');
    writeFileSync(conf, [
      'server:', '  name: runloop-mcp-ws-test', '  transport: stdio',
      'host:', '  log_level: warning',
      'runloop:', '  backend: local', `  state_dir: ${state}`,
      'plugins:',
      '  - name: lifecycle', '    config:', '      create_wait_seconds: 120',
      '  - name: exec', '    config:', '      create_wait_seconds: 120',
      '  - name: pty',
      '  - name: testtools',
      '',
    ].join('\n'));
    return conf;
  }

  before(async () => {
    stack = await startEngineAndHost({
      name: 'ws', plugins: ['testtools', 'pty', 'lifecycle', 'exec'],
      engineArgs: ['--tunnel-listen', '127.0.0.1:0'], conf: writeConf,
    });
    ({ host, client } = stack);
    engine = { ...stack.engine, tunnelPort: stack.engine.pidNumber('tunnel_port') };

    box = ok(await call('create_devbox', { name: 'ws-e2e' }));
    const b64 = readFileSync(serverSrc).toString('base64');
    ok(await call('execute_command', { devbox_id: box.id,
      command: `printf %s '${b64}' | base64 -d > /tmp/ws_echo_server.py` }));
    ok(await call('execute_command_async', { devbox_id: box.id,
      command: `exec python3 /tmp/ws_echo_server.py ${PORT}` }));
    tun = ok(await call('enable_tunnel', { devbox_id: box.id, port: PORT }));
    assert.match(tun.auth_token, /^[0-9a-f]{48}$/);
    base = `ws://${PORT}-${tun.tunnel_key}.localhost:${engine.tunnelPort}`;
    // The server may take a moment to listen: the relay answers 502 until then.
    await waitFor(async () => {
      const r = await ws({ path: '/echo', send: [{ text: 'up?' }] });
      return r.isError ? null : r;
    }, 60000, 'the WebSocket server in the devbox');
  });

  after(() => stack?.stop());

  it('sends text and binary messages and gets them back', LONG, async () => {
    const r = ok(await ws({ path: '/echo?room=1', send: [
      { text: 'hello' }, { hex: '00ff10' }, { text: 'héllo "x"' }, { hex: '' },
    ] }));
    assert.deepEqual(r.received, [
      { type: 'text', text: 'hello' }, { type: 'binary', hex: '00ff10' },
      { type: 'text', text: 'héllo "x"' }, { type: 'binary', hex: '' },
    ]);
  });

  it('a message of 512 KiB both ways, and a subprotocol', LONG, async () => {
    const big = 'ab'.repeat(512 * 1024);
    const r = ok(await ws({ path: '/echo', subprotocol: 'chat.v1', send: [{ hex: big }] }));
    assert.equal(r.received.length, 1);
    assert.equal(r.received[0].type, 'binary');
    assert.equal(r.received[0].hex, big);
  });

  it("answers the server's ping", LONG, async () => {
    const r = ok(await ws({ path: '/ping', recv: 1 }));
    assert.deepEqual(r.received, [{ type: 'text', text: 'pong:hi' }]);
  });

  it('reports the close code and reason of a server that closes', LONG, async () => {
    const r = ok(await ws({ path: '/close', send: [{ text: 'bye?' }], until_closed: true }));
    assert.deepEqual(r.received, [{ type: 'closed', code: 4321, reason: 'bye' }]);
  });

  it('refuses a bad path, port 0 and a missing tunnel key', LONG, async () => {
    const pathMsg = "the WebSocket path (connect_url) must be a server-relative path starting with '/', "
      + 'under 2048 bytes, without spaces or control characters';
    assert.equal(await wsError({ path: 'echo' }), `ws open (invalid argument): ${pathMsg}`);
    assert.equal(await wsError({ path: '/a b' }), `ws open (invalid argument): ${pathMsg}`);
    assert.equal(await wsError({ path: '/echo', port: 0 }),
      'ws open (invalid argument): tunnel: tunnel port must be 1-65535, not 0');
    assert.equal(await wsError({ path: '/echo', tunnel_key: '' }),
      'ws open (invalid argument): tunnel: tunnel_key must be 1-512 characters of A-Z a-z 0-9 _ -');
  });

  it('refuses a token that does not fit a header line', LONG, async () => {
    const e = errorOf(await call('ws_exchange', { tunnel_key: tun.tunnel_key, auth_token: 'a\r\nX-Evil: 1',
      port: PORT, path: '/echo' }));
    assert.equal(e.message, 'ws open (invalid argument): the tunnel token is longer than 512 characters '
      + 'or holds spaces or control characters');
  });

  it('an upgrade the server refuses: its status', LONG, async () => {
    assert.equal(await wsError({ path: '/nope?token=secret' }),
      `ws open (HTTP transport failure, upgrade_status 404): ${base}/nope?token=REDACTED: `
      + 'the server refused the WebSocket upgrade with HTTP 404');
    // A wrong token: devboxd's tunnel refuses before the devbox.
    const e = errorOf(await call('ws_exchange', { tunnel_key: tun.tunnel_key, auth_token: '00',
      port: PORT, path: '/echo' }));
    assert.equal(e.message, `ws open (HTTP transport failure, upgrade_status 401): ${base}/echo: `
      + 'the server refused the WebSocket upgrade with HTTP 401');
  });

  it('a message over max_message is an error, not memory', LONG, async () => {
    // "with 1009" only when the whole frame had arrived: a close reason
    // cannot be sent while the frame's payload is still being read.
    const big = await wsError({ path: '/big?n=5000', max_message: 4096, recv: 1 });
    const want = `ws recv (message too big): ${base}/big?n=5000: a message longer than max_message `
      + '(4096 bytes) arrived; the connection was closed';
    assert.ok(big === want || big === `${want} with 1009`, big);
    // Sending one is refused before anything goes out.
    assert.equal(await wsError({ path: '/echo', max_message: 4, send: [{ text: 'hello' }] }),
      `ws send (invalid argument): ${base}/echo: a message of 5 bytes is longer than max_message (4)`);
  });

  it('a server that stalls: the call ends by its deadline', LONG, async () => {
    const t0 = Date.now();
    assert.equal(await wsError({ path: '/stall', recv: 1, recv_timeout_ms: 600000, timeout_seconds: 3 }),
      `ws recv (timed out): ${base}/stall: no message before the call's deadline`);
    const took = Date.now() - t0;
    assert.ok(took >= 2500 && took < 8000, `took ${took} ms`);
    // Its own timeout: the connection stays usable, the message says which.
    assert.equal(await wsError({ path: '/stall', recv: 1, recv_timeout_ms: 300 }),
      `ws recv (timed out): ${base}/stall: no message within 300 ms`);
  });

  it('a server that never answers the upgrade: connect_timeout_ms, else the deadline', LONG, async () => {
    let t0 = Date.now();
    assert.equal(await wsError({ path: '/hang', connect_timeout_ms: 500 }),
      `ws open (timed out): ${base}/hang: no WebSocket connection within 500 ms`);
    assert.ok(Date.now() - t0 < 5000);
    t0 = Date.now();
    assert.equal(await wsError({ path: '/hang', timeout_seconds: 2 }),
      `ws open (timed out): ${base}/hang: no WebSocket connection before the call's deadline`);
    const took = Date.now() - t0;
    assert.ok(took >= 1500 && took < 7000, `took ${took} ms`);
  });

  it('a handle used from another thread is refused', LONG, async () => {
    assert.equal(await wsError({ path: '/echo', send_off_thread: true }),
      'send off thread: not allowed in this phase');
  });

  it('structs as small as a 1.6 plugin passes them are taken', LONG, async () => {
    const r = ok(await ws({ path: '/echo', send: [{ text: 'small' }], min_sizes: true }));
    assert.deepEqual(r.received, [{ type: 'text', text: 'small' }]);
  });

  it('a close from another thread is refused; the handle stays usable', LONG, async () => {
    assert.equal(await wsError({ path: '/echo', close_off_thread: true }),
      'close off thread: not allowed in this phase; then on its thread: success');
  });

  it('a handle left open is closed by the host when the call ends', LONG, async () => {
    const before = host.err.length;
    const r = ok(await ws({ path: '/echo', send: [{ text: 'left' }], leave_open: true }));
    assert.deepEqual(r.received, [{ type: 'text', text: 'left' }]);
    await waitFor(() => /'ws_exchange' returned with 1 WebSocket open; the host closed them/
      .test(host.err.slice(before)), 10000, 'the host to close the handle');
  });

  it('runloop_pty_exchange (ABI 1.1) still works through the same client', LONG, async () => {
    const r = ok(await ws({ path: '/echo', via: 'pty_exchange', send: [{ text: 'typed' }],
      recv_timeout_ms: 500 }));
    assert.equal(Buffer.from(r.output_hex, 'hex').toString(), 'typed');
    assert.equal(r.quiet, true);
    assert.equal(r.close_code, 0);
    const c = ok(await ws({ path: '/close', via: 'pty_exchange', send: [{ text: 'x' }] }));
    assert.equal(c.close_code, 4321);
  });

  it('a 3xx on the upgrade is reported, not followed: the token goes nowhere else', LONG, async () => {
    const seen = [];
    const other = net.createServer((sock) => {
      sock.on('data', (d) => seen.push(d.toString()));
      setTimeout(() => sock.destroy(), 200);
    });
    await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const to = `http://127.0.0.1:${other.address().port}/echo`;
      assert.equal(await wsError({ path: `/redirect?to=${to}` }),
        `ws open (HTTP transport failure, upgrade_status 302): ${base}/redirect?to=${to}: `
        + 'the server refused the WebSocket upgrade with HTTP 302');
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.deepEqual(seen, []);
    } finally {
      other.close();
    }
  });

  it('runloop_pty_exchange refuses a token that does not fit a header line', LONG, async () => {
    const msg = 'pty exchange (invalid argument): the tunnel token is longer than 512 characters '
      + 'or holds spaces or control characters';
    for (const token of ['a\r\nX-Evil: 1', 'a'.repeat(600)]) {
      const e = errorOf(await call('ws_exchange', { tunnel_key: tun.tunnel_key, auth_token: token,
        port: PORT, path: '/echo', via: 'pty_exchange' }));
      assert.equal(e.message, msg);
    }
  });

  // Last: before the fix these killed the host.
  it('a message over the default max_message mid-frame: an error, the host lives on', LONG, async () => {
    assert.equal(await wsError({ path: '/big?n=2000000', recv: 1 }),
      `ws recv (message too big): ${base}/big?n=2000000: a message longer than max_message `
      + '(1048576 bytes) arrived; the connection was closed');
    ok(await ws({ path: '/echo', send: [{ text: 'alive' }] }));
  });

  it('a PTY frame over 16 MiB: an error, the host lives on', LONG, async () => {
    const before = host.err.length;
    const e = errorOf(await ws({ path: '/big?n=17000000', via: 'pty_exchange', recv_timeout_ms: 20000 }));
    assert.match(e.message, /^pty exchange \(HTTP transport failure\):/);
    assert.match(host.err.slice(before), /pty exchange: .*a message longer than max_message \(16777216 bytes\) arrived; the connection was closed\n/);
    ok(await ws({ path: '/echo', send: [{ text: 'alive' }] }));
  });
});
