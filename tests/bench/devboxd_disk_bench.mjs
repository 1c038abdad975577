// Devbox disks side by side in one run: every devbox on a loop-mounted ext4
// of its size (the default) beside the same binary with
// RLMCP_DEVBOX_DISK=off (disk sizes advisory, the engine before disks).
// Both engines run at once and take turns, so machine load hits both alike.
// Figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/devboxd_disk_bench.mjs [--quick]
// (runc on the starter image, the one runtime; --runc is still accepted)
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Devboxd } from '../../devboxd/tests/api/devboxd.mjs';

const quick = process.argv.includes('--quick');
const N_CREATE = quick ? 10 : 30;
const N_EXEC = quick ? 100 : 300;
const MiB = 1 << 20;

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(1)} ms`;
const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(44)} ${String(ours).padEnd(26)} ${String(peer).padEnd(26)} ${target}`);
const runtime = { RLMCP_DEVBOX_IMAGE: 'starter' };

const sides = [
  { name: 'loop ext4', engine: new Devboxd({ env: { ...runtime } }) },
  { name: 'off', engine: new Devboxd({ env: { ...runtime, RLMCP_DEVBOX_DISK: 'off' } }) },
];
for (const s of sides) {
  await s.engine.start();
  s.client = s.engine.client();
  Object.assign(s, { create: [], down: [], exec: [] });
}

// What the host gave a devbox: its dir on the host's filesystem (with the
// disk: the image's blocks; without: everything in it).
const hostBytes = (s, id) => Number(execFileSync('du', ['-s', '-B1', ...(s.name === 'off' ? [] : ['-x']),
  path.join(s.engine.stateDir, 'devboxes', id)]).toString().split('\t')[0]);

try {
  for (let i = 0; i < N_CREATE; i++) {
    for (const s of i % 2 ? sides : [...sides].reverse()) {
      let t0 = performance.now();
      const b = await s.client.devboxes.createAndAwaitRunning({}, { timeout: 600000 });
      s.create.push(performance.now() - t0);
      if (b.status !== 'running') throw new Error(`${s.name}: devbox ${b.id} is ${b.status}`);
      t0 = performance.now();
      await s.client.devboxes.shutdown(b.id);
      s.down.push(performance.now() - t0);
    }
  }
  for (const s of sides) s.box = await s.client.devboxes.createAndAwaitRunning({});
  for (let i = 0; i < N_EXEC; i++) {
    for (const s of sides) {
      const t0 = performance.now();
      const r = await s.client.devboxes.execute(s.box.id, { command: 'true', command_id: `b-${i}` });
      s.exec.push(performance.now() - t0);
      if (r.status !== 'completed' || r.exit_status !== 0) throw new Error('execute failed');
    }
  }
  for (const s of sides) await s.client.devboxes.shutdown(s.box.id);
  // 400 MiB written into a devbox whose size is 0.25 GiB.
  for (const s of sides) {
    const b = await s.client.devboxes.createAndAwaitRunning({ launch_parameters: { custom_disk_size: 0.25 } });
    const t0 = performance.now();
    const r = await s.client.devboxes.executeSync(b.id,
      { command: 'dd if=/dev/zero of=$HOME/big bs=1M count=400 status=none' }, { timeout: 600000 });
    s.ddMs = performance.now() - t0;
    s.ddCode = r.exit_status;
    s.ddHost = hostBytes(s, b.id);
    await s.client.devboxes.shutdown(b.id);
  }
} finally {
  for (const s of sides) await s.engine.cleanup();
}

const [ours, peer] = sides;
console.log(`devbox disks (${quick ? 'quick' : 'full'}, runc, starter image), `
  + 'official Runloop SDK, h2c, both engines in turn');
row('figure', 'loop ext4 (default)', 'RLMCP_DEVBOX_DISK=off', 'target');
row(`create -> running p50 (n=${N_CREATE})`, ms(pct(ours.create, 0.5)), ms(pct(peer.create, 0.5)), '< 100 ms');
row('create -> running p90', ms(pct(ours.create, 0.9)), ms(pct(peer.create, 0.9)), '');
row('shutdown p50', ms(pct(ours.down, 0.5)), ms(pct(peer.down, 0.5)), '');
row(`execute "true" p50 (n=${N_EXEC})`, ms(pct(ours.exec, 0.5)), ms(pct(peer.exec, 0.5)), '< 10 ms');
row('dd 400 MiB into a 0.25 GiB devbox: exit', ours.ddCode, peer.ddCode, 'non-zero');
row('  host bytes the devbox then held', `${(ours.ddHost / MiB).toFixed(1)} MiB`,
  `${(peer.ddHost / MiB).toFixed(1)} MiB`, '<= 256 MiB');
row('  time', ms(ours.ddMs), ms(peer.ddMs), '');
