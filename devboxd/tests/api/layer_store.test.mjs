// The layer store shared by snapshots and blueprints, through the official
// Runloop SDK against a real devboxd: deleting a blueprint or snapshot that
// other snapshots or blueprints are built on succeeds and keeps its layer
// for them (devboxes from them still have its files); the last delete frees
// every layer under it, and the buildah images with them (made only for a
// build FROM a blueprint); a delete while a devbox runs on the layer goes
// through, the devbox runs on and the layer goes when the last such devbox
// ends; the references
// hold across a restart and a kill -9; layer dirs nothing references (an
// orphan, a free cut off by a kill -9 mid-delete) are removed at start.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, rejectsWith, waitFor, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd(), (c) => { client = c; });

const layerDir = (kind, id) => path.join(engine.stateDir, kind, id, 'layer');
const bpLayer = (id) => layerDir('blueprints', id);
const snapLayer = (id) => layerDir('snapshots', id);

// The images in the state dir's own buildah store (devboxd's options).
const imageCache = process.env.RLMCP_IMAGE_CACHE || '/var/cache/runloop-mcp/images';
const buildahImages = () => {
  const root = path.join(engine.stateDir, 'buildah');
  if (!existsSync(path.join(root, 'storage'))) return [];
  return execFileSync('buildah', ['--root', path.join(root, 'storage'), '--runroot', path.join(root, 'run'),
    '--storage-driver', 'overlay', '--storage-opt', `overlay.imagestore=${imageCache}/buildah/storage`,
    'images', '--format', '{{.Name}}:{{.Tag}}'], { encoding: 'utf8' })
    .split('\n').filter(Boolean);
};

// Freed layers are removed in the background: wait for them to go.
async function gone(paths, what) {
  await waitFor(() => paths.every((p) => !existsSync(p)) || null, { timeoutMs: 180000, stepMs: 100, what });
}

async function run(id, command) {
  const r = await client.devboxes.executeAndAwaitCompletion(id, { command });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
}

async function built(body) {
  const b = await client.blueprints.create(body);
  const done = await waitFor(async () => {
    const x = await client.blueprints.retrieve(b.id);
    return ['build_complete', 'failed'].includes(x.status) ? x : null;
  }, { timeoutMs: 300000, stepMs: 200, what: `blueprint ${b.id}` });
  const log = (await client.blueprints.logs(b.id)).logs.map((e) => e.message).join('\n');
  assert.equal(done.status, 'build_complete', log);
  return done;
}

async function restart({ kill = false } = {}) {
  if (kill) {
    engine.proc.kill('SIGKILL');
    await engine.exited;
    engine.proc = null;
  } else {
    await engine.stop();
  }
  await engine.start();
  client = engine.client();
}

describe('layer store', () => {
  let a;
  let b;
  let snap;

  test('a base with a child blueprint and a snapshot on it is deleted; its layer stays for them', async () => {
    a = await built({ name: 'store-a', system_setup_commands: ['echo from-a > ~/a.txt'] });
    b = await built({ name: 'store-b', base_blueprint_id: a.id,
      system_setup_commands: ['echo from-b > ~/b.txt'] });
    assert.equal(b.base_blueprint_id, a.id);

    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: a.id });
    assert.equal((await run(box.id, 'echo from-s > ~/s.txt')).code, 0);
    snap = await client.devboxes.snapshotDisk(box.id, { name: 'on-a' });
    assert.equal(snap.source_blueprint_id, a.id);
    // A live devbox runs on a's files (it mounts a's layer): the delete
    // goes through and the devbox runs on.
    await client.blueprints.delete(a.id);
    assert.equal((await run(box.id, 'cat ~/a.txt && echo more >> ~/s.txt && cat ~/s.txt')).out,
      'from-a\nfrom-s\nmore\n');
    await client.devboxes.shutdown(box.id);

    assert.equal((await client.blueprints.retrieve(a.id)).state, 'deleted');
    assert.ok(!(await client.blueprints.list({ limit: 100 })).blueprints.some((x) => x.id === a.id));
    await rejectsWith(assert, client.devboxes.create({ blueprint_id: a.id }), 404, /not found or not built/);
    assert.ok(existsSync(bpLayer(a.id)), 'the deleted base\'s layer is kept for b and the snapshot');
    // Deleting again is idempotent.
    await client.blueprints.delete(a.id);

    const fromB = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const rb = await run(fromB.id, 'cat ~/a.txt ~/b.txt');
    assert.equal(rb.out, 'from-a\nfrom-b\n', rb.err);
    const fromS = await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id });
    const rs = await run(fromS.id, 'cat ~/a.txt ~/s.txt');
    assert.equal(rs.out, 'from-a\nfrom-s\n', rs.err);
    await client.devboxes.shutdown(fromB.id);
    await client.devboxes.shutdown(fromS.id);
  });

  test('a restart keeps the references and removes layer dirs nothing references', async () => {
    // What a kill can leave: an orphan layer whose record was never
    // written, and a layer renamed for removal but not yet removed.
    const orphans = [path.join(engine.stateDir, 'snapshots', 'snp_orphan0000000000000000'),
      path.join(engine.stateDir, 'blueprints', 'bpt_orphan0000000000000000')];
    for (const o of orphans) {
      mkdirSync(path.join(o, 'layer', 'home', 'user'), { recursive: true });
      writeFileSync(path.join(o, 'layer', 'home', 'user', 'junk'), 'x'.repeat(4096));
    }
    const cutOff = path.join(engine.stateDir, 'blueprints', a.id, 'layer.free');
    mkdirSync(path.join(cutOff, 'etc'), { recursive: true });
    writeFileSync(path.join(cutOff, 'etc', 'junk'), 'x');
    await restart();
    // Removed in the background once devboxd runs.
    await gone([...orphans, cutOff], 'the orphans and the cut-off layer.free dir to be removed after the start');
    for (const l of [bpLayer(a.id), bpLayer(b.id), snapLayer(snap.id)])
      assert.ok(existsSync(l), `${l} was freed at start while referenced`);

    // The snapshot goes: its layer with it, a's stays for b.
    await client.devboxes.diskSnapshots.delete(snap.id);
    assert.equal((await client.devboxes.diskSnapshots.queryStatus(snap.id)).status, 'deleted');
    assert.equal(existsSync(snapLayer(snap.id)), false, 'the deleted snapshot\'s layer remains');
    assert.ok(existsSync(bpLayer(a.id)), 'a\'s layer was freed while b is built on it');

    await restart({ kill: true });
    assert.ok(existsSync(bpLayer(a.id)), 'a\'s layer was freed by a start after a kill while b holds it');
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_name: 'store-b' });
    assert.equal((await run(box.id, 'cat ~/a.txt ~/b.txt')).out, 'from-a\nfrom-b\n');
    await client.devboxes.shutdown(box.id);
  });

  test('deleting the last one built on a deleted base frees both layers and images', async () => {
    const imagesBefore = buildahImages();
    await client.blueprints.delete(b.id);
    assert.equal((await client.blueprints.retrieve(b.id)).state, 'deleted');
    // A sandbox the warm pool keeps ahead on b (the last create used it)
    // holds b's layers until the pool has removed it: freed soon, not at once.
    await waitFor(() => (!existsSync(bpLayer(b.id)) && !existsSync(bpLayer(a.id))) || null,
      { timeoutMs: 60000, stepMs: 100,
        what: 'the layers of b and of its deleted base a to be freed' });
    await gone([`${bpLayer(a.id)}.free`, `${bpLayer(b.id)}.free`], 'the freed layers to be removed');
    // a's image was made for b's build FROM it; b, which nothing is built
    // FROM, never got one (a blueprint's image is made on the first build
    // FROM it).
    assert.ok(imagesBefore.some((n) => n.includes(a.id)),
      `the buildah image of a is there before (nothing to prove): ${imagesBefore}`);
    assert.ok(!imagesBefore.some((n) => n.includes(b.id)),
      `b has a buildah image though nothing was built FROM it: ${imagesBefore}`);
    await waitFor(() => !buildahImages().some((n) => n.includes(a.id) || n.includes(b.id)) || null,
      { timeoutMs: 120000, stepMs: 500, what: 'the buildah images of a and b to be removed' });
    await restart();
    assert.equal((await client.blueprints.retrieve(a.id)).state, 'deleted');
    assert.equal((await client.blueprints.retrieve(b.id)).state, 'deleted');
  });

  test('a kill -9 while a delete removes a layer: the next start finishes it', async () => {
    const box = await client.devboxes.createAndAwaitRunning({ name: 'store-many' });
    const fill = await run(box.id, 'mkdir -p ~/many && cd ~/many && ' +
      'head -c 40000000 /dev/urandom | split -b 2000 -a 5 - f && ls | wc -l');
    assert.equal(fill.out, '20000\n', fill.err);
    const s = await client.devboxes.snapshotDisk(box.id, {});
    await client.devboxes.shutdown(box.id);
    const freeing = `${snapLayer(s.id)}.free`;
    let answered = false;
    const del = engine.raw('POST', `/v1/devboxes/disk_snapshots/${s.id}/delete`)
      .catch(() => null).finally(() => { answered = true; });
    // Kill as soon as the layer is being removed (or, on a quick machine,
    // once the delete answered): any moment must end the same way.
    await waitFor(() => existsSync(freeing) || answered || null,
      { timeoutMs: 60000, stepMs: 1, what: 'the delete to start removing the layer' });
    const cut = existsSync(freeing);
    await restart({ kill: true });
    await del;
    console.log(`# killed ${cut ? 'while the layer was being removed' : 'after the delete ended'}`);
    assert.equal((await client.devboxes.diskSnapshots.queryStatus(s.id)).status, 'deleted');
    assert.equal(existsSync(snapLayer(s.id)), false);
    await gone([freeing], 'the layer cut off by the kill to be removed after the start');
  });
});

// A blueprint FROM another keeps the base's layer when the base is deleted
// (once the native builder's case; buildah builds the same way now).
describe('layer store, a child FROM its base', () => {
  const native = new Devboxd();
  let nc;
  useEngine(native, (c) => { nc = c; });

  test('a base deleted under its child stays for it; the child\'s delete frees both', async () => {
    const settle = async (body) => {
      const x = await nc.blueprints.create(body);
      const done = await waitFor(async () => {
        const r = await nc.blueprints.retrieve(x.id);
        return ['build_complete', 'failed'].includes(r.status) ? r : null;
      }, { timeoutMs: 300000, stepMs: 200, what: `blueprint ${x.id}` });
      assert.equal(done.status, 'build_complete', JSON.stringify(await nc.blueprints.logs(x.id)));
      return done;
    };
    const base = await settle({ name: 'n-base', system_setup_commands: ['echo n-base > ~/n.txt'] });
    // USER user: a RUN step is root's otherwise, and ~ would be /root.
    const kid = await settle({ name: 'n-kid', dockerfile: `FROM runloop:${base.id}\nUSER user\nRUN echo n-kid >> ~/n.txt\n` });
    assert.equal(kid.base_blueprint_id, base.id);
    const layer = (id) => path.join(native.stateDir, 'blueprints', id, 'layer');
    await nc.blueprints.delete(base.id);
    assert.ok(existsSync(layer(base.id)));
    const box = await nc.devboxes.createAndAwaitRunning({ blueprint_id: kid.id });
    const r = await nc.devboxes.executeAndAwaitCompletion(box.id, { command: 'cat ~/n.txt' });
    assert.equal(r.stdout, 'n-base\nn-kid\n', r.stderr);
    // Deleted while a devbox runs on it: both layers stay for the devbox,
    // which runs on, and go when it ends.
    await nc.blueprints.delete(kid.id);
    assert.ok(existsSync(layer(kid.id)) && existsSync(layer(base.id)), 'a layer a running devbox mounts was freed');
    const again = await nc.devboxes.executeAndAwaitCompletion(box.id, { command: 'cat ~/n.txt' });
    assert.equal(again.stdout, 'n-base\nn-kid\n', again.stderr);
    await nc.devboxes.shutdown(box.id);
    await waitFor(() => (!existsSync(layer(kid.id)) && !existsSync(layer(base.id))) || null,
      { timeoutMs: 60000, what: 'both layers to go once the last devbox on them ended' });
  });
});
