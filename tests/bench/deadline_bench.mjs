// deadline_bench.mjs - client side of tests/bench/deadline_bench.sh: call
// deadlines, a dead backend and short calls beside long ones, measured for
// one or more runloop-mcp builds in the same run, through the fault proxy
// (tests/fixtures/faultproxy) in front of one real devboxd.
//
//   node deadline_bench.mjs LABEL=BUILD_DIR [LABEL=BUILD_DIR ...]
//
// Figures (ms): deadline overshoot (answer time minus timeout_seconds) for
// a frozen backend, a stalled start and a Retry-After beyond the budget;
// backend-down latency of the 1st and 10th call; get_devbox p50/p99 with 10
// and 100 long calls (wait_for_execution) in flight. A call the client
// gave up on shows as ">N".
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startFaultProxy } from '../fixtures/faultproxy/faultproxy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, '../..');
const conf = path.join(src, 'tests', 'e2e', 'conf', 'plugins-cloud.yaml');
const KEY = 'ak_bench_key_1';
const builds = process.argv.slice(2).map((a) => { const [label, dir] = a.split('='); return { label, dir }; });
const devboxdBin = path.join(builds[0].dir, 'bin', 'devboxd');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };
const fmt = (v) => (typeof v === 'string' ? v : v.toFixed(0));

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function startHost(build, baseUrl) {
  const transport = new StdioClientTransport({
    command: path.join(build.dir, 'bin', 'runloop-mcp'), args: ['--config', conf],
    env: { PATH: process.env.PATH, RLMCP_PLUGIN_DIR: path.join(build.dir, 'plugins'), RUNLOOP_BASE_URL: baseUrl, RUNLOOP_API_KEY: KEY },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'deadline-bench', version: '1' });
  await client.connect(transport);
  return client;
}

// Time one call; ">cap" when the client gave up first.
async function timed(client, name, args, capMs, extra = {}) {
  const t0 = performance.now();
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: capMs, ...extra });
    return { ms: performance.now() - t0, r };
  } catch {
    return { ms: `>${capMs}`, r: null };
  }
}

function overshootLine(label, what, samples) {
  const nums = samples.filter((s) => typeof s === 'number');
  const gave = samples.length - nums.length;
  const p50 = nums.length ? fmt(pct(nums, 50)) : '-';
  const p99 = gave ? `>${samples.find((s) => typeof s === 'string').slice(1)}` : fmt(pct(nums, 99));
  console.log(`${label.padEnd(10)} overshoot ${what.padEnd(26)} p50 ${String(p50).padStart(7)} ms  p99 ${String(p99).padStart(7)} ms  (n=${samples.length}${gave ? `, ${gave} gave up` : ''})`);
}

async function overshoots(build, proxy, box, n, cap) {
  const client = await startHost(build, proxy.url);
  const cases = {
    'frozen backend (T=3 s)': async () => {
      const p = timed(client, 'execute_command', { devbox_id: box, command: 'sleep 60', timeout_seconds: 3 }, cap);
      await sleep(1000);
      proxy.freeze();
      const { ms } = await p;
      proxy.thaw();
      return typeof ms === 'number' ? ms - 3000 : ms;
    },
    'stalled start (T=3 s)': async () => {
      proxy.add({ match: { method: 'POST', path: /\/execute\?/ }, action: 'stall', times: 1 });
      const { ms } = await timed(client, 'execute_command', { devbox_id: box, command: 'true', timeout_seconds: 3 }, cap);
      proxy.clear();
      return typeof ms === 'number' ? ms - 3000 : ms;
    },
    'Retry-After 30 s (T=5 s)': async () => {
      proxy.add({ match: { method: 'POST', path: /\/execute\?/ }, action: 'status', status: 429, headers: { 'retry-after': '30' }, times: 1 });
      const { ms } = await timed(client, 'execute_command', { devbox_id: box, command: 'true', timeout_seconds: 5 }, cap);
      proxy.clear();
      return typeof ms === 'number' ? ms - 5000 : ms;
    },
  };
  for (const [what, fn] of Object.entries(cases)) {
    const samples = [];
    for (let i = 0; i < n; i++) samples.push(await fn());
    overshootLine(build.label, what, samples);
  }
  await client.close();
}

async function backendDown(build, calls, cap) {
  const client = await startHost(build, `http://127.0.0.1:${await freePort()}`);
  const lat = [];
  for (let i = 0; i < calls; i++) lat.push((await timed(client, 'get_devbox', { devbox_id: 'dbx_1' }, cap)).ms);
  console.log(`${build.label.padEnd(10)} backend down (closed port)   1st call ${fmt(lat[0]).padStart(7)} ms  ${calls >= 10 ? `10th call ${fmt(lat[9]).padStart(7)} ms` : `(${calls} call${calls > 1 ? 's' : ''} only: each pays the retry schedule)`}`);
  await client.close();
}

async function cheapBesideLong(build, proxy, box, eid, inFlight, n, cap) {
  const client = await startHost(build, proxy.url);
  const longs = [];
  for (let i = 0; i < inFlight; i++) {
    longs.push(client.callTool({ name: 'wait_for_execution', arguments: { devbox_id: box, execution_id: eid, timeout_seconds: 30 } },
      undefined, { timeout: 120000 }).catch(() => null));
  }
  await sleep(1500); // let the long calls take their threads
  const lat = [];
  for (let i = 0; i < n; i++) lat.push((await timed(client, 'get_devbox', { devbox_id: box }, cap)).ms);
  const nums = lat.filter((x) => typeof x === 'number');
  const gave = lat.length - nums.length;
  console.log(`${build.label.padEnd(10)} get_devbox with ${String(inFlight).padStart(3)} long calls  p50 ${fmt(nums.length ? pct(nums, 50) : `>${cap}`).padStart(7)} ms  p99 ${(gave ? `>${cap}` : fmt(pct(nums, 99))).padStart(7)} ms  (n=${n}${gave ? `, ${gave} gave up` : ''})`);
  await client.close(); // ends the long calls with the host
  await Promise.all(longs);
}

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-deadline-bench-'));
  const state = path.join(tmp, 'state');
  const keyFile = path.join(tmp, 'key');
  writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
  const engine = spawn(devboxdBin, ['--state-dir', state, '--listen', `unix:${path.join(state, 'devboxd.sock')}`,
    '--listen', '127.0.0.1:0', '--api-key-file', keyFile], { stdio: ['ignore', 'ignore', 'ignore'] });
  let proxy;
  try {
    let port = null;
    for (let i = 0; i < 600 && port === null; i++) {
      const f = path.join(state, 'devboxd.pid');
      const m = existsSync(f) ? readFileSync(f, 'utf8').match(/^port (\d+)$/m) : null;
      if (m) port = Number(m[1]); else await sleep(100);
    }
    proxy = await startFaultProxy({ target: `http://127.0.0.1:${port}` });
    const setup = await startHost(builds[0], proxy.url);
    const box = (await setup.callTool({ name: 'create_devbox', arguments: {} }, undefined, { timeout: 180000 })).structuredContent.id;
    const eid = (await setup.callTool({ name: 'execute_command_async', arguments: { devbox_id: box, command: 'sleep 3600' } })).structuredContent.execution_id;
    await setup.close();
    for (const [i, b] of builds.entries()) {
      const ours = i === 0;
      await overshoots(b, proxy, box, ours ? 10 : 2, 45000);
      await backendDown(b, ours ? 10 : 1, 60000);
      await cheapBesideLong(b, proxy, box, eid, 10, ours ? 50 : 2, 20000);
      await cheapBesideLong(b, proxy, box, eid, 100, ours ? 50 : 2, 20000);
    }
    console.log('sessions after 1,000 idle ones: not measured (HTTP session limits are not part of this change)');
  } finally {
    await proxy?.close();
    engine.kill('SIGTERM');
    await new Promise((r) => { if (engine.exitCode !== null) r(); else engine.once('exit', r); });
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
