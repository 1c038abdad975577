// Layer store benchmark: devboxd beside a peer devboxd binary (e.g. one
// built before the shared layer store), same run, same machine.
//  1. delete of a snapshot of 20,000 files: time until the delete answers,
//     the longest registry request (GET /v1/devboxes/disk_snapshots, which
//     takes the registry lock) answered while it runs, and time until the
//     layer's space is back;
//  2. blueprint A (40 MB of files), B FROM A, then the user deletes A, then
//     B: which deletes succeed and the layer bytes left in the state dir.
// No assertions: figures only.
//   RLMCP_BUILD_DIR=build node tests/bench/layer_store_bench.mjs PEER_DEVBOXD
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Devboxd, waitFor } from '../../devboxd/tests/api/devboxd.mjs';

const peerBin = process.argv[2];
if (!peerBin || !existsSync(peerBin)) {
  console.error('usage: node tests/bench/layer_store_bench.mjs PEER_DEVBOXD');
  process.exit(2);
}

const du = (dir) => (existsSync(dir)
  ? Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]) : 0);
const layerBytes = (state) => du(path.join(state, 'snapshots')) + du(path.join(state, 'blueprints'));
const layersLeft = (state, kind, id) => existsSync(path.join(state, kind, id, 'layer')) ||
  existsSync(path.join(state, kind, id, 'layer.free'));

async function settled(client, body) {
  const b = await client.blueprints.create(body);
  return waitFor(async () => {
    const x = await client.blueprints.retrieve(b.id);
    return ['build_complete', 'failed'].includes(x.status) ? x : null;
  }, { timeoutMs: 600000, stepMs: 200, what: `blueprint ${b.id}` });
}

async function deleteBig(engine, client) {
  const box = await client.devboxes.createAndAwaitRunning({ name: 'bench-many' });
  const fill = await client.devboxes.executeAndAwaitCompletion(box.id, { command:
    'mkdir -p ~/many && cd ~/many && head -c 40000000 /dev/urandom | split -b 2000 -a 5 - f' });
  if (fill.exit_status !== 0) throw new Error(`filling the devbox failed: ${fill.stderr}`);
  const s = await client.devboxes.snapshotDisk(box.id, {}, { timeout: 600000 });
  await client.devboxes.shutdown(box.id);
  let done = false;
  let worst = 0;
  const t0 = performance.now();
  const del = client.devboxes.diskSnapshots.delete(s.id, { timeout: 600000 })
    .then(() => performance.now() - t0).finally(() => { done = true; });
  while (!done) {
    const t1 = performance.now();
    await engine.raw('GET', '/v1/devboxes/disk_snapshots?limit=1');
    worst = Math.max(worst, performance.now() - t1);
    await new Promise((r) => setTimeout(r, 20));
  }
  const answered = await del;
  await waitFor(() => !layersLeft(engine.stateDir, 'snapshots', s.id) || null,
    { timeoutMs: 600000, stepMs: 50, what: 'the layer to be removed' });
  return { answered, worst, freed: performance.now() - t0 };
}

async function baseThenChild(engine, client) {
  const a = await settled(client, { name: 'bench-a',
    system_setup_commands: ['head -c 40000000 /dev/urandom > ~/a.bin'] });
  const b = await settled(client, { name: 'bench-b', base_blueprint_id: a.id,
    system_setup_commands: ['echo b > ~/b.txt'] });
  if (a.status !== 'build_complete' || b.status !== 'build_complete') throw new Error('a build failed');
  const before = layerBytes(engine.stateDir);
  const answers = [];
  for (const id of [a.id, b.id]) {
    const r = await engine.raw('POST', `/v1/blueprints/${id}/delete`);
    answers.push(r.status);
  }
  await waitFor(() => (!layersLeft(engine.stateDir, 'blueprints', b.id) &&
    !existsSync(path.join(engine.stateDir, 'blueprints', a.id, 'layer.free'))) || null,
  { timeoutMs: 600000, stepMs: 50, what: 'the freed layers to be removed' });
  return { before, answers, after: layerBytes(engine.stateDir) };
}

async function measure(bin) {
  const engine = new Devboxd();
  engine.bin = bin;
  await engine.start();
  try {
    const client = engine.client();
    return { big: await deleteBig(engine, client), chain: await baseThenChild(engine, client) };
  } finally {
    await engine.cleanup();
  }
}

const ours = await measure(new Devboxd().bin);
const peer = await measure(peerBin);
const mb = (x) => `${(x / 1e6).toFixed(1)} MB`;
const ms = (x) => `${x.toFixed(0)} ms`;
const row = (what, o, p) => console.log(`${what.padEnd(58)} ${String(o).padEnd(16)} ${p}`);
row('figure', 'devboxd', 'peer');
row('delete of a 20,000-file snapshot answered after', ms(ours.big.answered), ms(peer.big.answered));
row('slowest registry GET answered during that delete', ms(ours.big.worst), ms(peer.big.worst));
row('its space back after', ms(ours.big.freed), ms(peer.big.freed));
row('delete A (B built on it), then B: HTTP status', ours.chain.answers.join(', '), peer.chain.answers.join(', '));
row('layer bytes before / after those deletes', `${mb(ours.chain.before)} / ${mb(ours.chain.after)}`,
  `${mb(peer.chain.before)} / ${mb(peer.chain.after)}`);
