// Snapshot benchmark: snapshot of a devbox with 100 MB of new files, and
// devbox-from-snapshot -> running, each printed beside the plain create ->
// running figure measured in the same run (ratio = ours / plain create).
// No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/snapshot_bench.mjs [--quick]
import { Devboxd } from '../../devboxd/tests/api/devboxd.mjs';

const quick = process.argv.includes('--quick');
const N = quick ? 5 : 15;
const MB = 100;

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(1)} ms`;
const row = (what, ours, beside, ratio, target) =>
  console.log(`${what.padEnd(46)} ${String(ours).padEnd(12)} ${String(beside).padEnd(26)} ${String(ratio).padEnd(8)} ${target}`);

const engine = new Devboxd();
await engine.start();
try {
  const client = engine.client();
  console.log(`snapshot benchmark (${quick ? 'quick' : 'full'}, n=${N}), ${engine.baseURL}, official Runloop SDK`);
  row('figure', 'p50', 'plain create->running p50', 'ratio', 'target');

  const plain = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const b = await client.devboxes.createAndAwaitRunning({});
    plain.push(performance.now() - t0);
    await client.devboxes.shutdown(b.id);
  }
  const base = pct(plain, 0.5);

  const src = await client.devboxes.createAndAwaitRunning({ name: 'bench-src' });
  const fill = await client.devboxes.executeAndAwaitCompletion(src.id, {
    command: `mkdir -p ~/data && cd ~/data && head -c ${MB * 1024 * 1024} /dev/urandom | split -b 1048576 -a 3 - f && du -sm ~/data | cut -f1` });
  if (fill.exit_status !== 0) throw new Error(`filling the devbox failed: ${fill.stderr}`);

  const snapT = [];
  const snaps = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const s = await client.devboxes.snapshotDisk(src.id, { name: `bench-${i}` }, { timeout: 600000 });
    snapT.push(performance.now() - t0);
    snaps.push(s);
  }
  const snapP50 = pct(snapT, 0.5);
  row(`snapshot, ${fill.stdout.trim()} MB new files`, ms(snapP50), ms(base), (snapP50 / base).toFixed(2), '<= 1000 ms');
  row('snapshot p90', ms(pct(snapT, 0.9)), '', '', '');

  const fromBig = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const b = await client.devboxes.createAndAwaitRunning({ snapshot_id: snaps[0].id });
    fromBig.push(performance.now() - t0);
    if (b.status !== 'running') throw new Error(`devbox ${b.id} is ${b.status}`);
    await client.devboxes.shutdown(b.id);
  }
  const bigP50 = pct(fromBig, 0.5);
  row(`from the ${MB} MB snapshot -> running`, ms(bigP50), ms(base), (bigP50 / base).toFixed(2), '<= 150 ms');

  const small = await client.devboxes.createAndAwaitRunning({ name: 'bench-small' });
  await client.devboxes.writeFileContents(small.id, { file_path: 'a.txt', contents: 'x'.repeat(4096) });
  const smallSnap = await client.devboxes.snapshotDisk(small.id, {});
  const fromSmall = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const b = await client.devboxes.createAndAwaitRunning({ snapshot_id: smallSnap.id });
    fromSmall.push(performance.now() - t0);
    await client.devboxes.shutdown(b.id);
  }
  const smallP50 = pct(fromSmall, 0.5);
  row('from a 4 KB snapshot -> running', ms(smallP50), ms(base), (smallP50 / base).toFixed(2), '<= 150 ms');

  await client.devboxes.shutdown(small.id);
  await client.devboxes.shutdown(src.id);
  for (const s of [...snaps, smallSnap]) await client.devboxes.diskSnapshots.delete(s.id);
} finally {
  await engine.cleanup();
}
