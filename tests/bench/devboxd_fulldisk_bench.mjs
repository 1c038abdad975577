// What disk admission costs a create: this build (each create counts the
// disk it needs against the state filesystem's free space, scanning the
// devboxes' images) beside a peer build without it, taking turns in one
// run, N devboxes kept running on each so the scan grows.  Also what the
// alternative would have cost: allocating each 4 GiB disk up front
// (fallocate) on the same filesystem.  Figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/devboxd_fulldisk_bench.mjs PEER_DEVBOXD [--quick]
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Devboxd } from '../../devboxd/tests/api/devboxd.mjs';

const peerBin = process.argv[2];
if (!peerBin || peerBin.startsWith('--')) {
  console.error('usage: devboxd_fulldisk_bench.mjs PEER_DEVBOXD [--quick]');
  process.exit(2);
}
const quick = process.argv.includes('--quick');
const N = quick ? 8 : 30;
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const fmt = (xs) => `p50 ${pct(xs, 0.5).toFixed(1)} ms, p90 ${pct(xs, 0.9).toFixed(1)} ms`;
const row = (what, ours, peer) => console.log(`${what.padEnd(40)} ${String(ours).padEnd(30)} ${peer}`);
const env = { RLMCP_DEVBOX_IMAGE: 'starter', RLMCP_WARM_POOL: '0' };
const spec = { launch_parameters: { custom_disk_size: 0.25 } };

const sides = [
  { name: 'ours', engine: new Devboxd({ env }) },
  { name: 'peer', engine: new Devboxd({ env }) },
];
sides[1].engine.bin = peerBin;
for (const s of sides) {
  await s.engine.start();
  s.client = s.engine.client();
  Object.assign(s, { post: [], running: [], ids: [] });
}
try {
  for (let i = 0; i < N; i++) {
    for (const s of sides) {
      const t0 = performance.now();
      const box = await s.client.devboxes.create(spec);
      s.post.push(performance.now() - t0);
      await s.client.devboxes.awaitRunning(box.id);
      s.running.push(performance.now() - t0);
      s.ids.push(box.id);
    }
  }
  const fa = [];
  const f = path.join(sides[0].engine.stateDir, 'fallocate-probe');
  for (let i = 0; i < (quick ? 3 : 10); i++) {
    const t0 = performance.now();
    execFileSync('fallocate', ['-l', '4G', f]);
    fa.push(performance.now() - t0);
    rmSync(f);
  }
  row('', 'this build', 'peer (no disk admission)');
  row('create: POST /v1/devboxes', fmt(sides[0].post), fmt(sides[1].post));
  row('create -> running', fmt(sides[0].running), fmt(sides[1].running));
  row('fallocate -l 4G (the alternative)', fmt(fa), '');
} finally {
  for (const s of sides) {
    for (const id of s.ids) await s.client.devboxes.shutdown(id).catch(() => {});
    await s.engine.cleanup();
  }
}
