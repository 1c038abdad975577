// Snapshot benchmark: snapshot of a devbox with 100 MB of new files,
// devbox-from-snapshot -> running as a ratio to the plain create -> running
// of the same engine in the same run, and the state-dir space each further
// devbox from that snapshot adds, for this build beside a peer devboxd
// binary (e.g. main built in /tmp). No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/snapshot_bench.mjs [PEER_DEVBOXD] [--quick]
// PEER_DEVBOXD defaults to /tmp/rlmcp-peer-244ee15/build/bin/devboxd when it exists.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Devboxd } from '../../devboxd/tests/api/devboxd.mjs';

const quick = process.argv.includes('--quick');
const N = quick ? 5 : 15;
const MB = 100;
const KEEP = 9; // devboxes from the snapshot kept running for the space figure
const defaultPeer = '/tmp/rlmcp-peer-244ee15/build/bin/devboxd';
const peerArg = process.argv.slice(2).find((a) => !a.startsWith('--'));
const peerBin = peerArg ?? (existsSync(defaultPeer) ? defaultPeer : null);
if (peerBin && !existsSync(peerBin)) {
  console.error(`no peer devboxd at ${peerBin}`);
  process.exit(2);
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(1)} ms`;
const row = (what, ours, peer, target) =>
  console.log(`${what.padEnd(48)} ${String(ours).padEnd(22)} ${String(peer).padEnd(22)} ${target}`);
const duKiB = (dir) => Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]);

async function timed(f) {
  const t0 = performance.now();
  const v = await f();
  return [performance.now() - t0, v];
}

async function measure(bin) {
  const engine = new Devboxd();
  if (bin) engine.bin = bin;
  await engine.start();
  try {
    const client = engine.client();
    const out = {};
    // Interleaved, so that both sides of the ratio see the same load.
    const plain = [];
    const fromBig = [];
    const src = await client.devboxes.createAndAwaitRunning({ name: 'bench-src' });
    const fill = await client.devboxes.executeAndAwaitCompletion(src.id, {
      command: `mkdir -p ~/data && cd ~/data && head -c ${MB * 1024 * 1024} /dev/urandom | split -b 1048576 -a 3 - f && du -sm ~/data | cut -f1` });
    if (fill.exit_status !== 0) throw new Error(`filling the devbox failed: ${fill.stderr}`);
    out.filled = fill.stdout.trim();

    const snapT = [];
    const snaps = [];
    for (let i = 0; i < N; i++) {
      const [t, s] = await timed(() => client.devboxes.snapshotDisk(src.id, { name: `bench-${i}` }, { timeout: 600000 }));
      snapT.push(t);
      snaps.push(s);
    }
    for (let i = 0; i < N; i++) {
      const [tp, p] = await timed(() => client.devboxes.createAndAwaitRunning({}));
      plain.push(tp);
      await client.devboxes.shutdown(p.id);
      const [tb, b] = await timed(() => client.devboxes.createAndAwaitRunning({ snapshot_id: snaps[0].id }));
      if (b.status !== 'running') throw new Error(`devbox ${b.id} is ${b.status}`);
      fromBig.push(tb);
      await client.devboxes.shutdown(b.id);
    }
    out.plain = pct(plain, 0.5);
    out.fromBig = pct(fromBig, 0.5);
    out.snap = pct(snapT, 0.5);
    out.snap90 = pct(snapT, 0.9);

    // Space: KEEP devboxes from the snapshot, running, each one's files read.
    const before = duKiB(engine.stateDir);
    const kept = [];
    for (let i = 0; i < KEEP; i++) {
      const b = await client.devboxes.createAndAwaitRunning({ snapshot_id: snaps[0].id });
      kept.push(b);
    }
    out.perBoxMiB = (duKiB(engine.stateDir) - before) / KEEP / 1024;
    for (const b of kept) await client.devboxes.shutdown(b.id);

    await client.devboxes.shutdown(src.id);
    for (const s of snaps) await client.devboxes.diskSnapshots.delete(s.id);
    return out;
  } finally {
    await engine.cleanup();
  }
}

console.log(`snapshot benchmark (${quick ? 'quick' : 'full'}, n=${N}), official Runloop SDK; peer: ${peerBin ?? 'none'}`);
const ours = await measure(null);
const peer = peerBin ? await measure(peerBin) : null;
const side = (f) => (peer ? f(peer) : '-');
const ratio = (o) => `${(o.fromBig / o.plain).toFixed(2)}x (${ms(o.fromBig)}/${ms(o.plain)})`;
row('figure', 'this build', 'peer', 'target');
row(`snapshot of ${ours.filled} MB new files, p50`, ms(ours.snap), side((p) => ms(p.snap)), '<= 300 ms');
row('snapshot p90', ms(ours.snap90), side((p) => ms(p.snap90)), '');
row(`from the ${MB} MB snapshot -> running / plain, p50`, ratio(ours), side(ratio), '<= 1.5x');
row(`state dir added per devbox from it (${KEEP} running)`, `${ours.perBoxMiB.toFixed(1)} MiB`,
  side((p) => `${p.perBoxMiB.toFixed(1)} MiB`), '<= 3 MB');
