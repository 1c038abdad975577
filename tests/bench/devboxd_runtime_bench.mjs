// devboxd runtimes side by side in one run: root inside under runc on the
// starter image with its warm pool (the default), the same with the pool
// off (RLMCP_WARM_POOL=0), and, with --before a build that still has it,
// bubblewrap on the host's /usr (the engine before images,
// RLMCP_DEVBOX_RUNTIME=bwrap RLMCP_DEVBOX_IMAGE=host; runc is the one
// runtime now).
// Creates are timed back to back and one a second (as an agent makes them).
// Same binary, same machine, one engine after the other. Figures only.
// Also the starter image's cold build (into an empty cache of its own, so
// the machine's cache is untouched) and warm lookup, and its size.
// With --before DIR, runc on the starter image is measured a second time
// with the devboxd (and helpers) of another build, e.g. the previous
// commit's, in the same run.  Create and exec latencies are taken in turns
// across the engines, which run side by side.
//   RLMCP_BUILD_DIR=build node tests/bench/devboxd_runtime_bench.mjs [--quick]
//       [--no-cold | --only-images] [--before OTHER_BUILD_DIR]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Devboxd, sourceDir } from '../../devboxd/tests/api/devboxd.mjs';
import { createLatencies, execLatencies, ms, pct } from './devboxd_measure.mjs';

const quick = process.argv.includes('--quick');
const N_CREATE = quick ? 10 : 30;
const N_EXEC = quick ? 100 : 300;
const N_BOXES = quick ? 20 : 100;
const N_PACED = quick ? 5 : 15;

const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(40)} ${String(ours).padEnd(24)} ${String(peer).padEnd(24)} ${target}`);

const beforeAt = process.argv.indexOf('--before');
const beforeDir = beforeAt > 0 ? path.resolve(process.argv[beforeAt + 1] ?? '') : null;

// The engines run side by side: create and exec latencies are taken in
// turns (one create on each, then the next round), so a change in the
// machine's load falls on every engine alike; the concurrent figure runs
// one engine at a time.
async function measureAll(configs) {
  const engines = configs.map(({ env, bin }) => {
    const e = new Devboxd({ env });
    if (bin) e.bin = bin;
    return e;
  });
  const out = configs.map(({ label }) => ({ label, create: [], paced: [], exec: [] }));
  try {
    for (const e of engines) await e.start();
    const clients = engines.map((e) => e.client());
    for (let i = 0; i < N_CREATE; i++) {
      for (let k = 0; k < clients.length; k++) out[k].create.push(...await createLatencies(clients[k], 1));
    }
    // As an agent creates them: one a second on each engine, so a warm
    // pool has refilled (a sandbox start takes about 0.3 s).
    for (let i = 0; i < N_PACED; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      for (let k = 0; k < clients.length; k++) out[k].paced.push(...await createLatencies(clients[k], 1));
    }
    const boxes = [];
    for (const c of clients) boxes.push(await c.devboxes.createAndAwaitRunning({}));
    for (let i = 0; i < N_EXEC; i += 10) {
      for (let k = 0; k < clients.length; k++) {
        out[k].exec.push(...await execLatencies(clients[k], boxes[k].id, Math.min(10, N_EXEC - i), `r${i}`));
      }
    }
    // The floor under an execute: the command's own process. `bash -c
    // true` 100 times from a bash loop inside the devbox (bash's own fork
    // costs a little more than the agent's).
    for (let k = 0; k < clients.length; k++) {
      const r = await clients[k].devboxes.executeAndAwaitCompletion(boxes[k].id, {
        command: 's=$(date +%s%N); for i in $(seq 100); do /bin/bash -c true; done; e=$(date +%s%N); echo $(( (e - s) / 100000 ))',
      });
      out[k].inbox = Number(r.stdout.trim()) / 1000; // ms per bash -c true
    }
    for (let k = 0; k < clients.length; k++) await clients[k].devboxes.shutdown(boxes[k].id);
    for (let k = 0; k < clients.length; k++) Object.assign(out[k], await concurrent(clients[k]));
  } finally {
    for (const e of engines) await e.cleanup();
  }
  return out;
}

// N_BOXES devboxes created at once, then one command in each.
async function concurrent(client) {
  let t0 = performance.now();
  const boxes = await Promise.all(Array.from({ length: N_BOXES }, () =>
    client.devboxes.createAndAwaitRunning({ launch_parameters: { resource_size_request: 'X_SMALL' } },
      { timeout: 600000 }).catch((e) => ({ status: `error: ${e.message}` }))));
  const up = (performance.now() - t0) / 1000;
  const running = boxes.filter((b) => b.status === 'running');
  t0 = performance.now();
  const outs = await Promise.all(running.map((b) => client.devboxes.executeAndAwaitCompletion(b.id,
    { command: 'id -un' })));
  const run = (performance.now() - t0) / 1000;
  const ok = outs.filter((o) => o.exit_status === 0).length;
  await Promise.all(running.map((b) => client.devboxes.shutdown(b.id)));
  return { up, nUp: running.length, run, ok };
}

// devboxd-image NAME in the given cache: seconds, and the image's size.
function buildImage(cache, name) {
  const t0 = performance.now();
  const r = spawnSync(path.join(sourceDir, 'devboxd/images/devboxd-image'), [name],
    { env: { ...process.env, RLMCP_IMAGE_CACHE: cache }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const s = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`devboxd-image ${name}: ${r.stderr}`);
  const dir = r.stdout.trim();
  const mb = Number(execFileSync('du', ['-sxm', dir]).toString().split('\t')[0]);
  return { s, mb };
}

// The floor under a runc create: `runc run` of /bin/true alone on the
// starter image (read-only root, runc's default config, no devboxd), ms.
function runcFloor(n) {
  const img = spawnSync(path.join(sourceDir, 'devboxd/images/devboxd-image'), ['--check', 'starter'],
    { encoding: 'utf8' });
  if (img.status !== 0) return null;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-runc-floor-'));
  const lat = [];
  try {
    execFileSync('runc', ['spec'], { cwd: dir });
    const cfgPath = path.join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'));
    cfg.root = { path: img.stdout.trim(), readonly: true };
    cfg.process.terminal = false;
    cfg.process.args = ['/bin/true'];
    writeFileSync(cfgPath, JSON.stringify(cfg));
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      execFileSync('runc', ['--root', path.join(dir, 'state'), 'run', '--bundle', dir, `floor-${process.pid}-${i}`],
        { stdio: 'ignore' });
      lat.push(performance.now() - t0);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return lat;
}

let cold = null;
let warm = null;
if (!process.argv.includes('--no-cold')) {
  const cache = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-image-bench-'));
  try {
    cold = buildImage(cache, 'starter');
    warm = buildImage(cache, 'starter');
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}
const hostUsrMb = Number(execFileSync('du', ['-sxm', '/usr']).toString().split('\t')[0]);
const imageRows = () => {
  row('starter image: cold build', `${cold.s.toFixed(1)} s`, 'none (host /usr)', '');
  row('starter image: warm (cached)', `${warm.s.toFixed(2)} s`, 'none', '');
  row('root filesystem size', `${cold.mb} MB`, `${hostUsrMb} MB (host /usr)`, '');
};
if (process.argv.includes('--only-images')) {
  row('figure', 'runc, starter image', 'bwrap, host /usr', 'target');
  imageRows();
  process.exit(0);
}

const runc = { RLMCP_DEVBOX_RUNTIME: 'runc', RLMCP_DEVBOX_IMAGE: 'starter' };
// Ours (the default: runc with one sandbox started ahead), then runc with
// the warm pool off, bubblewrap on the host's /usr (the engine before
// images, pool off as it was), and with --before another build's runc.
const configs = [
  { label: 'runc, warm pool (default)', env: runc },
  { label: 'runc, pool off', env: { ...runc, RLMCP_WARM_POOL: '0' } },
];
if (beforeDir) {
  const bin = path.join(beforeDir, 'bin', 'devboxd');
  configs.push({ label: 'bwrap, host /usr (before)', env: { RLMCP_DEVBOX_RUNTIME: 'bwrap', RLMCP_DEVBOX_IMAGE: 'host', RLMCP_WARM_POOL: '0' }, bin });
  configs.push({ label: 'runc before', env: runc, bin });
}
const results = await measureAll(configs);
console.log(`devboxd runtimes (${quick ? 'quick' : 'full'}), official Runloop SDK, h2c`);
if (beforeDir) console.log(`  (runc before: ${beforeDir})`);
const line = (what, f, target) => {
  console.log(`${what.padEnd(44)} ${results.map((m) => String(f(m)).padEnd(26)).join(' ')} ${target}`);
};
line('figure', (m) => m.label, 'target');
line(`create -> running p50, back to back (n=${N_CREATE})`, (m) => ms(pct(m.create, 0.5)), '< 100 ms');
line('create -> running p90, back to back', (m) => ms(pct(m.create, 0.9)), '');
line(`create -> running p50, one a second (n=${N_PACED})`, (m) => ms(pct(m.paced, 0.5)), '< 100 ms');
line('create -> running p90, one a second', (m) => ms(pct(m.paced, 0.9)), '');
const floor = runcFloor(quick ? 10 : 30);
if (floor) row(`  runc run /bin/true alone p50 (n=${floor.length})`, ms(pct(floor, 0.5)), '', '');
line(`execute "true" p50 (n=${N_EXEC})`, (m) => ms(pct(m.exec, 0.5)), '< 10 ms');
line('execute "true" p90', (m) => ms(pct(m.exec, 0.9)), '');
line('  inside: bash -c true from a bash loop, mean', (m) => ms(m.inbox), '');
line(`${N_BOXES} concurrent devboxes: all running`, (m) => `${m.up.toFixed(2)} s (${m.nUp} up)`, `${N_BOXES} up`);
line('  one command in each', (m) => `${m.run.toFixed(2)} s (ok ${m.ok})`, '');
if (cold) imageRows();
