// PTY sessions through devboxd: create_pty_tunnel with the official SDK,
// then the PTY API (devboxd-ptyd inside the devbox on port 13) through the
// tunnel listener: connect, control, and the WebSocket data plane (ws).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createRequire } from 'node:module';
import { Devboxd, Runloop, sourceDir } from './devboxd.mjs';

const require = createRequire(path.join(sourceDir, 'tests', 'package.json'));
const WebSocket = require('ws');

const engine = new Devboxd();
let client;
let tunnelPort;
let boxId;
let pty; // {tunnel_key, auth_token}

const pin = (h, opts, cb) => (opts && opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }])
  : cb(null, '127.0.0.1', 4));
const origin = () => `13-${pty.tunnel_key}.localhost:${tunnelPort}`;

function request(method, p, { body, token = pty.auth_token, key } = {}) {
  const host = key ? `13-${key}.localhost:${tunnelPort}` : origin();
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const req = http.request(`http://${host}${p}`, { method, headers, agent: false, lookup: pin }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, text, json });
      });
    });
    req.setTimeout(20000, () => req.destroy(new Error(`${method} ${p} timed out`)));
    req.on('error', reject);
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}

const control = (name, body) => request('POST', `/pty/${name}/control`, { body });

// An attached terminal: collects output; waitFor(re) resolves on a match.
function attach(connectUrl, { token = pty.auth_token, query = false } = {}) {
  const url = `ws://${origin()}${connectUrl}${query ? `?token=${token}` : ''}`;
  const ws = new WebSocket(url, { lookup: pin, headers: query ? {} : { authorization: `Bearer ${token}` } });
  const t = { ws, out: '', closed: null, status: null };
  t.closedP = new Promise((resolve) => ws.on('close', (code) => { t.closed = code; resolve(code); }));
  ws.on('message', (d) => { t.out += d.toString('utf8'); });
  ws.on('unexpected-response', (req, res) => { t.status = res.statusCode; ws.terminate(); });
  ws.on('error', () => {});
  t.opened = new Promise((resolve, reject) => {
    ws.on('open', () => resolve(t));
    t.closedP.then(() => reject(Object.assign(new Error(`attach failed (HTTP ${t.status})`), { status: t.status })));
  });
  t.send = (s) => ws.send(Buffer.from(s));
  // Generous: a loaded 2-core machine under a sanitizer build starts
  // python3 in a devbox in seconds, not milliseconds.
  t.waitFor = async (re, ms = 120000) => {
    const deadline = Date.now() + ms;
    while (!re.test(t.out)) {
      if (Date.now() > deadline) throw new Error(`no ${re} in terminal output:\n${t.out.slice(-2000)}`);
      if (t.closed !== null) throw new Error(`closed (${t.closed}) before ${re}:\n${t.out.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  t.close = async () => { ws.close(); await t.closedP; };
  return t;
}

async function open(name, q = '') {
  const c = await request('GET', `/pty/${name}${q}`);
  assert.equal(c.status, 200, c.text);
  const t = attach(c.json.connect_url);
  await t.opened;
  return { view: c.json, t };
}

before(async () => {
  await engine.start();
  const pid = readFileSync(path.join(engine.stateDir, 'devboxd.pid'), 'utf8');
  tunnelPort = Number(/^tunnel_port (\d+)$/m.exec(pid)[1]);
  client = engine.client();
  boxId = (await client.devboxes.createAndAwaitRunning({ name: 'pty' })).id;
  pty = await client.devboxes.createPtyTunnel(boxId);
});

after(async () => { await engine.cleanup(); });

describe('PTY sessions', () => {
  // An app tunnel used to reach port 13 like any other port: with an open
  // tunnel anyone holding a preview URL got a shell by changing the port,
  // and an authenticated app tunnel's token opened the PTY too. Port 13
  // now answers only under a PTY tunnel's key with that tunnel's token.
  test('port 13 needs the PTY tunnel and its own token, whatever tunnel is used', async () => {
    const open = await client.devboxes.enableTunnel(boxId, { auth_mode: 'open' });
    try {
      const r = await request('GET', '/pty/hijack1', { key: open.tunnel_key, token: null });
      assert.equal(r.status, 404, r.text);
      assert.match(r.json.message, /port 13/);
    } finally {
      await client.devboxes.removeTunnel(boxId);
    }
    const authd = await client.devboxes.enableTunnel(boxId, { auth_mode: 'authenticated' });
    try {
      const r = await request('GET', '/pty/hijack2', { key: authd.tunnel_key, token: authd.auth_token });
      assert.equal(r.status, 404, r.text);
      // The app tunnel's token is no PTY token either; the 401 names no devbox.
      const w = await request('GET', '/pty/hijack3', { token: authd.auth_token });
      assert.equal(w.status, 401, w.text);
      assert.doesNotMatch(w.text, new RegExp(boxId));
    } finally {
      await client.devboxes.removeTunnel(boxId);
    }
    // No session was created through any of them.
    const probe = await request('GET', '/pty/hijack1');
    assert.equal(probe.json.created, true);
  });

  // The official SDK's PTY resource against the tunnel, as the guide uses
  // it: a client whose base URL is the PTY tunnel's URL and whose bearer
  // token is the PTY token. Its default transport on Node is cleartext
  // HTTP/2 with prior knowledge (node:http2), which the tunnel listener
  // answers with h2c.c, forwarding each request to ptyd as HTTP/1.1.
  test('the Runloop SDK with default options: pty.connect and pty.control over HTTP/2', async () => {
    assert.match(pty.path_url_template, /^http:\/\/127\.0\.0\.1:\d+\/tunnel\/\{port\}-\{tunnel_key\}$/);
    const baseURL = pty.path_url_template.replace('{port}', '13').replace('{tunnel_key}', pty.tunnel_key);
    const sdk = new Runloop({ baseURL, bearerToken: pty.auth_token, maxRetries: 0, timeout: 30000 });
    const v = await sdk.pty.connect('sdk1', { cols: 90, rows: 20 });
    assert.equal(v.session_name, 'sdk1');
    assert.equal(v.created, true);
    assert.equal(v.cols, 90);
    assert.equal(v.connect_url, '/pty/sdk1/attach');
    const again = await sdk.pty.connect('sdk1');
    assert.equal(again.created, false);
    // Several requests in flight on the one HTTP/2 connection.
    const many = await Promise.all([1, 2, 3, 4].map((i) => sdk.pty.connect(`sdk-many-${i}`)));
    assert.deepEqual(many.map((x) => x.session_name), ['sdk-many-1', 'sdk-many-2', 'sdk-many-3', 'sdk-many-4']);
    const ctl = await sdk.pty.control('sdk1', { action: 'resize', cols: 120, rows: 40 });
    assert.deepEqual({ ...ctl }, { session_name: 'sdk1', status: 'running' });
    assert.equal((await sdk.pty.connect('sdk1')).cols, 120);
    // ptyd's own errors come back with their status; the token is checked first.
    await assert.rejects(sdk.pty.control('nosuch', { action: 'resize', cols: 1, rows: 1 }), (e) => e.status === 404);
    const wrong = new Runloop({ baseURL, bearerToken: pty.auth_token.replace(/.$/, (ch) => (ch === '0' ? '1' : '0')),
      maxRetries: 0, timeout: 30000 });
    await assert.rejects(wrong.pty.connect('sdk1'), (e) => e.status === 401 && /wrong tunnel token/.test(e.message));
    const closed = await sdk.pty.control('sdk1', { action: 'close' });
    assert.equal(closed.status, 'closed');
  });

  // Port 13 inside used to give a shell (as the devbox user, with sudo) to
  // any account of the devbox that connected. devboxd-ptyd now wants
  // devboxd's key for this boot first, given to it on stdin; its /proc
  // entries are closed to the devbox's accounts (not dumpable).
  test('inside the devbox, port 13 refuses every account without devboxd\'s key', async () => {
    const probe = [
      'import socket',
      'for first in [b"GET /pty/inside HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n",',
      '              b"0123456789abcdef" * 4 + b"\\nGET /pty/inside HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"]:',
      '    s = socket.create_connection(("127.0.0.1", 13), 10)',
      '    s.sendall(first)',
      '    data = b""',
      '    while True:',
      '        d = s.recv(65536)',
      '        if not d: break',
      '        data += d',
      '    print(data.split(b"\\r\\n")[0].decode(), "|", b"devboxd only" in data)',
    ].join('\n');
    await client.devboxes.writeFileContents(boxId, { file_path: '/tmp/probe13.py', contents: probe });
    const refused = 'HTTP/1.1 403 Forbidden | True\n'.repeat(2);
    const asUser = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'python3 /tmp/probe13.py' });
    assert.equal(asUser.stdout, refused, asUser.stderr);
    const asNobody = await client.devboxes.executeAndAwaitCompletion(boxId,
      { command: 'chmod 644 /tmp/probe13.py; sudo -u nobody python3 /tmp/probe13.py' });
    assert.equal(asNobody.stdout, refused, asNobody.stderr);
    // The key is on no command line, and ptyd's environment and fds are closed.
    const look = await client.devboxes.executeAndAwaitCompletion(boxId, { command: [
      'pid=$(pgrep -x ptyd | head -1)',
      'test -n "$pid" || exit 3',
      'tr "\\0" " " < /proc/$pid/cmdline; echo',
      'cat /proc/$pid/environ >/dev/null 2>&1 && echo environ-readable || echo environ-closed',
      'ls /proc/$pid/fd >/dev/null 2>&1 && echo fds-readable || echo fds-closed',
    ].join('\n') });
    assert.equal(look.exit_status, 0, 'no ptyd process found');
    const [cmdline, environ, fds] = look.stdout.trim().split('\n');
    assert.match(cmdline, /\/run\/devbox\/ptyd --listen-fd 3 --key-fd 0 /);
    assert.doesNotMatch(cmdline, /[0-9a-f]{32}/);
    assert.equal(environ, 'environ-closed');
    assert.equal(fds, 'fds-closed');
    // Through devboxd the same session name is served (and nothing made it).
    const c = await request('GET', '/pty/inside');
    assert.equal(c.status, 200, c.text);
    assert.equal(c.json.created, true);
  });

  test('connect creates, then reattaches; view fields', async () => {
    const a = await request('GET', '/pty/view1?cols=100&rows=30');
    assert.equal(a.status, 200, a.text);
    assert.deepEqual({ ...a.json }, {
      attached: false, created: true, connect_url: '/pty/view1/attach', idle_ttl_seconds: 1800,
      cols: 100, rows: 30, session_name: 'view1', status: 'running', protocol_version: '1',
    });
    const b = await request('GET', '/pty/view1');
    assert.equal(b.json.created, false);
    assert.equal(b.json.cols, 100);
  });

  test('python3 -i round trip', async () => {
    const { t } = await open('py');
    t.send('python3 -i\n');
    await t.waitFor(/>>> /);
    t.send('print(6*7)\n');
    await t.waitFor(/\r\n42\r\n/);
    await t.close();
  });

  test('resize delivers SIGWINCH with the new size; SIGINT interrupts sleep', async () => {
    const { t } = await open('winch', '?cols=80&rows=24');
    t.send(`python3 -c "import signal,shutil,time; signal.signal(signal.SIGWINCH, lambda *a: print('WINCH', *shutil.get_terminal_size(), flush=True)); print('READY', flush=True); time.sleep(60)"\n`);
    await t.waitFor(/READY\r\n/);
    const r = await control('winch', { action: 'resize', cols: 123, rows: 45 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { session_name: 'winch', status: 'running' });
    await t.waitFor(/WINCH 123 45/);
    assert.equal((await control('winch', { action: 'signal', signal: 'SIGINT' })).status, 200);
    await t.waitFor(/KeyboardInterrupt/);
    t.send('sleep 100\n');
    await new Promise((r2) => setTimeout(r2, 300)); // let bash start it (the check below does not depend on it)
    const s = await control('winch', { action: 'signal', signal: 'SIGINT' });
    assert.equal(s.status, 200, s.text);
    t.send('echo DONE$((3+4))\n');
    // Well inside the 100 s the sleep would take had SIGINT not ended it.
    await t.waitFor(/DONE7/, 60000);
    await t.close();
  });

  test('reconnect resumes the same shell (cwd, env); close gives a fresh one', async () => {
    const first = await open('resume');
    first.t.send('cd /tmp && export FOO=bar$((40+2)) && echo SET$((1))\n');
    await first.t.waitFor(/SET1/);
    await first.t.close();
    const again = await open('resume');
    assert.equal(again.view.created, false);
    again.t.send('echo "[$PWD:$FOO]"\n');
    await again.t.waitFor(/\[\/tmp:bar42\]/);
    const c = await control('resume', { action: 'close' });
    assert.equal(c.status, 200, c.text);
    assert.deepEqual(c.json, { session_name: 'resume', status: 'closed' });
    assert.equal(await again.t.closedP, 4000);
    const fresh = await open('resume');
    assert.equal(fresh.view.created, true);
    fresh.t.send('echo "[$PWD:$FOO]"\n');
    await fresh.t.waitFor(/\[\/home\/user:\]/);
    await fresh.t.close();
  });

  test('single attach: a second attach is 400 at upgrade; ?token= works for the WebSocket', async () => {
    const { view, t } = await open('single');
    assert.equal((await request('GET', '/pty/single')).json.attached, true);
    const second = attach(view.connect_url);
    await assert.rejects(second.opened, (e) => e.status === 400);
    await t.close();
    const q = attach(view.connect_url, { query: true });
    await q.opened;
    q.send('echo Q$((1+1))\n');
    await q.waitFor(/Q2/);
    await q.close();
  });

  test('the shell exiting closes the WebSocket with 4000', async () => {
    const { t } = await open('exit1');
    t.send('exit\n');
    assert.equal(await t.closedP, 4000);
    assert.equal((await request('GET', '/pty/exit1')).json.created, true);
  });
});

// Raw request bytes through the tunnel listener; resolves with the answer.
function raw(head, body = '') {
  return new Promise((resolve, reject) => {
    const s = net.connect(tunnelPort, '127.0.0.1', () => s.write(`${head}Host: ${origin()}\r\nAuthorization: Bearer ${pty.auth_token}\r\nConnection: close\r\n\r\n${body}`));
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (d) => { out += d; });
    s.on('close', () => resolve(out));
    s.on('error', reject);
    s.setTimeout(20000, () => s.destroy(new Error(`no answer to ${head}: ${out}`)));
  });
}

describe('PTY bad input', () => {
  test('invalid session names', async () => {
    for (const n of ['bad.name', 'a%20b', 'x'.repeat(257), 'caf%C3%A9']) {
      const r = await request('GET', `/pty/${n}`);
      assert.equal(r.status, 400, `${n}: ${r.text}`);
      assert.match(r.json.message, /1-256 characters of \[A-Za-z0-9_-\]/);
    }
    assert.equal((await request('GET', `/pty/${'y'.repeat(256)}`)).status, 200);
    assert.equal((await control('bad.name', { action: 'close' })).status, 400);
  });

  test('cols/rows outside 1-1000 or only one of them', async () => {
    for (const q of ['?cols=0&rows=24', '?cols=80&rows=1001', '?cols=80', '?rows=5', '?cols=abc&rows=2', '?cols=-1&rows=5', '?cols=1.5&rows=5']) {
      const r = await request('GET', `/pty/dims${q}`);
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.match(r.json.message, /cols and rows|both cols and rows/);
    }
    assert.equal((await request('GET', '/pty/dims?cols=1000&rows=1')).status, 200);
    for (const b of [{ action: 'resize', cols: 0, rows: 10 }, { action: 'resize', cols: 10 }, { action: 'resize', cols: 1001, rows: 5 }, { action: 'resize', cols: '80', rows: 24 }]) {
      const r = await control('dims', b);
      assert.equal(r.status, 400, JSON.stringify(b));
      assert.match(r.json.message, /resize needs integer cols and rows/);
    }
  });

  test('unknown signals, bad bodies, unknown sessions', async () => {
    await request('GET', '/pty/sig');
    for (const s of ['SIGFOO', 'INT', 'sigint', '']) {
      const r = await control('sig', { action: 'signal', signal: s });
      assert.equal(r.status, 400, s);
      assert.match(r.json.message, /unknown signal name/);
    }
    assert.equal((await control('sig', { action: 'signal' })).status, 400);
    const nb = await control('sig', 'not json');
    assert.equal(nb.status, 400);
    assert.match(nb.json.message, /JSON object/);
    assert.match((await control('sig', { action: 'explode' })).json.message, /action must be/);
    assert.equal((await control('nosuch', { action: 'resize', cols: 5, rows: 5 })).status, 404);
    assert.equal((await request('GET', '/other')).status, 404);
    assert.equal((await request('DELETE', '/pty/sig')).status, 405);
    // No body at all (no Content-Length): answered, not left waiting.
    assert.match(await raw('POST /pty/sig/control HTTP/1.1\r\n'), /^HTTP\/1\.1 400[^]*JSON object/);
    assert.match(await raw('POST /pty/sig/control HTTP/1.1\r\nTransfer-Encoding: chunked\r\n', '5\r\nhello\r\n0\r\n\r\n'),
      /^HTTP\/1\.1 411[^]*Content-Length/);
    const big = await request('POST', '/pty/sig/control', { body: 'x'.repeat(70000) });
    assert.equal(big.status, 413);
  });

  test('wrong or missing token: 401 before the PTY server', async () => {
    const other = await client.devboxes.createPtyTunnel(boxId);
    assert.equal((await request('GET', '/pty/tok', { token: null })).status, 401);
    assert.equal((await request('GET', '/pty/tok', { token: other.auth_token })).status, 401);
    const ws = attach('/pty/tok/attach', { token: 'f'.repeat(48) });
    await assert.rejects(ws.opened, (e) => e.status === 401);
    // Each tunnel works with its own token.
    assert.equal((await request('GET', '/pty/tok', { key: other.tunnel_key, token: other.auth_token })).status, 200);
  });
});

describe('PTY lifecycle', () => {
  test('suspend/resume resets the sessions; ptyd serves again after resume', async () => {
    const box = await client.devboxes.createAndAwaitRunning({ name: 'pty-resume' });
    const saved = pty;
    try {
      pty = await client.devboxes.createPtyTunnel(box.id);
      const first = await open('life');
      first.t.send('export MARK=m$((1+1)); echo OK$((2+2))\n');
      await first.t.waitFor(/OK4/);
      await client.devboxes.suspend(box.id);
      await client.devboxes.awaitSuspended(box.id);
      assert.notEqual(await first.t.closedP, null, 'the attached client is disconnected by the suspend');
      await client.devboxes.resume(box.id);
      await client.devboxes.awaitRunning(box.id);
      const again = await open('life');
      assert.equal(again.view.created, true, 'a resumed devbox has a fresh PTY server');
      again.t.send('echo "[$MARK]"\n');
      await again.t.waitFor(/\[\]/);
      await again.t.close();
    } finally {
      pty = saved;
      await client.devboxes.shutdown(box.id);
    }
  });
});

// A second devboxd with short PTY timers (DEVBOXD_PTY_IDLE_TTL,
// DEVBOXD_PTY_PING_TIMEOUT in its environment).
describe('PTY timers', () => {
  const fast = new Devboxd();
  let saved;
  before(async () => {
    saved = { pty, tunnelPort };
    process.env.DEVBOXD_PTY_IDLE_TTL = '3';
    process.env.DEVBOXD_PTY_PING_TIMEOUT = '4';
    try {
      await fast.start();
    } finally {
      delete process.env.DEVBOXD_PTY_IDLE_TTL;
      delete process.env.DEVBOXD_PTY_PING_TIMEOUT;
    }
    const pid = readFileSync(path.join(fast.stateDir, 'devboxd.pid'), 'utf8');
    tunnelPort = Number(/^tunnel_port (\d+)$/m.exec(pid)[1]);
    const c = fast.client();
    const box = await c.devboxes.createAndAwaitRunning({ name: 'pty-timers' });
    pty = await c.devboxes.createPtyTunnel(box.id);
  });
  after(async () => {
    ({ pty, tunnelPort } = saved);
    await fast.cleanup();
  });

  test('a client that never answers pings is closed with 4001; one that does stays', async () => {
    const c = await request('GET', '/pty/ping');
    assert.equal(c.json.idle_ttl_seconds, 3);
    const url = `ws://${origin()}${c.json.connect_url}`;
    const mute = new WebSocket(url, { lookup: pin, autoPong: false, headers: { authorization: `Bearer ${pty.auth_token}` } });
    const code = await new Promise((resolve, reject) => {
      mute.on('close', resolve);
      mute.on('error', reject);
      setTimeout(() => reject(new Error('no close within 30 s')), 30000);
    });
    assert.equal(code, 4001);
    const { t } = await open('ping');
    const t0 = Date.now();
    while (Date.now() - t0 < 7000) await new Promise((r) => setTimeout(r, 100));
    assert.equal(t.closed, null, 'a client answering pings stays attached past the timeout');
    t.send('echo ALIVE$((1+1))\n');
    await t.waitFor(/ALIVE2/);
    await t.close();
  });

  test('idle TTL: the session survives a short detach, and is replaced after the TTL', async () => {
    const first = await open('ttl');
    first.t.send('export K=v$((3*3)); echo OK$((5+5))\n');
    await first.t.waitFor(/OK10/);
    await first.t.close();
    const soon = await request('GET', '/pty/ttl');
    assert.equal(soon.json.created, false);
    let view = null;
    const t0 = Date.now();
    while (Date.now() - t0 < 20000) {
      await new Promise((r) => setTimeout(r, 500));
      const v = await request('GET', '/pty/ttl');
      if (v.json.created) { view = v.json; break; }
    }
    assert.ok(view, 'the session was not replaced within 20 s of a 3 s idle TTL');
    assert.ok(Date.now() - t0 >= 1500, 'replaced before the TTL');
  });
});
