// devboxd runtimes side by side in one run: root inside under runc on the
// starter image (the default) beside bubblewrap on the host's /usr (the
// engine before images, RLMCP_DEVBOX_RUNTIME=bwrap RLMCP_DEVBOX_IMAGE=host).
// Same binary, same machine, one engine after the other. Figures only.
// Also the starter image's cold build (into an empty cache of its own, so
// the machine's cache is untouched) and warm lookup, and its size.
//   RLMCP_BUILD_DIR=build node tests/bench/devboxd_runtime_bench.mjs [--quick]
//       [--no-cold | --only-images]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Devboxd, sourceDir } from '../../devboxd/tests/api/devboxd.mjs';
import { createLatencies, execLatencies, ms, pct } from './devboxd_measure.mjs';

const quick = process.argv.includes('--quick');
const N_CREATE = quick ? 10 : 30;
const N_EXEC = quick ? 100 : 300;
const N_BOXES = quick ? 20 : 100;

const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(40)} ${String(ours).padEnd(24)} ${String(peer).padEnd(24)} ${target}`);

async function measure(env) {
  const engine = new Devboxd({ env });
  await engine.start();
  const client = engine.client();
  try {
    const create = await createLatencies(client, N_CREATE);
    const box = await client.devboxes.createAndAwaitRunning({});
    const exec = await execLatencies(client, box.id, N_EXEC);
    await client.devboxes.shutdown(box.id);
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
    return { create, exec, up, nUp: running.length, run, ok };
  } finally {
    await engine.cleanup();
  }
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

const peer = await measure({ RLMCP_DEVBOX_RUNTIME: 'bwrap', RLMCP_DEVBOX_IMAGE: 'host' });
const ours = await measure({ RLMCP_DEVBOX_RUNTIME: 'runc', RLMCP_DEVBOX_IMAGE: 'starter' });
console.log(`devboxd runtimes (${quick ? 'quick' : 'full'}), official Runloop SDK, h2c`);
row('figure', 'runc, starter image', 'bwrap, host /usr', 'target');
row(`create -> running p50 (n=${N_CREATE})`, ms(pct(ours.create, 0.5)), ms(pct(peer.create, 0.5)), '< 100 ms');
row('create -> running p90', ms(pct(ours.create, 0.9)), ms(pct(peer.create, 0.9)), '');
row(`execute "true" p50 (n=${N_EXEC})`, ms(pct(ours.exec, 0.5)), ms(pct(peer.exec, 0.5)), '< 10 ms');
row('execute "true" p90', ms(pct(ours.exec, 0.9)), ms(pct(peer.exec, 0.9)), '');
row(`${N_BOXES} concurrent devboxes: all running`, `${ours.up.toFixed(2)} s (${ours.nUp} up)`,
  `${peer.up.toFixed(2)} s (${peer.nUp} up)`, `${N_BOXES} up`);
row(`  one command in each`, `${ours.run.toFixed(2)} s (ok ${ours.ok})`, `${peer.run.toFixed(2)} s (ok ${peer.ok})`, '');
if (cold) imageRows();
