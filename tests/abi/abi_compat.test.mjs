// The frozen plugin ABI, end to end: today's host loads one fixture plugin
// per minor 1.0 ... 1.6 (tests/abi/abi_fixture.c, each built against the
// header frozen at its minor) and the official MCP client calls each one's
// probe tool, reads its resource and gets its prompt.
//
// Every sized struct a fixture hands the host carries its minor's
// struct_size and ends at an unreadable page, so a host that reads past
// what an old minor's struct holds crashes here; a host that refuses an old
// size fails the load or the call. The probe uses the Runloop API (a plain
// request and a multipart upload), a tunnel request and a PTY exchange
// (1.1+), the deadline services (1.2+), the exposed names (1.3+), a task
// definition (1.4+), a config schema (1.5+) and a WebSocket (1.6). The 1.6
// fixture also passes each struct at the least size sdk/ABI.md's table says
// today's host takes (taken) and one byte less (refused). All against the
// small fake backend below: an HTTP server that is also the tunnel
// origin (the host learns it from X-Devboxd-Tunnel-Url-Template) and a
// minimal WebSocket server. Nothing else runs: no engine, no devbox.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { buildDir, checkStdioHostExit, closeStdioHost, connectStdioHost, hostBin, pluginDir, sourceDir, waitFor } from '../e2e/lib/host.mjs';

const MINORS = [0, 1, 2, 3, 4, 5, 6];
const fixtureDir = path.join(buildDir, 'fixtures', 'abi');
const fixture = (m) => path.join(fixtureDir, `rlmcp_abi_v1${m}.so`);
const API_KEY = 'abi-compat-key';

/** sdk/ABI.md's size table: the "today's host" cell of struct's row. */
function hostLeast(struct) {
  const md = readFileSync(path.join(sourceDir, 'sdk', 'ABI.md'), 'utf8');
  const row = md.split('\n').find((l) => l.startsWith(`| \`${struct}\` |`));
  assert.ok(row, `sdk/ABI.md has a size row for ${struct}`);
  return Number(row.split('|').at(-2).trim());
}

// ---- a minimal WebSocket server (RFC 6455, unfragmented frames) ----------

function wsFrame(op, payload) {
  const n = payload.length;
  let head;
  if (n < 126) head = Buffer.from([0x80 | op, n]);
  else if (n < 65536) { head = Buffer.alloc(4); head[0] = 0x80 | op; head[1] = 126; head.writeUInt16BE(n, 2); }
  else { head = Buffer.alloc(10); head[0] = 0x80 | op; head[1] = 127; head.writeBigUInt64BE(BigInt(n), 2); }
  return Buffer.concat([head, payload]);
}

/** Parse the client's (masked) frames from socket; onMessage(op, payload). */
function wsServe(socket, onMessage) {
  let buf = Buffer.alloc(0);
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (buf.length < 2) return;
      const op = buf[0] & 0x0f;
      let len = buf[1] & 0x7f;
      let off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
      const masked = (buf[1] & 0x80) !== 0;
      const mask = masked ? buf.subarray(off, off + 4) : null;
      if (masked) off += 4;
      if (buf.length < off + len) return;
      const payload = Buffer.from(buf.subarray(off, off + len));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
      buf = buf.subarray(off + len);
      if (op === 0x8) { // close: answer with the same code, then end
        socket.write(wsFrame(0x8, payload.subarray(0, 2)));
        socket.end();
        return;
      }
      if (op === 0x9) { socket.write(wsFrame(0xa, payload)); continue; }
      if (op === 0x1 || op === 0x2) onMessage(op, payload);
    }
  });
  socket.on('error', () => {});
}

// ---- the fake backend ------------------------------------------------------

const TUNNEL_HOST = /^(\d+)-([A-Za-z0-9_-]+)\.localhost(?::\d+)?$/;

function startBackend() {
  const seen = { upgrades: [], ptyInput: [] };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('latin1');
      const tun = TUNNEL_HOST.exec(req.headers.host ?? '');
      const answer = {
        method: req.method,
        path: req.url,
        host: req.headers.host ?? null,
        auth: req.headers.authorization ?? null,
      };
      if (tun) {
        answer.tunnel = true;
      } else {
        // A multipart upload: the part's name, file name and data.
        const part = /name="([^"]*)"; filename="([^"]*)"[\s\S]*?\r\n\r\n([^\r]*)\r\n/.exec(body);
        if (part) answer.part = { name: part[1], filename: part[2], data: part[3] };
        res.setHeader('X-Devboxd-Tunnel-Url-Template',
          `http://{port}-{tunnel_key}.localhost:${server.address().port}`);
      }
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(answer));
    });
  });
  server.on('upgrade', (req, socket) => {
    const up = { path: req.url, host: req.headers.host, auth: req.headers.authorization ?? null };
    seen.upgrades.push(up);
    const key = req.headers['sec-websocket-key'];
    if (!TUNNEL_HOST.test(req.headers.host ?? '') || !key) {
      socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const accept = crypto.createHash('sha1')
      .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    const hello = Buffer.from('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n'
      + `Connection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    if (req.url.startsWith('/pty/')) {
      // A PTY session: a prompt sent with the handshake, so the output is
      // there before the host's quiet timer starts however loaded the
      // machine; what was typed is recorded.
      socket.write(Buffer.concat([hello, wsFrame(0x2, Buffer.from('pty:ready$ '))]));
      wsServe(socket, (op, payload) => seen.ptyInput.push({ path: req.url, text: payload.toString() }));
    } else {
      socket.write(hello);
      wsServe(socket, (op, payload) => socket.write(wsFrame(op, payload)));
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({ server, seen, port: server.address().port }));
  });
}

// ---- the test --------------------------------------------------------------

describe('plugins of every ABI minor in today\'s host', () => {
  let tmp;
  let backend;
  let host;

  before(async () => {
    for (const f of [hostBin, ...MINORS.map(fixture)]) {
      if (!existsSync(f)) throw new Error(`${f} is missing: build first (RLMCP_BUILD_DIR=${buildDir})`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-abi-'));
    backend = await startBackend();
    const conf = path.join(tmp, 'abi.yaml');
    writeFileSync(conf, [
      'server:',
      '  name: abi-compat',
      '  transport: stdio',
      'runloop:',
      '  backend: cloud',
      `  base_url: http://127.0.0.1:${backend.port}`,
      `  api_key: ${API_KEY}`,
      'plugins:',
      ...MINORS.flatMap((m) => [
        `  - name: abi_v1${m}`,
        `    path: ${fixture(m)}`,
        `    config: {minor: ${m}}`,
      ]),
      '',
    ].join('\n'));
    host = await connectStdioHost({
      name: 'abi-compat', args: ['--config', conf],
      env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir },
    });
  });

  after(async () => {
    await closeStdioHost(host);
    await checkStdioHostExit(host);
    backend?.server.closeAllConnections();
    await new Promise((r) => (backend ? backend.server.close(r) : r()));
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('loads every minor and lists its tool (with a task from 1.4 on)', async () => {
    const { tools } = await host.client.listTools();
    for (const m of MINORS) {
      const t = tools.find((x) => x.name === `abi_v1${m}_probe`);
      assert.ok(t, `abi_v1${m}_probe is listed; host log:\n${host.err}`);
      assert.equal(t.annotations?.readOnlyHint, true);
      assert.equal(t.execution?.taskSupport ?? 'forbidden', m >= 4 ? 'optional' : 'forbidden',
        `1.${m}: ${JSON.stringify(t.execution)}`);
    }
    // The 1.6 fixture's definitions of the least sizes load; a byte less not.
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('abi_v16_least'));
    assert.equal(tools.find((t) => t.name === 'abi_v16_task_least')?.execution?.taskSupport, 'optional');
    assert.ok(!names.includes('abi_v16_below'));
    assert.ok(!names.includes('abi_v16_task_below'));
  });

  it('takes each struct at the least size sdk/ABI.md gives, and refuses one byte less', async () => {
    const r = await host.client.callTool({ name: 'abi_v16_least', arguments: {} });
    assert.notEqual(r.isError, true, `${JSON.stringify(r.content)}\nhost log:\n${host.err}`);
    const s = r.structuredContent;
    const EINVAL = -1;
    const EVERSION = -8;
    assert.equal(s.tool_def_below, EVERSION);
    assert.equal(s.task_def_below, EVERSION);
    assert.match(host.err, new RegExp(`rlmcp_tool_def.struct_size is ${hostLeast('rlmcp_tool_def') - 1}, smaller than ${hostLeast('rlmcp_tool_def')}, the least`));
    assert.match(host.err, new RegExp(`rlmcp_task_def.struct_size is ${hostLeast('rlmcp_task_def') - 1}, smaller than ${hostLeast('rlmcp_task_def')}, the least`));
    // [the size the fixture used, its result, the result one byte less]
    for (const k of ['http_req', 'tunnel', 'pty_exchange', 'ws_open', 'ws_message']) {
      assert.deepEqual(s[k], [hostLeast(`rlmcp_${k}`), 0, EINVAL], k);
    }
  });

  for (const m of MINORS) {
    it(`ABI 1.${m}: the probe tool, its resource and its prompt`, async () => {
      const r = await host.client.callTool({ name: `abi_v1${m}_probe`, arguments: {} }).catch((e) => {
        // Each struct of the fixture ends at an unreadable page: a host that
        // reads past this minor's struct dies here.
        throw new Error(`1.${m}: the call failed (${e.message}); did the host read past a `
          + `struct of ABI 1.${m}? host log:\n${host.err.slice(-3000)}`);
      });
      assert.notEqual(r.isError, true, `1.${m}: ${JSON.stringify(r.content)}\nhost log:\n${host.err}`);
      const s = r.structuredContent;
      assert.equal(s.minor, m);
      assert.ok(s.host_minor >= m, `host minor ${s.host_minor}`);
      assert.equal(s.api_size_ok, true, 'the services table covers this minor');
      assert.deepEqual(s.config, { minor: m });

      // 1.0: rlmcp_http_req, rlmcp_http_part, rlmcp_http_resp.
      assert.deepEqual(s.http, {
        rc: 0, status: 200, resp_size_ok: true,
        body: { method: 'GET', path: `/v1/abi/ping?minor=${m}`, host: `127.0.0.1:${backend.port}`, auth: `Bearer ${API_KEY}` },
      });
      assert.equal(s.upload.rc, 0);
      assert.equal(s.upload.status, 200);
      assert.equal(s.upload.body.method, 'POST');
      assert.deepEqual(s.upload.body.part, { name: 'file', filename: 'abi.txt', data: `minor ${m}` });

      if (m >= 1) { // rlmcp_tunnel, rlmcp_pty_exchange
        const tunnelHost = `${8000 + m}-abikey${m}.localhost:${backend.port}`;
        assert.deepEqual(s.tunnel, {
          rc: 0, status: 200, resp_size_ok: true,
          body: { method: 'GET', path: `/tunnel?minor=${m}`, host: tunnelHost, auth: `Bearer abi-token-${m}`, tunnel: true },
        });
        assert.deepEqual(s.pty, { rc: 0, upgrade_status: 0, close_code: 0, quiet: true, output: 'pty:ready$ ' });
        const up = backend.seen.upgrades.find((u) => u.path === `/pty/abi${m}/connect`);
        assert.ok(up, `the PTY upgrade of 1.${m} arrived`);
        // libwebsockets names the host without the port.
        assert.equal(up.host.replace(/:\d+$/, ''), tunnelHost.replace(/:\d+$/, ''));
        assert.equal(up.auth, `Bearer abi-token-${m}`);
        await waitFor(() => backend.seen.ptyInput.find((i) => i.path === up.path), 10000, 'the typed input');
        assert.equal(backend.seen.ptyInput.find((i) => i.path === up.path).text, `typed ${m}`);
      } else {
        assert.equal(s.tunnel, undefined);
      }
      if (m >= 2) {
        assert.equal(s.deadline_set, true);
        assert.equal(s.last_error, '');
      }
      if (m >= 3) assert.equal(s.exposed, `abi_v1${m}_probe`);
      if (m >= 6) { // rlmcp_ws_open, rlmcp_ws_message
        assert.deepEqual(s.ws, { rc: 0, upgrade_status: 0, type: 1, data: 'ws hello', close_rc: 0 });
        assert.ok(backend.seen.upgrades.some((u) => u.path === `/echo?minor=${m}`
          && u.auth === `Bearer abi-token-${m}`));
      }

      const res = await host.client.readResource({ uri: `abi://abi_v1${m}/info` });
      assert.equal(res.contents[0].text, `resource of abi_v1${m}`);
      const p = await host.client.getPrompt({ name: `abi_v1${m}_prompt` });
      assert.equal(p.messages[0].content.text, `prompt of abi_v1${m}`);
    });
  }

  it('logged no plugin error', () => {
    const lines = host.err.split('\n').filter((l) => !/struct_size is \d+, smaller than/.test(l));
    assert.doesNotMatch(lines.join('\n'), /abi_v1\d.*(error|refus|fail)/i, host.err);
  });
});
