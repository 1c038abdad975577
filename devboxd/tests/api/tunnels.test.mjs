// Tunnels through the official Runloop SDK: enable_tunnel / remove_tunnel /
// DevboxView.tunnel, and the tunnel listener serving
// http://{port}-{tunnel_key}.localhost:<tunnel port>/ from services running
// inside the devbox (python http.server, a raw upgrade echo server).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Devboxd, devboxdBin, rejectsWith, sdkRequire, waitFor } from './devboxd.mjs';

const engine = new Devboxd();
let client;
let tunnelPort;
let boxId;

function readTunnelPort() {
  const pid = readFileSync(path.join(engine.stateDir, 'devboxd.pid'), 'utf8');
  const m = /^tunnel_port (\d+)$/m.exec(pid);
  assert.ok(m, `no tunnel_port in devboxd.pid:\n${pid}`);
  assert.match(pid, new RegExp(`^tunnel_url_template http://\\{port\\}-\\{tunnel_key\\}\\.localhost:${m[1]}$`, 'm'));
  assert.match(pid, new RegExp(`^tunnel_path_url_template http://127\\.0\\.0\\.1:${m[1]}/tunnel/\\{port\\}-\\{tunnel_key\\}$`, 'm'));
  return Number(m[1]);
}

// The token with its last digit changed (never equal to the original).
const flipLast = (t) => t.slice(0, -1) + (t.endsWith('0') ? '1' : '0');

const tunnelHost = (port, key) => `${port}-${key}.localhost:${tunnelPort}`;

// GET through the tunnel URL. *.localhost is loopback (RFC 6761); the
// lookup is pinned to 127.0.0.1 since glibc does not resolve it by itself.
function tget(port, key, p = '/', { headers = {}, host } = {}) {
  const url = `http://${tunnelHost(port, key)}${p}`;
  return new Promise((resolve, reject) => {
    const req = http.get(url, {
      headers: host ? { ...headers, host } : headers,
      agent: false,
      lookup: (h, opts, cb) => (opts && opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }])
        : cb(null, '127.0.0.1', 4)),
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(body); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, body, json });
      });
    });
    req.setTimeout(20000, () => req.destroy(new Error(`tunnel request ${url} timed out`)));
    req.on('error', reject);
  });
}

// Raw bytes to the tunnel listener; resolves with everything it answered.
function rawTunnel(bytes) {
  return new Promise((resolve, reject) => {
    const s = net.connect(tunnelPort, '127.0.0.1', () => s.write(bytes));
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (d) => { out += d; });
    s.on('end', () => resolve(out));
    s.on('close', () => resolve(out));
    s.on('error', (e) => (e.code === 'ECONNRESET' || e.code === 'EPIPE' ? resolve(out) : reject(e)));
    s.setTimeout(20000, () => s.destroy(new Error('raw tunnel request timed out')));
  });
}

// Like rawTunnel, but ends the connection once `count` answers of the
// file came back (the server keeps the connection open).
function rawTunnelUntil(bytes, count) {
  return new Promise((resolve, reject) => {
    const s = net.connect(tunnelPort, '127.0.0.1', () => s.write(bytes));
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (d) => {
      out += d;
      if ((out.match(/hello through the tunnel/g) ?? []).length >= count) { s.destroy(); resolve(out); }
    });
    s.on('close', () => resolve(out));
    s.on('error', reject);
    s.setTimeout(20000, () => s.destroy(new Error(`raw tunnel: ${count} answers not seen: ${out}`)));
  });
}

const ECHO_PY = `import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9000))
s.listen(16)
def serve(c):
    buf = b""
    while b"\\r\\n\\r\\n" not in buf:
        d = c.recv(4096)
        if not d:
            c.close()
            return
        buf += d
    c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n")
    rest = buf.split(b"\\r\\n\\r\\n", 1)[1]
    if rest:
        c.sendall(rest.upper())
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d.upper())
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

// Upgrade through the tunnel; resolves with the upgraded socket.
function upgrade(key, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: tunnelPort, path: '/ws', agent: false,
      headers: { host: tunnelHost(9000, key), connection: 'Upgrade', upgrade: 'echo', ...headers } });
    req.on('upgrade', (res, socket, head) => resolve({ res, socket, head }));
    req.on('response', (res) => reject(new Error(`no upgrade: HTTP ${res.statusCode}`)));
    req.on('error', reject);
    req.setTimeout(20000, () => req.destroy(new Error('upgrade timed out')));
    req.end();
  });
}

function readN(socket, n, head = Buffer.alloc(0)) {
  return new Promise((resolve, reject) => {
    let got = head;
    const done = () => { socket.off('data', onData); resolve(got); };
    const onData = (d) => { got = Buffer.concat([got, d]); if (got.length >= n) done(); };
    if (got.length >= n) return resolve(got);
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

before(async () => {
  await engine.start();
  tunnelPort = readTunnelPort();
  client = engine.client();
  const b = await client.devboxes.createAndAwaitRunning({ name: 'tunnels' });
  boxId = b.id;
  assert.equal(b.tunnel, null);
  await client.devboxes.writeFileContents(boxId, { file_path: '/tmp/www/hello.txt', contents: 'hello through the tunnel\n' });
  await client.devboxes.writeFileContents(boxId, { file_path: '/tmp/echo.py', contents: ECHO_PY });
  await client.devboxes.executions.executeAsync(boxId,
    { command: 'cd /tmp/www && exec python3 -m http.server 8080 --bind 0.0.0.0 --protocol HTTP/1.1' });
  // Bound to the devbox's loopback only: still reachable (the tunnel connects inside).
  await client.devboxes.executions.executeAsync(boxId,
    { command: 'cd /tmp/www && exec python3 -m http.server 8081 --bind 127.0.0.1' });
  await client.devboxes.executions.executeAsync(boxId, { command: 'exec python3 /tmp/echo.py' });
});
after(async () => { await engine.cleanup(); });

describe('open tunnel', () => {
  let tv;
  test('enable_tunnel returns the TunnelView and the devbox view carries it', async () => {
    const t0 = Date.now();
    tv = await client.devboxes.enableTunnel(boxId, { auth_mode: 'open' });
    assert.match(tv.tunnel_key, /^[a-z0-9]{24}$/);
    assert.equal(tv.auth_mode, 'open');
    assert.equal(tv.auth_token, undefined);
    assert.equal(tv.http_keep_alive, true);
    assert.equal(tv.wake_on_http, false);
    assert.ok(tv.create_time_ms >= t0 - 1000 && tv.create_time_ms <= Date.now() + 1000);
    // Where the tunnel lives: the field beside the SDK's own ones.
    assert.equal(tv.url_template, `http://{port}-{tunnel_key}.localhost:${tunnelPort}`);
    assert.equal(tv.path_url_template, `http://127.0.0.1:${tunnelPort}/tunnel/{port}-{tunnel_key}`);
    const view = await client.devboxes.retrieve(boxId);
    assert.deepEqual(view.tunnel, tv);
    // Same request again: the same (one) tunnel; a different mode is refused.
    const again = await client.devboxes.enableTunnel(boxId, { auth_mode: 'open' });
    assert.equal(again.tunnel_key, tv.tunnel_key);
    await rejectsWith(assert, client.devboxes.enableTunnel(boxId, { auth_mode: 'authenticated' }), 400,
      /already has a tunnel.*remove_tunnel first/);
  });

  test('the tunnel URL serves a python http.server running in the devbox', async () => {
    const r = await waitFor(async () => {
      const x = await tget(8080, tv.tunnel_key, '/hello.txt');
      return x.status === 200 ? x : null;
    }, { timeoutMs: 30000, what: 'http.server through the tunnel' });
    assert.equal(r.body, 'hello through the tunnel\n');
    assert.match(r.headers.server, /SimpleHTTP/);
    // A 404 of the service itself passes through as the service's answer.
    const missing = await tget(8080, tv.tunnel_key, '/nope.txt');
    assert.equal(missing.status, 404);
    assert.match(missing.body, /File not found/);
    // The key is case-insensitive like any host name; the .tunnel.localhost form works too.
    const upper = await tget(8080, tv.tunnel_key, '/hello.txt',
      { host: `8080-${tv.tunnel_key.toUpperCase()}.tunnel.localhost` });
    assert.equal(upper.status, 200);
  });

  test("the SDK's getTunnelUrl assumes the cloud; url_template gives the URL that serves", async () => {
    const { Devbox } = sdkRequire('@runloop/api-client');
    const dbx = Devbox.fromId(client, boxId);
    // The SDK builds https://{port}-{key}.tunnel.<API host>: nothing serves there for devboxd.
    assert.equal(await dbx.getTunnelUrl(8080), `https://8080-${tv.tunnel_key}.tunnel.127.0.0.1`);
    // The workaround docs/backends.md gives: fill the view's url_template.
    const t = await dbx.getTunnel();
    const url = t.url_template.replace('{port}', '8080').replace('{tunnel_key}', t.tunnel_key);
    assert.equal(url, `http://${tunnelHost(8080, tv.tunnel_key)}`);
    const r = await tget(8080, t.tunnel_key, '/hello.txt');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'hello through the tunnel\n');
  });

  test('a service bound to the devbox loopback is reachable, every port of the tunnel', async () => {
    const r = await waitFor(async () => {
      const x = await tget(8081, tv.tunnel_key, '/hello.txt');
      return x.status === 200 ? x : null;
    }, { timeoutMs: 30000, what: 'the 127.0.0.1-bound server' });
    assert.equal(r.body, 'hello through the tunnel\n');
  });

  test('a port with nothing listening is a 502 naming the port', async () => {
    const r = await tget(8099, tv.tunnel_key, '/');
    assert.equal(r.status, 502);
    assert.equal(r.json.code, 'bad_gateway');
    assert.match(r.json.message, /nothing answers on port 8099 inside devbox/);
  });

  test('the tunnel cannot reach services on the host loopback', async () => {
    const secret = http.createServer((req, res) => res.end('HOST-SECRET'));
    await new Promise((r) => secret.listen(0, '127.0.0.1', r));
    try {
      const port = secret.address().port;
      const r = await tget(port, tv.tunnel_key, '/');
      assert.equal(r.status, 502, `the host service answered through the tunnel: ${r.body}`);
      assert.doesNotMatch(r.body, /HOST-SECRET/);
      // Nor is devboxd's own API listener reachable as a devbox port.
      const api = await tget(engine.port, tv.tunnel_key, '/v1/devboxes');
      assert.equal(api.status, 502);
    } finally {
      secret.close();
    }
  });

  test('an upgrade passes and bytes relay both ways (1 MiB round trip)', async () => {
    const { res, socket, head } = await waitFor(() => upgrade(tv.tunnel_key).catch(() => null),
      { timeoutMs: 30000, what: 'the echo server through the tunnel' });
    assert.equal(res.statusCode, 101);
    socket.write('hello');
    assert.equal((await readN(socket, 5, head)).toString(), 'HELLO');
    const big = Buffer.alloc(1 << 20, 'abcdefgh');
    const got = readN(socket, big.length);
    socket.write(big);
    const back = await got;
    assert.equal(back.length, big.length);
    assert.ok(back.equals(Buffer.alloc(1 << 20, 'ABCDEFGH')));
    socket.destroy();
  });

  test('X-Runloop-Host routing is refused for an open tunnel', async () => {
    const r = await tget(8080, tv.tunnel_key, '/hello.txt',
      { headers: { 'x-runloop-host': tunnelHost(8080, tv.tunnel_key) } });
    assert.equal(r.status, 401);
    assert.match(r.json.message, /only allowed for authenticated tunnels/);
  });

  test('remove_tunnel: the URL answers 404 and an upgraded connection is closed', async () => {
    const { socket } = await upgrade(tv.tunnel_key);
    const closed = new Promise((r) => socket.on('close', r));
    socket.on('error', () => {});
    await client.devboxes.removeTunnel(boxId);
    await closed; // bounded by the test timeout; devboxd checks every 250 ms
    const view = await client.devboxes.retrieve(boxId);
    assert.equal(view.tunnel, null);
    const r = await tget(8080, tv.tunnel_key, '/hello.txt');
    assert.equal(r.status, 404);
    assert.equal(r.json.code, 'not_found');
    assert.match(r.json.message, /no tunnel has key/);
    // Removing again is harmless.
    await client.devboxes.removeTunnel(boxId);
  });
});

describe('authenticated tunnel', () => {
  let tv;
  test('enable over HTTP/1.1 too; the view carries the token', async () => {
    tv = await engine.client({ http2: false }).devboxes.enableTunnel(boxId, { auth_mode: 'authenticated' });
    assert.equal(tv.auth_mode, 'authenticated');
    assert.match(tv.auth_token, /^[0-9a-f]{48}$/);
    assert.equal((await client.devboxes.retrieve(boxId)).tunnel.auth_token, tv.auth_token);
  });

  test('right token serves; missing and wrong tokens are 401 with what to send', async () => {
    const ok = await waitFor(async () => {
      const x = await tget(8080, tv.tunnel_key, '/hello.txt',
        { headers: { 'x-runloop-tunnel-authorization': `Bearer ${tv.auth_token}` } });
      return x.status === 200 ? x : null;
    }, { timeoutMs: 30000, what: 'authenticated request' });
    assert.equal(ok.body, 'hello through the tunnel\n');
    const viaAuth = await tget(8080, tv.tunnel_key, '/hello.txt',
      { headers: { authorization: `Bearer ${tv.auth_token}` } });
    assert.equal(viaAuth.status, 200);

    const none = await tget(8080, tv.tunnel_key, '/hello.txt');
    assert.equal(none.status, 401);
    assert.equal(none.json.code, 'unauthorized');
    assert.match(none.json.message, /X-Runloop-Tunnel-Authorization: Bearer <auth_token>/);
    const wrong = await tget(8080, tv.tunnel_key, '/hello.txt',
      { headers: { 'x-runloop-tunnel-authorization': `Bearer ${flipLast(tv.auth_token)}` } });
    assert.equal(wrong.status, 401);
    assert.match(wrong.json.message, /wrong tunnel token/);
    assert.doesNotMatch(wrong.body, new RegExp(tv.auth_token));
    const apiKey = await tget(8080, tv.tunnel_key, '/hello.txt',
      { headers: { authorization: `Bearer ${engine.key}` } });
    assert.equal(apiKey.status, 401, 'the API key is not a tunnel token');
  });

  test('X-Runloop-Host routes an authenticated request sent to another host name', async () => {
    const r = await tget(8080, tv.tunnel_key, '/hello.txt', {
      host: 'example.invalid',
      headers: { 'x-runloop-host': tunnelHost(8080, tv.tunnel_key),
        'x-runloop-tunnel-authorization': `Bearer ${tv.auth_token}` } });
    assert.equal(r.status, 200);
  });

  test('a later request on the same connection is checked too', async () => {
    const head = (auth) => `GET /hello.txt HTTP/1.1\r\nHost: ${tunnelHost(8080, tv.tunnel_key)}\r\n` +
      `${auth ? `X-Runloop-Tunnel-Authorization: Bearer ${tv.auth_token}\r\n` : ''}\r\n`;
    // The server keeps HTTP/1.1 connections open: two good requests on one
    // connection get two answers, a token-less second one never reaches it.
    const both = await rawTunnelUntil(head(true) + head(true) + 'GET /x HTTP/1.1\r\n', 2);
    assert.equal((both.match(/hello through the tunnel/g) ?? []).length, 2, both);
    // First request answered, then a token-less one on the same connection:
    // devboxd closes the connection without forwarding it.
    const s = net.connect(tunnelPort, '127.0.0.1');
    let out = '';
    s.setEncoding('latin1');
    const closed = new Promise((resolve) => s.on('close', resolve));
    s.on('error', () => {});
    s.on('data', (d) => { out += d; });
    s.write(head(true));
    await waitFor(() => /hello through the tunnel/.test(out), { timeoutMs: 20000, what: 'first answer' });
    s.write(head(false));
    await closed;
    assert.equal((out.match(/hello through the tunnel/g) ?? []).length, 1, out);
    // In one write, a bad request after a good one: nothing is forwarded.
    const pipelined = await rawTunnel(head(true) + head(false));
    assert.equal((pipelined.match(/hello through the tunnel/g) ?? []).length, 0, pipelined);
  });
});

// The path form: http://127.0.0.1:P/tunnel/{port}-{key}/... needs no
// *.localhost resolution, so stock clients open it (glibc, and so Node's
// fetch and Python, do not resolve *.localhost).
const fill = (tmpl, port, key) => tmpl.replace('{port}', String(port)).replace('{tunnel_key}', key);

function python(code, ...args) {
  const r = spawnSync('python3', ['-c', code, ...args], { encoding: 'utf8', timeout: 60000 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

async function execIn(id, command) {
  const r = await client.devboxes.executeAndAwaitCompletion(id, { command }, { timeout: 120000 });
  return { exit: r.exit_status, out: r.stdout ?? '', err: r.stderr ?? '' };
}

describe('path form (no special name resolution)', () => {
  let tv;
  let base; // http://127.0.0.1:P/tunnel/8080-key
  before(async () => {
    await client.devboxes.removeTunnel(boxId);
    tv = await client.devboxes.enableTunnel(boxId, { auth_mode: 'open' });
    base = fill(tv.path_url_template, 8080, tv.tunnel_key);
    await waitFor(async () => (await fetch(`${base}/hello.txt`).catch(() => null))?.status === 200,
      { timeoutMs: 30000, what: 'http.server through the path URL' });
  });

  test('Node fetch opens the URL the API returns; alternating tunnels ports on one origin', async () => {
    assert.equal(base, `http://127.0.0.1:${tunnelPort}/tunnel/8080-${tv.tunnel_key}`);
    for (let i = 0; i < 3; i++) {
      // fetch pools connections per origin: every URL here shares one, so
      // devboxd must not let a kept-alive connection carry another tunnel port.
      for (const port of [8080, 8081]) {
        const r = await fetch(`${fill(tv.path_url_template, port, tv.tunnel_key)}/hello.txt`);
        assert.equal(r.status, 200);
        assert.equal(await r.text(), 'hello through the tunnel\n');
      }
    }
    // The prefix alone is the service's "/" (a directory listing), with its query.
    const root = await fetch(`${base}?x=1`);
    assert.equal(root.status, 200);
    assert.match(await root.text(), /hello\.txt/);
    const missing = await fetch(`${base}/nope.txt`);
    assert.equal(missing.status, 404);
  });

  test('Python urllib.request opens it too (and fails on the *.localhost form)', () => {
    const get = 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode(), end="")';
    const ok = python(get, `${base}/hello.txt`);
    assert.equal(ok.status, 0, ok.err);
    assert.equal(ok.out, 'hello through the tunnel\n');
    // What the path form is for: glibc does not resolve *.localhost.
    const sub = python(get, `${fill(tv.url_template, 8080, tv.tunnel_key)}/hello.txt`);
    if (sub.status === 0) console.log('# note: this machine resolves *.localhost');
    else assert.match(sub.err, /URLError|Name or service not known|not known/);
  });

  test('an upgrade passes through the path form', async () => {
    const { res, socket, head } = await new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: tunnelPort, path: `/tunnel/9000-${tv.tunnel_key}/ws`,
        agent: false, headers: { connection: 'Upgrade', upgrade: 'echo' } });
      req.on('upgrade', (r, sock, h) => resolve({ res: r, socket: sock, head: h }));
      req.on('response', (r) => reject(new Error(`no upgrade: HTTP ${r.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
    assert.equal(res.statusCode, 101);
    socket.write('path');
    assert.equal((await readN(socket, 4, head)).toString(), 'PATH');
    socket.destroy();
  });

  test('the request reaching the service: prefix cut, connection: close, body intact', async () => {
    // A raw look at what the service receives, through a one-shot echo of the request.
    await client.devboxes.writeFileContents(boxId, { file_path: '/tmp/dump.py', contents: `import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9100))
s.listen(4)
while True:
    c, _ = s.accept()
    buf = b""
    while not buf.endswith(b"body!"):
        d = c.recv(4096)
        if not d:
            break
        buf += d
    c.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-length: %d\\r\\nconnection: close\\r\\n\\r\\n" % len(buf) + buf)
    c.close()
` });
    await client.devboxes.executions.executeAsync(boxId, { command: 'exec python3 /tmp/dump.py' });
    const req = `POST /tunnel/9100-${tv.tunnel_key.toUpperCase()}/a/b?q=1 HTTP/1.1\r\nHost: localhost:${tunnelPort}\r\n` +
      'Connection: keep-alive\r\nX-Other: 1\r\ncontent-length: 5\r\n\r\nbody!';
    const out = await waitFor(async () => {
      const x = await rawTunnel(req);
      return /^HTTP\/1\.1 200 /.test(x) ? x : null;
    }, { timeoutMs: 30000, what: 'the dump server' });
    const seen = out.split('\r\n\r\n').slice(1).join('\r\n\r\n');
    assert.match(seen, /^POST \/a\/b\?q=1 HTTP\/1\.1\r\n/);
    assert.match(seen, /\r\nconnection: close\r\n/);
    assert.doesNotMatch(seen, /keep-alive/i);
    assert.match(seen, /\r\nX-Other: 1\r\n/);
    assert.match(seen, /\r\n\r\nbody!$/);
    // Bare LF line ends (http_parser accepts them): still one request, closed.
    const lf = await rawTunnel(`POST /tunnel/9100-${tv.tunnel_key}/lf HTTP/1.1\nHost: 127.0.0.1\n` +
      'Connection: keep-alive\ncontent-length: 5\n\nbody!');
    const lfSeen = lf.split('\r\n\r\n').slice(1).join('\r\n\r\n');
    assert.match(lfSeen, /^POST \/lf HTTP\/1\.1\n/);
    assert.match(lfSeen, /\nconnection: close\r\n\nbody!$/);
    assert.doesNotMatch(lfSeen, /keep-alive/i);
  });

  test('path routing needs a loopback Host (no DNS rebinding); a bad label is a 400', async () => {
    const foreign = await rawTunnel(`GET /tunnel/8080-${tv.tunnel_key}/hello.txt HTTP/1.1\r\nHost: evil.example\r\n\r\n`);
    assert.match(foreign, /^HTTP\/1.1 400 /);
    assert.match(foreign, /\/tunnel\/\{port\}-\{tunnel_key\}/);
    assert.doesNotMatch(foreign, /hello through/);
    for (const label of ['0-abc', '70000-abc', '8080-', '8080-a_b', '8080']) {
      const r = await rawTunnel(`GET /tunnel/${label}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      assert.match(r, /^HTTP\/1.1 400 /, label);
    }
    const unknown = await rawTunnel(`GET /tunnel/8080-${'z'.repeat(24)}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    assert.match(unknown, /^HTTP\/1.1 404 /);
  });

  test('HTTP/2 with prior knowledge (the SDK transport): forwarded per request, both forms', async () => {
    const session = http2.connect(`http://127.0.0.1:${tunnelPort}`);
    session.on('error', () => {});
    const h2 = (headers, body) => new Promise((resolve, reject) => {
      const req = session.request(headers);
      let text = '';
      let head = null;
      req.setEncoding('utf8');
      req.on('response', (h) => { head = h; });
      req.on('data', (d) => { text += d; });
      req.on('end', () => resolve({ status: head[':status'], headers: head, text }));
      req.on('error', reject);
      req.end(body);
    });
    try {
      // Several streams at once on the one connection, path and host forms.
      const [a, b, c, d] = await Promise.all([
        h2({ ':path': `/tunnel/8080-${tv.tunnel_key}/hello.txt` }),
        h2({ ':path': `/tunnel/8081-${tv.tunnel_key}/hello.txt` }),
        h2({ ':path': '/hello.txt', ':authority': tunnelHost(8080, tv.tunnel_key) }),
        h2({ ':path': `/tunnel/8080-${tv.tunnel_key}/nope.txt` }),
      ]);
      for (const r of [a, b, c]) {
        assert.equal(r.status, 200);
        assert.equal(r.text, 'hello through the tunnel\n');
        assert.match(r.headers['content-type'], /text\/plain/);
      }
      assert.equal(d.status, 404);
      assert.match(d.text, /File not found/);
      // HEAD: the head alone.
      const head = await h2({ ':method': 'HEAD', ':path': `/tunnel/8080-${tv.tunnel_key}/hello.txt` });
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      // The listener's own answers: unknown key, nothing listening, no route.
      assert.equal((await h2({ ':path': `/tunnel/8080-${'z'.repeat(24)}/` })).status, 404);
      const none = await h2({ ':path': `/tunnel/8099-${tv.tunnel_key}/` });
      assert.equal(none.status, 502);
      assert.match(none.text, /nothing answers on port 8099/);
      assert.equal((await h2({ ':path': '/v1/devboxes' })).status, 400);
      // A body reaches the service as an HTTP/1.1 request with its length.
      const post = await waitFor(async () => {
        const x = await h2({ ':method': 'POST', ':path': `/tunnel/9100-${tv.tunnel_key}/p`, 'x-other': '2' }, 'body!');
        return x.status === 200 ? x : null;
      }, { timeoutMs: 30000, what: 'the dump server over HTTP/2' });
      assert.match(post.text, /^POST \/p HTTP\/1\.1\r\n/);
      assert.match(post.text, /\r\ncontent-length: 5\r\n/);
      assert.match(post.text, /\r\nconnection: close\r\n\r\nbody!$/);
      assert.match(post.text, /\r\nx-other: 2\r\n/);
    } finally {
      session.close();
    }
  });

  test("a page's absolute links: redirected under the prefix its same-origin Referer names", async () => {
    const origin = `127.0.0.1:${tunnelPort}`;
    const ask = (referer, target = '/hello.txt?a=1') => rawTunnel(`GET ${target} HTTP/1.1\r\nHost: ${origin}\r\n` +
      `Referer: ${referer}\r\n\r\n`);
    const r = await ask(`http://${origin}/tunnel/8080-${tv.tunnel_key}/index.html`);
    assert.match(r, /^HTTP\/1.1 307 /);
    assert.match(r, new RegExp(`\r\nlocation: /tunnel/8080-${tv.tunnel_key}/hello\\.txt\\?a=1\r\n`));
    // fetch follows it like a browser does.
    const f = await fetch(`http://${origin}/hello.txt`, { headers: { referer: `http://${origin}/tunnel/8080-${tv.tunnel_key}/` } });
    assert.equal(f.status, 200);
    assert.equal(await f.text(), 'hello through the tunnel\n');
    // Another origin's Referer, or one naming no tunnel: the plain 400.
    assert.match(await ask(`http://evil.example/tunnel/8080-${tv.tunnel_key}/`), /^HTTP\/1.1 400 /);
    assert.match(await ask(`http://127.0.0.1:1/tunnel/8080-${tv.tunnel_key}/`), /^HTTP\/1.1 400 /);
    assert.match(await ask(`http://${origin}/other/`), /^HTTP\/1.1 400 /);
  });

  test('authenticated: the path form needs the token exactly as the Host form', async () => {
    await client.devboxes.removeTunnel(boxId);
    const at = await client.devboxes.enableTunnel(boxId, { auth_mode: 'authenticated' });
    const url = `${fill(at.path_url_template, 8080, at.tunnel_key)}/hello.txt`;
    const none = await fetch(url);
    assert.equal(none.status, 401);
    const wrong = await fetch(url, { headers: { 'x-runloop-tunnel-authorization': `Bearer ${flipLast(at.auth_token)}` } });
    assert.equal(wrong.status, 401);
    const ok = await waitFor(async () => {
      const x = await fetch(url, { headers: { authorization: `Bearer ${at.auth_token}` } });
      return x.status === 200 ? x : null;
    }, { timeoutMs: 30000, what: 'authenticated path request' });
    assert.equal(await ok.text(), 'hello through the tunnel\n');
    await client.devboxes.removeTunnel(boxId);
    tv = await client.devboxes.enableTunnel(boxId, { auth_mode: 'open' });
  });

  describe('from inside another devbox', () => {
    let other;
    let secret;
    before(async () => {
      other = (await client.devboxes.createAndAwaitRunning({ name: 'tunnel-client' })).id;
      secret = http.createServer((req, res) => res.end('HOST-SECRET'));
      await new Promise((r) => secret.listen(0, '127.0.0.1', r));
    });
    after(async () => {
      secret?.close();
      if (other) await client.devboxes.shutdown(other).catch(() => {});
    });

    test('curl and python in a devbox open the URL the API returns (and the *.localhost form with curl)', async () => {
      const url = `${fill(tv.path_url_template, 8080, tv.tunnel_key)}/hello.txt`;
      const c = await execIn(other, `curl -sS --max-time 30 '${url}'`);
      assert.equal(c.exit, 0, c.err);
      assert.equal(c.out, 'hello through the tunnel\n');
      const py = await execIn(other, `python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode(), end="")' '${url}'`);
      assert.equal(py.exit, 0, py.err);
      assert.equal(py.out, 'hello through the tunnel\n');
      const sub = await execIn(other, `curl -sS --max-time 30 '${fill(tv.url_template, 8080, tv.tunnel_key)}/hello.txt'`);
      assert.equal(sub.exit, 0, sub.err);
      assert.equal(sub.out, 'hello through the tunnel\n');
    });

    test('one devbox holds at most 128 connections to the tunnel listener', async () => {
      await client.devboxes.writeFileContents(other, { file_path: '/tmp/flood.py', contents: `import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(128)]
def ask():
    # A refusal comes at once, before any request: read first, so the
    # request bytes never meet a closed socket (a reset would lose the answer).
    s = socket.create_connection(("127.0.0.1", port))
    out = b""
    try:
        s.settimeout(1)
        try:
            out = s.recv(4096)
        except socket.timeout:
            s.settimeout(20)
            s.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
        while True:
            d = s.recv(4096)
            if not d:
                break
            out += d
    except OSError:
        pass
    s.close()
    return out.decode("latin1")
deadline = time.time() + 60
while True:
    r = ask()
    if r.startswith("HTTP/1.1 503 "):
        break
    if time.time() > deadline:
        print("no 503:", r); sys.exit(1)
    time.sleep(0.2)
print(r.split("\\r\\n\\r\\n", 1)[1])
for s in held:
    s.close()
while True:
    r = ask()
    if r.startswith("HTTP/1.1 400 "):
        break
    if time.time() > deadline:
        print("still refused:", r); sys.exit(1)
    time.sleep(0.2)
print("released")
` });
      const host = fetch(`${fill(tv.path_url_template, 8080, tv.tunnel_key)}/hello.txt`);
      const r = await execIn(other, `python3 /tmp/flood.py ${tunnelPort}`);
      assert.equal(r.exit, 0, r.out + r.err);
      assert.match(r.out, /this devbox has 128 connections open/);
      assert.match(r.out, /released/);
      // The host's own requests were not refused meanwhile.
      assert.equal((await host).status, 200);
      const after = await fetch(`${fill(tv.path_url_template, 8080, tv.tunnel_key)}/hello.txt`);
      assert.equal(after.status, 200);
    });

    test('isolation: only the tunnel listener is reachable, never host loopback services', async () => {
      const hostPort = secret.address().port;
      const probes = [
        `http://127.0.0.1:${hostPort}/`, // a host service on loopback
        `http://127.0.0.1:${engine.port}/v1/devboxes`, // devboxd's API
        `http://10.0.2.2:${hostPort}/`, // slirp's gateway to the host
        `http://10.0.2.2:${engine.port}/v1/devboxes`,
        `http://10.0.2.2:${tunnelPort}/tunnel/8080-${tv.tunnel_key}/hello.txt`,
      ];
      for (const u of probes) {
        const r = await execIn(other, `curl -sS --max-time 5 -o /dev/null -w '%{http_code}' '${u}'`);
        assert.notEqual(r.exit, 0, `${u} answered from inside a devbox: ${r.out}`);
        assert.doesNotMatch(r.out, /HOST-SECRET|[1-5]\d\d/);
      }
      // The tunnel listener inside serves tunnels only: anything else is its 400.
      const r = await execIn(other, `curl -sS --max-time 10 'http://127.0.0.1:${tunnelPort}/v1/devboxes'`);
      assert.match(r.out, /"code":"bad_request"/);
    });
  });
});

describe('PTY tunnel (create_pty_tunnel)', () => {
  // The listener's own answers; anything else came from inside the devbox
  // (the PTY server on port 13, or the relay's 502/503 when there is none).
  const listenerVerdict = /tunnel token|no tunnel has key|serves port 13 only|tunnel listener/;
  const reachedDevbox = (r) => {
    assert.notEqual(r.status, 401, r.body);
    assert.doesNotMatch(r.body, listenerVerdict);
  };

  test('fresh key and token per call; port 13 only; the token is checked before the devbox', async () => {
    const a = await client.devboxes.createPtyTunnel(boxId);
    const b = await client.devboxes.createPtyTunnel(boxId);
    assert.equal(a.url_template, `http://{port}-{tunnel_key}.localhost:${tunnelPort}`);
    assert.match(a.tunnel_key, /^[a-z0-9]{24}$/);
    assert.match(a.auth_token, /^[0-9a-f]{48}$/);
    assert.notEqual(a.tunnel_key, b.tunnel_key);
    assert.notEqual(a.auth_token, b.auth_token);
    // It is not the devbox's tunnel.
    assert.notEqual((await client.devboxes.retrieve(boxId)).tunnel?.tunnel_key, a.tunnel_key);
    const none = await tget(13, a.tunnel_key, '/pty/s1?cols=80&rows=24');
    assert.equal(none.status, 401);
    assert.match(none.json.message, /auth_token create_pty_tunnel returned/);
    const wrong = await tget(13, a.tunnel_key, '/pty/s1', { headers: { authorization: `Bearer ${b.auth_token}` } });
    assert.equal(wrong.status, 401);
    assert.match(wrong.json.message, /wrong tunnel token/);
    const wrongQuery = await tget(13, a.tunnel_key, `/pty/s1?token=${flipLast(a.auth_token)}`);
    assert.equal(wrongQuery.status, 401);
    const otherPort = await tget(8080, a.tunnel_key, '/hello.txt', { headers: { authorization: `Bearer ${a.auth_token}` } });
    assert.equal(otherPort.status, 404);
    assert.match(otherPort.json.message, /serves port 13 only/);
    // Right token (either header, or ?token= as rl-cli sends it): through to the devbox.
    reachedDevbox(await tget(13, a.tunnel_key, '/pty/s1?cols=80&rows=24', { headers: { authorization: `Bearer ${a.auth_token}` } }));
    reachedDevbox(await tget(13, a.tunnel_key, `/pty/s1?cols=80&rows=24&token=${a.auth_token}`));
    reachedDevbox(await tget(13, b.tunnel_key, '/pty/s1', { headers: { 'x-runloop-tunnel-authorization': `Bearer ${b.auth_token}` } }));
  });

  test('the 16 most recent are kept; suspend/resume keeps them; shutdown ends them', async () => {
    const box = await client.devboxes.createAndAwaitRunning({ name: 'pty-tunnel' });
    const keys = [];
    for (let i = 0; i < 17; i++) keys.push(await client.devboxes.createPtyTunnel(box.id));
    const auth = (t) => ({ headers: { authorization: `Bearer ${t.auth_token}` } });
    const oldest = await tget(13, keys[0].tunnel_key, '/pty/x', auth(keys[0]));
    assert.equal(oldest.status, 404, 'the 17th PTY tunnel pushed the first out');
    reachedDevbox(await tget(13, keys[1].tunnel_key, '/pty/x', auth(keys[1])));
    const t = keys[16];
    await client.devboxes.suspend(box.id);
    await client.devboxes.awaitSuspended(box.id);
    await rejectsWith(assert, client.devboxes.createPtyTunnel(box.id), 400, /needs a running devbox \(resume it first\)/);
    const susp = await tget(13, t.tunnel_key, '/pty/x', auth(t));
    assert.equal(susp.status, 503);
    assert.match(susp.json.message, /is suspended: resume it/);
    await client.devboxes.resume(box.id);
    await client.devboxes.awaitRunning(box.id);
    reachedDevbox(await tget(13, t.tunnel_key, '/pty/x', auth(t)));
    await client.devboxes.shutdown(box.id);
    const gone = await tget(13, t.tunnel_key, '/pty/x', auth(t));
    assert.equal(gone.status, 404);
    assert.match(gone.json.message, /no tunnel has key/);
    await rejectsWith(assert, client.devboxes.createPtyTunnel(box.id), 400, /is shutdown/);
  });
});

describe('half-close', () => {
  test('a client that half-closes after its request still gets the whole answer', async () => {
    const tv = (await client.devboxes.retrieve(boxId)).tunnel;
    const out = await new Promise((resolve, reject) => {
      const sock = net.connect(tunnelPort, '127.0.0.1', () => sock.end(
        `GET /hello.txt HTTP/1.1\r\nHost: ${tunnelHost(8080, tv.tunnel_key)}\r\n` +
        `X-Runloop-Tunnel-Authorization: Bearer ${tv.auth_token}\r\n\r\n`));
      let got = '';
      sock.setEncoding('latin1');
      sock.on('data', (d) => { got += d; });
      sock.on('close', () => resolve(got));
      sock.on('error', reject);
      sock.setTimeout(20000, () => sock.destroy(new Error(`no close after half-close: ${got}`)));
    });
    assert.match(out, /^HTTP\/1\.[01] 200 /);
    assert.match(out, /hello through the tunnel\n$/);
  });
});

describe('tunnel listener bad input', () => {
  test('no Host, a foreign Host, non-HTTP bytes and an oversized head', async () => {
    const noHost = await rawTunnel('GET / HTTP/1.0\r\n\r\n');
    assert.match(noHost, /^HTTP\/1.1 400 /);
    assert.match(noHost, /\{port\}-\{tunnel_key\}\.localhost/);
    const foreign = await rawTunnel('GET / HTTP/1.1\r\nHost: example.com\r\n\r\n');
    assert.match(foreign, /^HTTP\/1.1 400 /);
    const badPort = await rawTunnel('GET / HTTP/1.1\r\nHost: 70000-abc.localhost\r\n\r\n');
    assert.match(badPort, /^HTTP\/1.1 400 /);
    const twoHosts = await rawTunnel('GET / HTTP/1.1\r\nHost: 8080-abc.localhost\r\nHost: 8081-abc.localhost\r\n\r\n');
    assert.match(twoHosts, /^HTTP\/1.1 400 /);
    const junk = await rawTunnel('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n');
    assert.match(junk, /^HTTP\/1.1 400 /);
    assert.match(junk, /not an HTTP\/1.x request/);
    const huge = await rawTunnel(`GET / HTTP/1.1\r\nHost: 8080-abc.localhost\r\nX-Big: ${'a'.repeat(70000)}\r\n\r\n`);
    assert.match(huge, /^HTTP\/1.1 (431|400) /);
  });

  test('--tunnel-listen: loopback only unless allowed; malformed values named', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'devboxd-tunnel-cli-'));
    try {
      for (const [arg, re] of [
        ['0.0.0.0:0', /--tunnel-listen '0\.0\.0\.0:0' is not a loopback address/],
        ['127.0.0.1', /--tunnel-listen '127\.0\.0\.1': expected HOST:PORT/],
        ['127.0.0.1:http', /expected HOST:PORT/],
        ['no.such.host.invalid:0', /--tunnel-listen 'no\.such\.host\.invalid:0'/],
      ]) {
        const r = spawnSync(devboxdBin, ['--state-dir', dir, '--listen', '127.0.0.1:0', '--tunnel-listen', arg],
          { encoding: 'utf8', timeout: 30000 });
        assert.notEqual(r.status, 0, `devboxd accepted --tunnel-listen ${arg}`);
        assert.match(r.stderr, re);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('every API answer names the tunnel URL template in a header (401s do not)', async () => {
    const want = `http://{port}-{tunnel_key}.localhost:${tunnelPort}`;
    for (const [m, p] of [['GET', '/v1/devboxes?limit=1'], ['GET', `/v1/devboxes/${boxId}`],
      ['GET', '/v1/devboxes/dbx_nope'], ['DELETE', '/v1/devboxes']]) {
      const r = await engine.raw(m, p);
      assert.equal(r.headers.get('x-devboxd-tunnel-url-template'), want, `${m} ${p} (${r.status})`);
    }
    const anon = await engine.raw('GET', '/v1/devboxes', { auth: false });
    assert.equal(anon.status, 401);
    assert.equal(anon.headers.get('x-devboxd-tunnel-url-template'), null);
  });

  test('--tunnel-url-template: bad values named; a good one is advertised and its domain routed', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'devboxd-tunnel-tmpl-'));
    try {
      for (const arg of ['ftp://{port}-{tunnel_key}.x.test', 'http://{tunnel_key}-{port}.x.test',
        'http://{port}-{tunnel_key}.x.test/path', 'http://{port}-{tunnel_key}.', 'http://{port}-{tunnel_key}.x.test:99999',
        'http://{port}-{tunnel_key}.x_y.test', `http://{port}-{tunnel_key}.${'a'.repeat(600)}`]) {
        const r = spawnSync(devboxdBin, ['--state-dir', dir, '--tunnel-url-template', arg],
          { encoding: 'utf8', timeout: 30000 });
        assert.equal(r.status, 2, `devboxd accepted --tunnel-url-template ${arg}: ${r.stderr}`);
        assert.match(r.stderr, /--tunnel-url-template .*(must look like http:\/\/\{port\}-\{tunnel_key\}\.DOMAIN|longer than 512)/);
      }
      const tmpl = 'https://{port}-{tunnel_key}.Tunnels.Example.test';
      const other = new Devboxd({ stateDir: dir, extraArgs: ['--tunnel-url-template', tmpl] });
      await other.start();
      try {
        const r = await other.raw('GET', '/v1/devboxes');
        assert.equal(r.headers.get('x-devboxd-tunnel-url-template'), tmpl);
        assert.match(readFileSync(path.join(dir, 'devboxd.pid'), 'utf8'), /^tunnel_url_template https:\/\/\{port\}-\{tunnel_key\}\.Tunnels\.Example\.test$/m);
        const tport = Number(/^tunnel_port (\d+)$/m.exec(readFileSync(path.join(dir, 'devboxd.pid'), 'utf8'))[1]);
        const ask = (host) => new Promise((resolve, reject) => {
          const s = net.connect(tport, '127.0.0.1', () => s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`));
          let out = '';
          s.setEncoding('latin1');
          s.on('data', (d) => { out += d; });
          s.on('close', () => resolve(out));
          s.on('error', (e) => (e.code === 'ECONNRESET' ? resolve(out) : reject(e)));
          s.setTimeout(20000, () => s.destroy(new Error('tunnel listener did not answer')));
        });
        // Its domain is a tunnel host name (an unknown key: 404), others are not (400).
        assert.match(await ask('8080-abc.tunnels.example.test'), /^HTTP\/1.1 404 [^]*no tunnel has key/);
        assert.match(await ask('8080-abc.localhost'), /^HTTP\/1.1 404 /);
        assert.match(await ask('8080-abc.example.test'), /^HTTP\/1.1 400 /);
      } finally {
        await other.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('enable_tunnel body validation names the field', async () => {
    await rejectsWith(assert, client.devboxes.enableTunnel(boxId, { auth_mode: 'public' }), 400,
      /auth_mode "public" is not valid; use "open" or "authenticated"/);
    await rejectsWith(assert, client.devboxes.enableTunnel(boxId, { auth_mode: 'open', port: 8080 }), 400,
      /unknown field 'port'/);
    await rejectsWith(assert, client.devboxes.enableTunnel(boxId, { wake_on_http: 'yes' }), 400,
      /wake_on_http/);
    await rejectsWith(assert, client.devboxes.enableTunnel('dbx_nope', { auth_mode: 'open' }), 404,
      /not found/);
    await rejectsWith(assert, client.devboxes.create({ tunnel: { auth_mode: 'public' } }), 400,
      /tunnel\.auth_mode "public" is not valid/);
  });
});

describe('lifecycle', () => {
  const entrypoint = 'mkdir -p /tmp/w && echo up > /tmp/w/up.txt && cd /tmp/w && exec python3 -m http.server 8080 --bind 0.0.0.0';

  test('create-time tunnel; suspend keeps it (503 while suspended); resume serves again', async () => {
    const b = await client.devboxes.createAndAwaitRunning({ entrypoint, tunnel: { auth_mode: 'open' } });
    assert.match(b.tunnel.tunnel_key, /^[a-z0-9]{24}$/);
    const key = b.tunnel.tunnel_key;
    await waitFor(async () => (await tget(8080, key, '/up.txt')).status === 200,
      { timeoutMs: 30000, what: 'entrypoint server' });
    await client.devboxes.suspend(b.id);
    const s = await client.devboxes.awaitSuspended(b.id);
    assert.equal(s.tunnel.tunnel_key, key, 'the tunnel survives suspend');
    const r = await tget(8080, key, '/up.txt');
    assert.equal(r.status, 503);
    assert.match(r.json.message, /is suspended: resume it/);
    assert.equal((await client.devboxes.retrieve(b.id)).status, 'suspended', 'no wake without wake_on_http');
    await client.devboxes.resume(b.id);
    await client.devboxes.awaitRunning(b.id);
    const back = await waitFor(async () => {
      const x = await tget(8080, key, '/up.txt');
      return x.status === 200 ? x : null;
    }, { timeoutMs: 30000, what: 'server after resume' });
    assert.equal(back.body, 'up\n');
    await client.devboxes.shutdown(b.id);
  });

  test('wake_on_http: a request to a suspended devbox answers 503 + Retry-After and resumes it', async () => {
    const b = await client.devboxes.createAndAwaitRunning({ entrypoint,
      tunnel: { auth_mode: 'open', wake_on_http: true } });
    const key = b.tunnel.tunnel_key;
    assert.equal(b.tunnel.wake_on_http, true);
    await client.devboxes.suspend(b.id);
    await client.devboxes.awaitSuspended(b.id);
    const r = await tget(8080, key, '/up.txt');
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '5');
    assert.match(r.json.message, /resuming \(wake on HTTP\)/);
    await client.devboxes.awaitRunning(b.id);
    await waitFor(async () => (await tget(8080, key, '/up.txt')).status === 200,
      { timeoutMs: 30000, what: 'server after wake' });
    await client.devboxes.shutdown(b.id);
  });

  test('shutdown removes the tunnel: view null, URL 404, enable refused', async () => {
    const b = await client.devboxes.createAndAwaitRunning({ entrypoint });
    const tv = await client.devboxes.enableTunnel(b.id, { auth_mode: 'authenticated' });
    await client.devboxes.shutdown(b.id);
    const v = await client.devboxes.retrieve(b.id);
    assert.equal(v.status, 'shutdown');
    assert.equal(v.tunnel, null);
    const r = await tget(8080, tv.tunnel_key, '/up.txt',
      { headers: { 'x-runloop-tunnel-authorization': `Bearer ${tv.auth_token}` } });
    assert.equal(r.status, 404);
    await rejectsWith(assert, client.devboxes.enableTunnel(b.id, { auth_mode: 'open' }), 400,
      /is shutdown; a tunnel needs a live devbox/);
  });

  test('the tunnel is kept in the record across a devboxd restart', async () => {
    const b = await client.devboxes.createAndAwaitRunning({ entrypoint });
    const tv = await client.devboxes.enableTunnel(b.id, { auth_mode: 'authenticated' });
    await engine.stop();
    await engine.start();
    tunnelPort = readTunnelPort();
    client = engine.client();
    const v = await client.devboxes.awaitRunning(b.id);
    // The same tunnel; its URL templates name the new listener's port.
    assert.deepEqual(v.tunnel, { ...tv, url_template: `http://{port}-{tunnel_key}.localhost:${tunnelPort}`,
      path_url_template: `http://127.0.0.1:${tunnelPort}/tunnel/{port}-{tunnel_key}` });
    const r = await waitFor(async () => {
      const x = await tget(8080, tv.tunnel_key, '/up.txt',
        { headers: { 'x-runloop-tunnel-authorization': `Bearer ${tv.auth_token}` } });
      return x.status === 200 ? x : null;
    }, { timeoutMs: 30000, what: 'server after restart' });
    assert.equal(r.body, 'up\n');
    // A devbox booted again after the restart reaches the new port inside too.
    const inside = await execIn(b.id, `curl -sS --max-time 30 -H 'authorization: Bearer ${tv.auth_token}' ` +
      `'${fill(v.tunnel.path_url_template, 8080, tv.tunnel_key)}/up.txt'`);
    assert.equal(inside.out, 'up\n', inside.err);
  });
});
