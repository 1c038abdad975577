#!/usr/bin/env node
// Host stdio benchmark: tools/list round trip (p50/p90 of 1000 after a
// warm-up, raw JSON lines so the client's own cost stays small), idle RSS
// (/proc) and process start -> initialize answered (median of 20), each
// printed beside the same figure for @modelcontextprotocol/server-everything
// over stdio measured in the same run, with ratios. No assertions: figures.
//
//   node tests/bench/host_stdio_bench.mjs [--requests N] [--starts N]
//   env RLMCP_BUILD_DIR (default <repo>/build)
import { spawn } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = process.env.RLMCP_SOURCE_DIR ?? path.resolve(here, '../..');
const build = process.env.RLMCP_BUILD_DIR ?? path.join(repo, 'build');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const REQUESTS = arg('--requests', 1000);
const WARMUP = 200;
const STARTS = arg('--starts', 20);

const ours = {
  name: 'runloop-mcp',
  cmd: path.join(build, 'bin', 'runloop-mcp'),
  args: ['--config', path.join(repo, 'tests', 'e2e', 'conf', 'stdio.yaml')],
  env: { ...process.env, RLMCP_PLUGIN_DIR: path.join(build, 'plugins') },
};
const peer = {
  name: 'server-everything',
  cmd: process.execPath,
  args: [path.join(repo, 'tests', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js'), 'stdio'],
  env: { ...process.env },
};

const INIT = JSON.stringify({
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
}) + '\n';
const INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n';

// A child speaking JSON lines; waitId resolves on the line carrying "id":N.
function start(s) {
  const child = spawn(s.cmd, s.args, { env: s.env, stdio: ['pipe', 'pipe', 'ignore'] });
  let buf = '';
  let waiter = null;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (waiter && line.includes(waiter.needle)) {
        const w = waiter;
        waiter = null;
        w.resolve(line);
      }
    }
  });
  const exited = new Promise((r) => child.on('exit', r));
  return {
    child,
    exited,
    waitId(id) {
      return new Promise((resolve) => { waiter = { needle: `"id":${id}`, resolve }; });
    },
    write(s2) { child.stdin.write(s2); },
    async stop() {
      child.stdin.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const median = (v) => pct([...v].sort((a, b) => a - b), 50);

function rssKiB(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) : NaN;
}

// Proportional set size: shared library pages divided among their users.
function pssKiB(pid) {
  const m = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+) kB/m);
  return m ? Number(m[1]) : NaN;
}

async function initialize(p) {
  const got = p.waitId(0);
  p.write(INIT);
  await got;
  p.write(INITIALIZED);
}

async function listLatency(s) {
  const p = start(s);
  try {
    await initialize(p);
    await sleep(300);
    const idleRss = rssKiB(p.child.pid);
    const idlePss = pssKiB(p.child.pid);
    const times = [];
    let bytes = 0;
    for (let i = 1; i <= WARMUP + REQUESTS; i++) {
      const req = `{"jsonrpc":"2.0","id":${i},"method":"tools/list"}\n`;
      const got = p.waitId(i);
      const t0 = process.hrtime.bigint();
      p.write(req);
      const line = await got;
      const dt = Number(process.hrtime.bigint() - t0) / 1e6;
      if (i > WARMUP) times.push(dt);
      bytes = line.length;
    }
    const afterRss = rssKiB(p.child.pid);
    times.sort((a, b) => a - b);
    return { p50: pct(times, 50), p90: pct(times, 90), p99: pct(times, 99), idleRss, idlePss, afterRss, bytes };
  } finally {
    await p.stop();
  }
}

async function startLatency(s) {
  const times = [];
  for (let i = 0; i < STARTS; i++) {
    const t0 = process.hrtime.bigint();
    const p = start(s);
    const got = p.waitId(0);
    p.write(INIT);
    await got;
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await p.stop();
  }
  return median(times);
}

// The harness's own floor: a round trip through `cat`, no server work.
async function pipeFloor() {
  const child = spawn('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
  child.stdout.setEncoding('utf8');
  let resolve = null;
  child.stdout.on('data', () => { const r = resolve; resolve = null; r?.(); });
  const times = [];
  for (let i = 0; i < WARMUP + REQUESTS; i++) {
    const got = new Promise((r) => { resolve = r; });
    const t0 = process.hrtime.bigint();
    child.stdin.write(`{"jsonrpc":"2.0","id":${i},"method":"ping"}\n`);
    await got;
    if (i >= WARMUP) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  child.stdin.end();
  return median(times);
}

function row(label, a, b, unit, digits = 3) {
  const ratio = b / a;
  console.log(`${label.padEnd(34)} ${a.toFixed(digits).padStart(10)} ${b.toFixed(digits).padStart(12)}  ${unit.padEnd(4)} ${Number.isFinite(ratio) ? ratio.toFixed(1) + 'x' : '-'}`);
}

async function main() {
  for (const s of [ours]) {
    if (!existsSync(s.cmd)) throw new Error(`${s.cmd} missing: build first (RLMCP_BUILD_DIR=${build})`);
  }
  if (!existsSync(peer.args[0])) throw new Error(`${peer.args[0]} missing: run scripts/bootstrap`);
  const floor = await pipeFloor();
  const a = await listLatency(ours);
  const b = await listLatency(peer);
  const sa = await startLatency(ours);
  const sb = await startLatency(peer);
  console.log(`host stdio benchmark: ${REQUESTS} sequential tools/list after ${WARMUP} warm-up; ${STARTS} starts`);
  console.log(`tools/list result size: runloop-mcp ${a.bytes} B, server-everything ${b.bytes} B`);
  console.log(`harness floor (node <-> cat round trip, p50): ${floor.toFixed(3)} ms`);
  console.log(`${'figure'.padEnd(34)} ${'runloop-mcp'.padStart(10)} ${'srv-everything'.padStart(12)}  unit peer/ours`);
  row('tools/list p50', a.p50, b.p50, 'ms');
  row('tools/list p90', a.p90, b.p90, 'ms');
  row('tools/list p99', a.p99, b.p99, 'ms');
  row('idle RSS after initialize', a.idleRss / 1024, b.idleRss / 1024, 'MiB', 2);
  row('idle PSS after initialize', a.idlePss / 1024, b.idlePss / 1024, 'MiB', 2);
  row(`RSS after ${WARMUP + REQUESTS} tools/list`, a.afterRss / 1024, b.afterRss / 1024, 'MiB', 2);
  row('start -> initialize answered (p50)', sa, sb, 'ms', 2);
  console.log('targets (issue 2): tools/list p50 <= 0.05 ms, idle RSS <= 4 MiB, start <= 10 ms');
}

main().catch((e) => { console.error(e); process.exit(1); });
