// devboxd under hostile clients: figures for docs/devboxd.md "Limits".
//   node tests/bench/devboxd_hostile_bench.mjs [PEER_DEVBOXD_BIN]
//   (BENCH_ONLY=half1030|half4000|uploads|idle: one figure only)
// Runs each figure against this build's devboxd and, when given, a peer
// devboxd binary (e.g. one built from an older commit) in the same run:
//   1. half-open connections held (unfinished request heads) while an
//      authenticated HTTP/1.1 request must still answer (20 s bound);
//   2. devboxd's peak RSS under 32 unauthenticated 32 MiB uploads;
//   3. GET /v1/accounts/me requests/s (16 keep-alive clients, 3 s, after a
//      warm-up) and devboxd's CPU time per request without, with, and again
//      without 1,000 idle authenticated keep-alive connections held by
//      another process (same engine, one after the other).
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { Devboxd, devboxdBin } from '../../devboxd/tests/api/devboxd.mjs';

const peerBin = process.argv[2];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rssMiB = (pid, key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

function get(port, key, agent, timeoutMs = 20000) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/accounts/me', agent: agent ?? false,
      headers: { authorization: `Bearer ${key}` } }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
    req.setTimeout(timeoutMs, () => req.destroy());
    req.on('error', () => resolve('no answer'));
    req.end();
  });
}

async function halfOpen(e, n) {
  const socks = [];
  await Promise.all(Array.from({ length: n }, () => new Promise((r) => {
    const s = net.connect(e.port, '127.0.0.1', () => { s.write('GET / HTTP/1.1\r\nHost: x\r\n'); r(); });
    s.on('error', r); s.on('close', r); socks.push(s);
  })));
  await sleep(2000);
  const t0 = Date.now();
  const code = await get(e.port, e.key);
  const ms = Date.now() - t0;
  for (const s of socks) s.destroy();
  return `${n} held: ${code === 200 ? `answered in ${ms} ms` : `no answer (${code})`}`;
}

async function uploads(e) {
  const body = Buffer.alloc(32 << 20, 0x61);
  await Promise.all(Array.from({ length: 32 }, () => new Promise((r) => {
    const req = http.request({ host: '127.0.0.1', port: e.port, method: 'POST', agent: false,
      path: '/v1/devboxes/dbx_x/upload_file',
      headers: { 'content-type': 'multipart/form-data; boundary=b', 'content-length': String(body.length) } },
    (res) => { res.resume(); res.on('end', r); });
    req.on('error', r); req.setTimeout(120000, () => req.destroy()); req.end(body);
  })));
  return `peak RSS ${rssMiB(e.proc.pid, 'VmHWM').toFixed(0)} MiB, now ${rssMiB(e.proc.pid, 'VmRSS').toFixed(0)} MiB`;
}

// devboxd's CPU time so far (user + system), in ms.
const cpuMs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // clock ticks of 10 ms
};

// requests/s of 16 keep-alive clients for 3 s on connections already open,
// and devboxd's CPU time per request (machine load moves it too, less).
async function reqsPerSecond(e, agent) {
  let n = 0;
  const cpu0 = cpuMs(e.proc.pid);
  const end = Date.now() + 3000;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (Date.now() < end) if ((await get(e.port, e.key, agent)) === 200) n++;
  }));
  const us = ((cpuMs(e.proc.pid) - cpu0) * 1000) / n;
  return `${(n / 3).toFixed(0)}/s (devboxd ${us.toFixed(0)} µs CPU per request)`;
}

// Another process holds n idle authenticated keep-alive connections (held
// by the load generator itself, they slowed the generator, not devboxd).
async function holdIdle(e, n) {
  const script = `
    const http = require('node:http');
    const agent = new http.Agent({ keepAlive: true, maxSockets: ${n}, maxFreeSockets: ${n} });
    const one = () => new Promise((r) => http.get({ host: '127.0.0.1', port: ${e.port}, path: '/v1/accounts/me',
      agent, headers: { authorization: 'Bearer ${e.key}' } }, (res) => { res.resume(); res.on('end', r); }).on('error', r));
    Promise.all(Array.from({ length: ${n} }, one)).then(() => console.log('ready'));
    setInterval(() => {}, 1 << 30);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => child.stdout.on('data', (d) => { if (String(d).includes('ready')) resolve(); }));
  return child;
}

// The same engine and clients (after a warm-up) without, with, and again
// without 1,000 idle authenticated keep-alive connections open.
async function reqsWithIdle(e) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  await reqsPerSecond(e, agent); // warm-up: the first seconds run cold
  const before = await reqsPerSecond(e, agent);
  const idle = await holdIdle(e, 1000);
  const threads = Number(/^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${e.proc.pid}/status`, 'utf8'))[1]);
  const during = await reqsPerSecond(e, agent);
  idle.kill();
  await new Promise((r) => idle.once('exit', r));
  const after = await reqsPerSecond(e, agent);
  agent.destroy();
  return `GET /v1/accounts/me: ${before} without idle connections, ` +
    `${during} with 1,000 idle connections open (devboxd ${threads} threads), ${after} after closing them`;
}

const only = process.env.BENCH_ONLY; // e.g. BENCH_ONLY=idle: that figure alone
const figures = { half1030: (e) => halfOpen(e, 1030), half4000: (e) => halfOpen(e, 4000), uploads, idle: reqsWithIdle };

async function run(bin, label) {
  const out = [];
  for (const [name, fig] of Object.entries(figures)) {
    if (only && only !== name) continue;
    const e = new Devboxd();
    if (bin) e.bin = bin;
    await e.start();
    try { out.push(await fig(e)); } finally { e.proc.kill('SIGKILL'); await e.exited; e.proc = null; await e.cleanup(); }
  }
  console.log(`${label}:\n  ${out.join('\n  ')}`);
}

await run(null, `this build (${devboxdBin})`);
if (peerBin) await run(peerBin, `peer (${peerBin})`);
