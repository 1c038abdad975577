// PTY keystroke echo benchmark: one byte sent, wait for it to come back,
// through devboxd (create_pty_tunnel -> tunnel listener -> devboxd-ptyd on
// port 13 inside the devbox -> pty -> an echo program), beside the same
// echo program on a local pty without devboxd (script(1) over pipes) in
// the same run. No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/pty_bench.mjs [--quick]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Devboxd, sourceDir } from '../../devboxd/tests/api/devboxd.mjs';

const require = createRequire(path.join(sourceDir, 'tests', 'package.json'));
const WebSocket = require('ws');

const quick = process.argv.includes('--quick');
const N = quick ? 100 : 1000;
// Raw mode, then every byte read is written back at once.
const ECHO = `python3 -c "import os,tty; tty.setraw(0); print('READY', flush=True); [os.write(1, os.read(0, 1)) for _ in iter(int, 1)]"`;

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(3)} ms`;

// Sends byte after byte; each send waits for that byte's echo.
async function roundTrips(send, onData, n) {
  const times = [];
  let waiting = null;
  onData((chunk) => {
    if (waiting && chunk.includes(waiting.ch)) { const w = waiting; waiting = null; w.resolve(); }
  });
  for (let i = 0; i < n; i++) {
    const ch = String.fromCharCode(97 + (i % 26));
    const t0 = performance.now();
    await new Promise((resolve, reject) => {
      waiting = { ch, resolve };
      setTimeout(() => reject(new Error(`no echo of ${ch} within 10 s`)), 10000).unref();
      send(ch);
    });
    times.push(performance.now() - t0);
  }
  return times;
}

async function viaDevboxd(engine) {
  const client = engine.client();
  const pid = readFileSync(path.join(engine.stateDir, 'devboxd.pid'), 'utf8');
  const tunnelPort = Number(/^tunnel_port (\d+)$/m.exec(pid)[1]);
  const box = await client.devboxes.createAndAwaitRunning({ name: 'pty-bench' });
  const t = await client.devboxes.createPtyTunnel(box.id);
  const host = `13-${t.tunnel_key}.localhost:${tunnelPort}`;
  const lookup = (h, o, cb) => (o && o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4));
  const headers = { authorization: `Bearer ${t.auth_token}` };
  const view = await new Promise((resolve, reject) => {
    const req = require('node:http').get(`http://${host}/pty/bench?cols=80&rows=24`, { headers, lookup, agent: false }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve(JSON.parse(b)));
    });
    req.on('error', reject);
  });
  const ws = new WebSocket(`ws://${host}${view.connect_url}`, { headers, lookup });
  await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  let out = '';
  let listener = null;
  ws.on('message', (d) => { const s = d.toString(); out += s; if (listener) listener(s); });
  ws.send(Buffer.from(`${ECHO}\n`));
  while (!/READY\r?\n/.test(out)) await new Promise((r) => setTimeout(r, 10));
  const times = await roundTrips((c) => ws.send(Buffer.from(c)), (f) => { listener = f; }, N);
  ws.close();
  await client.devboxes.shutdown(box.id);
  return times;
}

async function viaLocalPty() {
  const p = spawn('script', ['-qfc', ECHO, '/dev/null'], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, TERM: 'dumb' } });
  let out = '';
  let listener = null;
  p.stdout.on('data', (d) => { const s = d.toString(); out += s; if (listener) listener(s); });
  while (!/READY\r?\n/.test(out)) await new Promise((r) => setTimeout(r, 10));
  const times = await roundTrips((c) => p.stdin.write(c), (f) => { listener = f; }, N);
  p.kill('SIGKILL');
  return times;
}

const engine = new Devboxd();
await engine.start();
try {
  console.log(`PTY keystroke echo benchmark (${quick ? 'quick' : 'full'}, n=${N} sequential 1-byte round trips)`);
  const ours = await viaDevboxd(engine);
  const peer = await viaLocalPty();
  const o50 = pct(ours, 0.5);
  const p50 = pct(peer, 0.5);
  const line = (what, a, b, c, d) => console.log(`${what.padEnd(58)} ${String(a).padEnd(11)} ${String(b).padEnd(11)} ${String(c).padEnd(8)} ${d}`);
  line('path', 'p50', 'p90', 'ratio', 'target');
  line('devboxd: WebSocket -> tunnel -> ptyd (in devbox) -> pty', ms(o50), ms(pct(ours, 0.9)), (o50 / p50).toFixed(2), '<= 5 ms');
  line('peer: local pty, script(1) over pipes, no devboxd', ms(p50), ms(pct(peer, 0.9)), '1.00', '');
} finally {
  await engine.cleanup();
}
