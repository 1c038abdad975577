// End-to-end: the pty plugin's tunnel tools (enable_tunnel, get_tunnel_url,
// remove_tunnel, create_pty_tunnel) and a PTY session through the built
// host, driven by the official MCP SDK client over stdio, against a real
// devboxd whose tunnel listener serves the URLs the tools return. A python
// http.server inside the devbox must answer through the URL get_tunnel_url
// gives. Twice: with the host on devboxd's unix socket (backend: local) and
// with the host reaching devboxd by URL (RUNLOOP_BASE_URL, TCP with its API
// key). Neither deployment names a tunnel_url_template: devboxd says where
// its tunnels live (TunnelView.url_template and a response header).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { waitFor } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';

const LONG = { timeout: 300000 };

/** GET a tunnel URL as given; *.localhost is pinned to 127.0.0.1 (RFC 6761). */
function fetchUrl(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, {
      headers, agent: false,
      lookup: (h, opts, cb) => {
        if (!h.endsWith('.localhost')) return cb(new Error(`not a .localhost URL: ${h}`));
        return opts && opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4);
      },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.setTimeout(20000, () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, 'structuredContent is set');
  return result.structuredContent;
}

function errorOf(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  return JSON.parse(result.content.find((c) => c.type === 'text').text).error;
}

for (const mode of ['socket', 'url']) describe(`tunnel tools end to end (devboxd by ${mode})`, () => {
  let stack;
  let engine;
  let client;
  let box;
  let firstKey;

  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 280000 });

  before(async () => {
    // devboxd on a unix socket, or a loopback TCP port for 'url'; and a
    // loopback tunnel listener.
    const listen = mode === 'url' ? ['--listen', '127.0.0.1:0'] : [];
    stack = await startEngineAndHost({
      name: 'tunnels', plugins: ['pty', 'lifecycle', 'exec'],
      engineArgs: [...listen, '--tunnel-listen', '127.0.0.1:0'], conf: writeConf,
      // As for an engine on another machine: its URL and key, no state dir.
      env: ({ state, engine: e }) => (mode !== 'url' ? {} : {
        RUNLOOP_BASE_URL: `http://127.0.0.1:${e.pidNumber('port')}`,
        RUNLOOP_API_KEY: readFileSync(path.join(state, 'api-key'), 'utf8').trim(),
      }),
    });
    client = stack.client;
    engine = { ...stack.engine, tunnelPort: stack.engine.pidNumber('tunnel_port') };
  });

  after(() => stack?.stop());

  /** The deployment: the engine's state dir, or its URL for 'url'. */
  function writeConf({ tmp, state }) {
    const conf = path.join(tmp, 'tunnels.yaml');
    writeFileSync(conf, [
      'server:', '  name: runloop-mcp-tunnels-test', '  transport: stdio',
      'host:', '  log_level: warning',
      'runloop:', ...(mode === 'url' ? ['  backend: cloud'] : ['  backend: local', `  state_dir: ${state}`]),
      'plugins:',
      '  - name: lifecycle', '    config:', '      create_wait_seconds: 120',
      '  - name: exec', '    config:', '      create_wait_seconds: 120',
      '  - name: pty',
      '',
    ].join('\n'));
    return conf;
  }

  it('lists the tunnel tools with honest annotations', async () => {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const n of ['enable_tunnel', 'get_tunnel_url', 'remove_tunnel']) assert.ok(byName[n], `${n} listed`);
    assert.equal(byName.get_tunnel_url.annotations.readOnlyHint, true);
    assert.equal(byName.remove_tunnel.annotations.destructiveHint, true);
  });

  it('enable_tunnel (authenticated by default) gives a URL that serves a python http.server', LONG, async () => {
    box = ok(await call('create_devbox', { name: 'tunnels-e2e' }));
    assert.equal(box.status, 'running');
    ok(await call('execute_command', { devbox_id: box.id,
      command: 'mkdir -p /tmp/www && echo served-by-devbox > /tmp/www/index.txt' }));
    ok(await call('execute_command_async', { devbox_id: box.id,
      command: 'cd /tmp/www && exec python3 -m http.server 8080 --bind 0.0.0.0' }));

    const t = ok(await call('enable_tunnel', { devbox_id: box.id, port: 8080 }));
    assert.equal(t.devbox_id, box.id);
    assert.equal(t.auth_mode, 'authenticated');
    assert.match(t.auth_token, /^[0-9a-f]{48}$/);
    // devboxd's path form: any client opens it (no *.localhost resolution).
    assert.equal(t.url, `http://127.0.0.1:${engine.tunnelPort}/tunnel/8080-${t.tunnel_key}`);
    assert.equal(t.url_template, `http://127.0.0.1:${engine.tunnelPort}/tunnel/{port}-${t.tunnel_key}`);

    firstKey = t.tunnel_key;
    const got = ok(await call('get_tunnel_url', { devbox_id: box.id, port: 8080 }));
    assert.equal(got.url, t.url);
    assert.equal(got.auth_token, t.auth_token);
    const auth = { 'x-runloop-tunnel-authorization': `Bearer ${got.auth_token}` };
    const r = await waitFor(async () => {
      const x = await fetchUrl(`${got.url}/index.txt`, auth);
      return x.status === 200 ? x : null;
    }, 30000, 'the http.server through the tunnel URL');
    assert.equal(r.body, 'served-by-devbox\n');
    // The token is what makes it work.
    const none = await fetchUrl(`${got.url}/index.txt`);
    assert.equal(none.status, 401);
    const wrong = await fetchUrl(`${got.url}/index.txt`, { 'x-runloop-tunnel-authorization': 'Bearer 0000' });
    assert.equal(wrong.status, 401);
  });

  it('remove_tunnel: the URL stops working and get_tunnel_url says to enable it', LONG, async () => {
    const before = ok(await call('get_tunnel_url', { devbox_id: box.id, port: 8080 }));
    const rm = ok(await call('remove_tunnel', { devbox_id: box.id }));
    assert.deepEqual(rm, { devbox_id: box.id, removed: true });
    const r = await fetchUrl(`${before.url}/index.txt`,
      { 'x-runloop-tunnel-authorization': `Bearer ${before.auth_token}` });
    assert.equal(r.status, 404);
    const err = errorOf(await call('get_tunnel_url', { devbox_id: box.id, port: 8080 }));
    assert.match(JSON.stringify(err), /has no tunnel/);
    assert.match(JSON.stringify(err), /enable_tunnel/);
  });

  it('an open tunnel serves without a token; a new key after re-enabling', LONG, async () => {
    const t = ok(await call('enable_tunnel', { devbox_id: box.id, auth_mode: 'open' }));
    assert.equal(t.auth_mode, 'open');
    assert.equal(t.auth_token, undefined);
    assert.notEqual(t.tunnel_key, firstKey);
    const u = ok(await call('get_tunnel_url', { devbox_id: box.id, port: 8080 }));
    const r = await fetchUrl(`${u.url}/index.txt`);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'served-by-devbox\n');
    // Another port of the same tunnel: nothing listens there.
    const other = ok(await call('get_tunnel_url', { devbox_id: box.id, port: 8090 }));
    assert.equal((await fetchUrl(`${other.url}/`)).status, 502);
  });

  it('create_pty_tunnel: port-13 URL and token that devboxd checks before the devbox', LONG, async () => {
    const p = ok(await call('create_pty_tunnel', { devbox_id: box.id }));
    assert.equal(p.devbox_id, box.id);
    assert.match(p.tunnel_key, /^[a-z0-9]{24}$/);
    assert.match(p.auth_token, /^[0-9a-f]{48}$/);
    assert.equal(p.pty_url, `http://127.0.0.1:${engine.tunnelPort}/tunnel/13-${p.tunnel_key}`);
    const noTok = await fetchUrl(`${p.pty_url}/pty/s?cols=80&rows=24`);
    assert.equal(noTok.status, 401);
    const wrong = await fetchUrl(`${p.pty_url}/pty/s?cols=80&rows=24`, { authorization: 'Bearer 00' });
    assert.equal(wrong.status, 401);
    // With the token the request goes through to the devbox's port 13 (the
    // PTY server's answer, or the relay's 502/503 when it is not there).
    const r = await fetchUrl(`${p.pty_url}/pty/s?cols=80&rows=24`, { authorization: `Bearer ${p.auth_token}` });
    assert.notEqual(r.status, 401, r.body);
    assert.doesNotMatch(r.body, /tunnel token|no tunnel has key|serves port 13 only|tunnel listener/);
  });

  it('a PTY session through the tunnel devboxd names: echo, then the result', LONG, async () => {
    const c = ok(await call('pty_connect', { devbox_id: box.id, session_name: 'tun' }));
    assert.equal(c.session_name, 'tun');
    let seen = '';
    await waitFor(async () => {
      const r = ok(await call('pty_send_command', { devbox_id: box.id, session_name: 'tun',
        command: seen === '' ? 'echo pty-$((6*7))' : '', append_newline: seen === '', quiet_ms: 400, max_wait: 10 }));
      seen += r.output;
      return /pty-42/.test(seen);
    }, 90000, `pty-42 on the terminal (screen so far: ${JSON.stringify(seen)})`);
  });

  it('bad input: bad auth_mode, port out of range, unknown devbox', LONG, async () => {
    const e1 = errorOf(await call('enable_tunnel', { devbox_id: box.id, auth_mode: 'public' }));
    assert.match(JSON.stringify(e1), /auth_mode/);
    const e2 = errorOf(await call('get_tunnel_url', { devbox_id: box.id, port: 70000 }));
    assert.match(JSON.stringify(e2), /port/);
    const e3 = errorOf(await call('enable_tunnel', { devbox_id: 'dbx_nope', auth_mode: 'open' }));
    assert.match(JSON.stringify(e3), /not.found|not_found/i);
    ok(await call('shutdown_devbox', { devbox_id: box.id }));
    const e4 = errorOf(await call('get_tunnel_url', { devbox_id: box.id, port: 8080 }));
    assert.match(JSON.stringify(e4), /has no tunnel/, 'shutdown removed the tunnel');
  });
});
