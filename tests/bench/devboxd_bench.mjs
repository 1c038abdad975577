// devboxd benchmark: prints our figures beside the peer figure where one
// exists (Runloop's cloud documents "a few seconds" from start to first
// command; the previous engine is devboxd on the host's /usr without an
// image, RLMCP_DEVBOX_IMAGE=host, which only builds from before runc became
// the one runtime have: --previous DEVBOXD names such a devboxd binary,
// measured in the same run). No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/devboxd_bench.mjs [--quick] [--cold-image]
//       [--previous OTHER_BUILD/bin/devboxd]
// --cold-image also builds the images into an empty cache (minutes).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Devboxd, buildDir } from '../../devboxd/tests/api/devboxd.mjs';
import { createLatencies, execLatencies, ms, pct } from './devboxd_measure.mjs';

const quick = process.argv.includes('--quick');
const N_CREATE = quick ? 10 : 30;
const N_EXEC = quick ? 100 : 400;
const N_BOXES = quick ? 20 : 100;
const OUT_BYTES = quick ? 128 * 1024 * 1024 : 1024 * 1024 * 1024;

function procMem(pid) {
  const st = readFileSync(`/proc/${pid}/status`, 'utf8');
  const get = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(st)?.[1] ?? NaN) / 1024;
  return { rss: get('VmRSS'), hwm: get('VmHWM') };
}
const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(44)} ${String(ours).padEnd(22)} ${String(peer).padEnd(34)} ${target}`);

const imageTool = path.join(buildDir, 'bin', 'devboxd-image');
const timed = (args, env) => {
  const t0 = performance.now();
  const dir = execFileSync(imageTool, args, { env: { ...process.env, ...env }, encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return { s: (performance.now() - t0) / 1000, dir };
};
const sizeMB = (dir) => Number(execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0]);

// create -> running (one at a time) and execute "true" on one devbox.
async function latencies(client, h1) {
  const create = await createLatencies(client, N_CREATE);
  const box = await client.devboxes.createAndAwaitRunning({});
  const exec = {};
  for (const [label, c] of [['h2c', client], ['HTTP/1.1', h1]]) {
    exec[label] = await execLatencies(c, box.id, N_EXEC, `b-${label}`);
  }
  return { create, exec, box };
}

// The previous engine: no image, the host's /usr (another build's devboxd,
// same run); empty figures without --previous.
async function previousEngine() {
  const at = process.argv.indexOf('--previous');
  if (at < 0) return { create: [NaN], exec: { h2c: [NaN], 'HTTP/1.1': [NaN] } };
  process.env.RLMCP_DEVBOX_IMAGE = 'host';
  const prev = new Devboxd();
  prev.bin = path.resolve(process.argv[at + 1] ?? '');
  try {
    await prev.start();
    const r = await latencies(prev.client(), prev.client({ http2: false }));
    await prev.client().devboxes.shutdown(r.box.id);
    return r;
  } finally {
    delete process.env.RLMCP_DEVBOX_IMAGE;
    await prev.cleanup();
  }
}

// Image builds: warm (cached) always, cold into an empty cache on request.
console.log('images (devboxd-image)');
for (const name of ['starter', 'universal']) {
  const warm = timed([name]);
  row(`${name}: warm (cached) lookup`, `${warm.s.toFixed(2)} s`, '', '');
  row(`${name}: size`, `${sizeMB(warm.dir)} MB`, '', '');
  if (process.argv.includes('--cold-image')) {
    const cache = mkdtempSync(path.join(tmpdir(), 'rlmcp-image-cold-'));
    try {
      const cold = timed([name], { RLMCP_IMAGE_CACHE: cache });
      row(`${name}: cold build`, `${cold.s.toFixed(1)} s`, 'mmdebstrap here: 27 s / 75 s (idle)', '');
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }
}

const prev = await previousEngine();
process.env.RLMCP_DEVBOX_IMAGE = 'universal';
const engine = new Devboxd();
await engine.start();
delete process.env.RLMCP_DEVBOX_IMAGE;
const pid = engine.proc.pid;
try {
  console.log(`devboxd benchmark (${quick ? 'quick' : 'full'}), ${engine.baseURL}, official Runloop SDK`);
  row('figure', 'devboxd (universal image)', 'previous engine (host /usr)', 'target');
  const client = engine.client();
  const h1 = engine.client({ http2: false });

  // 1-2. create -> running one at a time; execute "true" round trip.
  const ours = await latencies(client, h1);
  const box = ours.box;
  row(`create -> running p50 (n=${N_CREATE})`, ms(pct(ours.create, 0.5)), ms(pct(prev.create, 0.5)), '< 100 ms');
  row('create -> running p90', ms(pct(ours.create, 0.9)), ms(pct(prev.create, 0.9)), '');
  for (const label of ['h2c', 'HTTP/1.1']) {
    row(`execute "true" p50, ${label} (n=${N_EXEC})`, ms(pct(ours.exec[label], 0.5)),
      ms(pct(prev.exec[label], 0.5)), '< 10 ms');
    row(`execute "true" p90, ${label}`, ms(pct(ours.exec[label], 0.9)), ms(pct(prev.exec[label], 0.9)), '');
  }
  row('(Runloop cloud, documented)', '', '"a few seconds" to first command', '');

  // 3. N concurrent devboxes: create all, run a command in each.  Their
  // disks are 0.25 GiB: devboxd admits only as much disk as the state
  // filesystem holds (100 X_SMALL disks of 4 GiB would need 400 GiB free).
  let t0 = performance.now();
  const boxes = await Promise.all(Array.from({ length: N_BOXES }, () =>
    client.devboxes.createAndAwaitRunning({
      launch_parameters: { resource_size_request: 'X_SMALL', custom_disk_size: 0.25 },
    })));
  const tUp = performance.now() - t0;
  const notUp = boxes.filter((b) => b.status !== 'running').length;
  t0 = performance.now();
  const outs = await Promise.all(boxes.map((b) => client.devboxes.executeAndAwaitCompletion(b.id,
    { command: 'echo $(hostname)' })));
  const tExec = performance.now() - t0;
  const okExec = outs.filter((o) => o.exit_status === 0).length;
  const memN = procMem(pid);
  row(`${N_BOXES} concurrent devboxes: all running`, `${(tUp / 1000).toFixed(2)} s`, '', `${N_BOXES} on this machine`);
  row(`  not running`, `${notUp}`, '', '0');
  row(`  one command in each (ok ${okExec}/${N_BOXES})`, `${(tExec / 1000).toFixed(2)} s`, '', '');
  row(`  devboxd RSS / peak`, `${memN.rss.toFixed(1)} / ${memN.hwm.toFixed(1)} MiB`, '', '');
  await Promise.all(boxes.map((b) => client.devboxes.shutdown(b.id)));

  // 4. Large stdout from one command, stored to disk, not memory.
  const before = procMem(pid);
  t0 = performance.now();
  const big = await client.devboxes.executions.executeAsync(box.id,
    { command: `head -c ${OUT_BYTES} /dev/zero | tr '\\0' 'x'; echo` });
  const done = await client.devboxes.executions.awaitCompleted(box.id, big.execution_id);
  const tBig = performance.now() - t0;
  // On the devbox's disk (docs/devboxd.md "Disks").
  const file = path.join(engine.stateDir, 'devboxes', box.id, 'sandbox', 'output', `${big.execution_id}.stdout`);
  const size = statSync(file).size;
  const after = procMem(pid);
  row(`${(OUT_BYTES / 2 ** 20).toFixed(0)} MiB stdout stored (${size} bytes)`, `${(tBig / 1000).toFixed(2)} s`, '', '');
  row('  devboxd RSS before / after / peak', `${before.rss.toFixed(1)} / ${after.rss.toFixed(1)} / ${after.hwm.toFixed(1)} MiB`, '', 'peak <= 64 MiB');
  row('  view carries a bounded tail', `${done.stdout.length} chars, truncated=${done.stdout_truncated}`, '', '');
  await client.devboxes.shutdown(box.id);
} finally {
  await engine.cleanup();
}
