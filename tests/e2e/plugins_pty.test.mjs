// End-to-end: the pty plugin's session tools (pty_connect, pty_send_command,
// pty_control) through the built host (plugin ABI 1.1 tunnel services),
// driven by the official MCP SDK client over stdio, against a real devboxd
// whose PTY server runs inside the devbox behind a PTY tunnel.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import WebSocket from 'ws';
import { waitFor } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';

const LONG = { timeout: 300000 };

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, 'structuredContent is set');
  return result.structuredContent;
}

function errorOf(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  return JSON.parse(result.content.find((c) => c.type === 'text').text).error;
}

/** GET on devboxd's tunnel listener for a PTY tunnel key (port 13). */
function tunnelGet(port, key, p, token) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false,
      headers: { host: `13-${key}.localhost:${port}`, authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.setTimeout(20000, () => req.destroy(new Error(`GET ${p} timed out`)));
    req.on('error', reject);
  });
}

describe('PTY session tools end to end (local engine)', () => {
  let stack;
  let engine;
  let client;
  let box;

  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 280000 });
  /** Type a line and collect the screen text until `re` matches (bounded). */
  async function typeUntil(session, command, re, what) {
    let seen = '';
    const first = ok(await call('pty_send_command', { devbox_id: box.id, session_name: session,
      command, quiet_ms: 400, max_wait: 20 }));
    seen += first.output;
    await waitFor(async () => {
      if (re.test(seen)) return true;
      // Nothing typed: read what the terminal printed since.
      const more = ok(await call('pty_send_command', { devbox_id: box.id, session_name: session,
        command: '', append_newline: false, quiet_ms: 400, max_wait: 10 }));
      seen += more.output;
      return re.test(seen);
    }, 60000, `${what} (screen so far: ${JSON.stringify(seen)})`);
    return seen;
  }

  before(async () => {
    stack = await startEngineAndHost({
      name: 'pty', plugins: ['pty', 'lifecycle'],
      engineArgs: ['--tunnel-listen', '127.0.0.1:0'], conf: writeConf,
    });
    client = stack.client;
    engine = { ...stack.engine, tunnelPort: stack.engine.pidNumber('tunnel_port') };
    box = ok(await call('create_devbox', { name: 'pty-e2e' }));
    assert.equal(box.status, 'running');
  });

  after(async () => {
    try { if (box) await call('shutdown_devbox', { devbox_id: box.id }); } catch { /* reported below */ }
    await stack?.stop();
  });

  /** The deployment on the engine's state dir; no tunnel_url_template: the
   *  host finds devboxd's tunnel listener in the state dir's devboxd.pid. */
  function writeConf({ tmp, state }) {
    const conf = path.join(tmp, 'pty.yaml');
    writeFileSync(conf, [
      'server:', '  name: runloop-mcp-pty-test', '  transport: stdio',
      'host:', '  log_level: warning',
      'runloop:', '  backend: local', `  state_dir: ${state}`,
      'plugins:',
      '  - name: lifecycle', '    config:', '      create_wait_seconds: 120',
      '  - name: pty',
      '',
    ].join('\n'));
    return conf;
  }

  it('pty_connect creates a session, then reattaches to it', LONG, async () => {
    const c = ok(await call('pty_connect', { devbox_id: box.id, session_name: 'sh1', cols: 100, rows: 30 }));
    assert.equal(c.session_name, 'sh1');
    assert.equal(c.created, true);
    assert.equal(c.attached, false);
    assert.equal(c.connect_url, '/pty/sh1/attach');
    assert.equal(c.cols, 100);
    assert.equal(c.rows, 30);
    assert.ok(c.idle_ttl_seconds > 0);
    const again = ok(await call('pty_connect', { devbox_id: box.id, session_name: 'sh1' }));
    assert.equal(again.created, false);
    // No token or tunnel key reaches the model.
    assert.equal(again.auth_token, undefined);
  });

  it('pty_send_command: python3 -i, print(6*7) gives 42', LONG, async () => {
    await typeUntil('repl', 'python3 -i', />>> /, 'the python prompt');
    const seen = await typeUntil('repl', 'print(6*7)', /^42$/m, '42 on its own line');
    assert.doesNotMatch(seen, /\x1b/, 'escape sequences are removed');
    await typeUntil('repl', 'exit()', /\$ $/m, 'the shell prompt after python');
  });

  it('reconnecting to the same session keeps a shell variable', LONG, async () => {
    ok(await call('pty_send_command', { devbox_id: box.id, session_name: 'sh1',
      command: 'export RLMCP_KEPT=kept-$((40+2))', quiet_ms: 300 }));
    const c = ok(await call('pty_connect', { devbox_id: box.id, session_name: 'sh1' }));
    assert.equal(c.created, false);
    await typeUntil('sh1', 'echo "v=$RLMCP_KEPT"', /^v=kept-42$/m, 'the variable set in an earlier call');
  });

  it('pty_control resize: the terminal has the new size', LONG, async () => {
    const r = ok(await call('pty_control', { devbox_id: box.id, session_name: 'sh1',
      action: 'resize', cols: 123, rows: 45 }));
    assert.equal(r.session_name, 'sh1');
    assert.equal(r.status, 'running');
    await typeUntil('sh1', 'stty size', /^45 123$/m, 'stty size after the resize');
  });

  it('pty_control signal SIGINT interrupts sleep 100', LONG, async () => {
    const s = ok(await call('pty_send_command', { devbox_id: box.id, session_name: 'sh1',
      command: 'sleep 100; echo "slept=$?"', quiet_ms: 500, max_wait: 5 }));
    assert.doesNotMatch(s.output, /^slept=\d+$/m, 'sleep is still running');
    const t0 = Date.now();
    const r = ok(await call('pty_control', { devbox_id: box.id, session_name: 'sh1',
      action: 'signal', signal: 'SIGINT' }));
    assert.equal(r.status, 'running');
    const seen = await typeUntil('sh1', 'echo "after=$?"', /^after=130$/m, 'the interrupted sleep');
    assert.doesNotMatch(seen, /^slept=0$/m);
    assert.ok(Date.now() - t0 < 90000, 'sleep 100 did not run to its end');
  });

  it('a second attach is refused with a clear error; the session survives', LONG, async () => {
    ok(await call('pty_connect', { devbox_id: box.id, session_name: 'held' }));
    // The deployment sets no tunnel_url_template (pty_url is the cloud
    // form); the local tunnel listener takes the same key and token.
    const p = ok(await call('create_pty_tunnel', { devbox_id: box.id }));
    const ws = new WebSocket(`ws://127.0.0.1:${engine.tunnelPort}/pty/held/attach`, {
      headers: { host: `13-${p.tunnel_key}.localhost:${engine.tunnelPort}`,
        authorization: `Bearer ${p.auth_token}` },
    });
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    try {
      const err = errorOf(await call('pty_send_command', { devbox_id: box.id, session_name: 'held',
        command: 'echo hi' }));
      assert.equal(err.code, 'conflict');
      assert.match(err.message, /one WebSocket client/);
    } finally {
      ws.close(1000);
    }
    await waitFor(async () => {
      const c = ok(await call('pty_connect', { devbox_id: box.id, session_name: 'held' }));
      return c.attached === false;
    }, 30000, 'the other client to detach');
    await typeUntil('held', 'echo "free=$((6*7))"', /^free=42$/m, 'the session after the other client left');
  });

  it('pty_control close ends the shell; the next connect makes a fresh one', LONG, async () => {
    const r = ok(await call('pty_control', { devbox_id: box.id, session_name: 'sh1', action: 'close' }));
    assert.equal(r.status, 'closed');
    const e = errorOf(await call('pty_control', { devbox_id: box.id, session_name: 'sh1',
      action: 'resize', cols: 80, rows: 24 }));
    assert.equal(e.code, 'not_found');
    const c = ok(await call('pty_connect', { devbox_id: box.id, session_name: 'sh1' }));
    assert.equal(c.created, true);
    await typeUntil('sh1', 'echo "v=[$RLMCP_KEPT]"', /^v=\[\]$/m, 'a fresh shell without the variable');
  });

  it('bad input is refused before anything is sent', LONG, async () => {
    const cases = [
      ['pty_connect', { devbox_id: box.id, session_name: 'a b' }, /session_name|1-256/],
      ['pty_connect', { devbox_id: box.id, session_name: 'x'.repeat(257) }, /session_name|1-256/],
      ['pty_connect', { devbox_id: box.id, session_name: 's', cols: 0, rows: 24 }, /cols/],
      ['pty_connect', { devbox_id: box.id, session_name: 's', cols: 80 }, /cols|rows/],
      ['pty_connect', { devbox_id: box.id, session_name: 's', cols: 80, rows: 1001 }, /rows/],
      ['pty_control', { devbox_id: box.id, session_name: 's', action: 'signal', signal: 'SIGFOO' }, /signal/],
      ['pty_control', { devbox_id: box.id, session_name: 's', action: 'explode' }, /action/],
      ['pty_control', { devbox_id: box.id, session_name: 's', action: 'resize', cols: 80 }, /cols|rows/],
      ['pty_send_command', { devbox_id: box.id, session_name: 's', command: 'x', max_wait: 0 }, /max_wait/],
      ['pty_send_command', { devbox_id: box.id, session_name: 's', command: 'x', quiet_ms: 1 }, /quiet_ms/],
    ];
    for (const [tool, args, re] of cases) {
      const e = errorOf(await call(tool, args));
      assert.equal(e.code, 'invalid_argument', `${tool} ${JSON.stringify(args).slice(0, 80)}`);
      assert.match(e.message, re);
    }
    const nf = errorOf(await call('pty_connect', { devbox_id: 'dbx_nope', session_name: 's' }));
    assert.equal(nf.code, 'not_found');
    // A tunnel token is checked: the PTY server is not reachable without it.
    const p = ok(await call('create_pty_tunnel', { devbox_id: box.id }));
    const r = await tunnelGet(engine.tunnelPort, p.tunnel_key, '/pty/s', 'wrong');
    assert.equal(r.status, 401);
    const good = await tunnelGet(engine.tunnelPort, p.tunnel_key, '/pty/s', p.auth_token);
    assert.equal(good.status, 200, good.body);
  });
});
