// The warm pool (devboxd/engine/warm_pool.h), through the official Runloop
// SDK: a plain create takes the sandbox started ahead (its id is the
// pool's dir), a create asking for more does not, the pool refills, a
// snapshot devboxes are created from gets a sandbox ahead on its layers,
// neither a clean stop nor kill -9 leaves a pool sandbox behind, and an
// image another process builds later starts the pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Devboxd, devboxdBin, waitFor } from './devboxd.mjs';

const CG = '/sys/fs/cgroup';
const groups = (id) => readdirSync(CG).filter((ctl) => existsSync(path.join(CG, ctl, 'devboxd', id)));
const procsIn = (id) => {
  const f = path.join(CG, 'pids', 'devboxd', id, 'cgroup.procs');
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean) : [];
};

// Devbox dirs without a record: the pool's sandboxes.
const poolDirs = (stateDir) => {
  const d = path.join(stateDir, 'devboxes');
  if (!existsSync(d)) return [];
  return readdirSync(d).filter((n) => n.startsWith('dbx_') && !existsSync(path.join(d, n, 'devbox.json')));
};
// A pool sandbox that is up: its agent runs in the sandbox's cgroup.
const readyPool = (stateDir) => poolDirs(stateDir).filter((id) => procsIn(id).length > 0);
const waitReady = (engine, what) => waitFor(() => {
  const r = readyPool(engine.stateDir);
  return r.length > 0 ? r : null;
}, { timeoutMs: 120000, what });

test('a plain create takes the warm sandbox; a create asking for more starts its own', async (t) => {
  const engine = new Devboxd();
  t.after(async () => { await engine.cleanup(); });
  await engine.start();
  const client = engine.client();
  const [warm] = await waitReady(engine, 'a sandbox started ahead');

  const box = await client.devboxes.createAndAwaitRunning({ name: 'plain' });
  assert.equal(box.id, warm, 'the plain create did not take the warm sandbox');
  assert.equal(box.status, 'running');
  const who = await client.devboxes.executeAndAwaitCompletion(box.id, { command: 'id -u; hostname' });
  assert.equal(who.exit_status, 0, who.stderr);
  assert.deepEqual(who.stdout.trim().split('\n'), ['1000', warm]);

  // The pool refills with another sandbox.
  const [next] = await waitReady(engine, 'the pool to refill');
  assert.notEqual(next, warm);

  // Environment variables, a size or a user are not in the warm sandbox.
  const custom = [
    { environment_variables: { POOL_CHECK: 'yes' } },
    { launch_parameters: { resource_size_request: 'MEDIUM' } },
    { launch_parameters: { user_parameters: { username: 'root', uid: 0 } } },
  ];
  for (const body of custom) {
    const b = await client.devboxes.createAndAwaitRunning(body);
    assert.notEqual(b.id, next, `${JSON.stringify(body)} took the warm sandbox`);
    assert.ok(poolDirs(engine.stateDir).includes(next), 'the warm sandbox went');
    const r = await client.devboxes.executeSync(b.id, { command: 'echo "$POOL_CHECK"; id -un' });
    assert.equal(r.exit_status, 0, r.stderr);
    if (body.environment_variables) assert.equal(r.stdout.split('\n')[0], 'yes');
    if (body.launch_parameters?.user_parameters) assert.equal(r.stdout.split('\n')[1], 'root');
    await client.devboxes.shutdown(b.id);
  }

  // A devbox from the pool lives like any other: suspend, resume, shutdown.
  await client.devboxes.suspend(box.id);
  await client.devboxes.awaitSuspended(box.id);
  await client.devboxes.resume(box.id);
  const back = await client.devboxes.awaitRunning(box.id);
  assert.equal(back.status, 'running');
  await client.devboxes.writeFileContents(box.id, { file_path: '/home/user/x', contents: 'kept' });
  const read = await client.devboxes.readFileContents(box.id, { file_path: '/home/user/x' });
  assert.equal(read, 'kept');
  await client.devboxes.shutdown(box.id);
  await waitFor(() => groups(box.id).length === 0 || null, { timeoutMs: 60000, what: 'its cgroups to go' });

  // A clean stop removes the standing sandbox: files, cgroups, processes.
  await engine.stop();
  assert.deepEqual(poolDirs(engine.stateDir), [], 'a pool dir is left after the stop');
  assert.deepEqual(groups(next), [], 'the pool sandbox\'s cgroups are left after the stop');
});

test('a snapshot devboxes are created from gets a sandbox ahead on its layers', async (t) => {
  const engine = new Devboxd();
  t.after(async () => { await engine.cleanup(); });
  await engine.start();
  const client = engine.client();
  await waitReady(engine, 'a sandbox started ahead');
  const src = await client.devboxes.createAndAwaitRunning({ name: 'hot-src' });
  assert.equal((await client.devboxes.executeAndAwaitCompletion(src.id,
    { command: 'echo hot > ~/hot.txt && sudo sh -c "echo etc > /etc/hot.conf"' })).exit_status, 0);
  const snap = await client.devboxes.snapshotDisk(src.id, {});
  const before = new Set(poolDirs(engine.stateDir));

  // The first devbox from it starts its own sandbox; the snapshot is hot now.
  const first = await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id });
  assert.ok(!before.has(first.id), 'a plain warm sandbox was taken for a snapshot');
  const [hot] = await waitFor(() => {
    const r = readyPool(engine.stateDir).filter((id) => !before.has(id));
    return r.length > 0 ? r : null;
  }, { timeoutMs: 120000, what: 'a sandbox ahead on the snapshot' });

  // The next one takes it, with the snapshot's files, writable, as its own.
  const second = await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id });
  assert.equal(second.id, hot, 'the devbox from the snapshot did not take the sandbox ahead on it');
  assert.equal(second.snapshot_id, snap.id);
  const r = await client.devboxes.executeAndAwaitCompletion(second.id,
    { command: 'cat ~/hot.txt /etc/hot.conf && stat -c %u ~/hot.txt /etc/hot.conf && echo more >> ~/hot.txt && cat ~/hot.txt' });
  assert.equal(r.exit_status, 0, r.stderr);
  assert.equal(r.stdout, 'hot\netc\n1000\n0\nhot\nmore\n');
  // A plain create never takes a sandbox on layers.
  const [nextHot] = await waitFor(() => {
    const n = readyPool(engine.stateDir).filter((id) => !before.has(id) && id !== hot);
    return n.length > 0 ? n : null;
  }, { timeoutMs: 120000, what: 'the snapshot\'s sandbox ahead to refill' });
  const plain = await client.devboxes.createAndAwaitRunning({});
  assert.notEqual(plain.id, nextHot);
  const p = await client.devboxes.executeAndAwaitCompletion(plain.id, { command: 'test -e ~/hot.txt && echo has || echo none' });
  assert.equal(p.stdout, 'none\n');

  // Deleting the snapshot removes the sandbox ahead on it; its layer stays
  // while that sandbox mounts it, and goes after.
  for (const b of [first, second, plain, src]) await client.devboxes.shutdown(b.id);
  const layer = path.join(engine.stateDir, 'snapshots', snap.id, 'layer');
  assert.ok(existsSync(layer), `${layer} exists before the delete`);
  assert.ok(procsIn(nextHot).length > 0, 'the sandbox ahead runs');
  await client.devboxes.diskSnapshots.delete(snap.id);
  await waitFor(() => {
    // The layer first, the sandbox after: a layer gone while the sandbox
    // still runs was freed under its mount.
    const gone = !existsSync(layer);
    if (gone) assert.deepEqual(procsIn(nextHot), [], 'the layer was freed under the live sandbox ahead');
    return !existsSync(path.join(engine.stateDir, 'devboxes', nextHot)) || null;
  }, { timeoutMs: 60000, stepMs: 5, what: 'the sandbox ahead on the deleted snapshot to go' });
  assert.deepEqual(groups(nextHot), [], 'its cgroups are left');
  await waitFor(() => (!existsSync(layer) && !existsSync(`${layer}.free`)) || null,
    { timeoutMs: 60000, what: 'the deleted snapshot\'s layer to be freed once no sandbox holds it' });
});

test('kill -9 with a warm sandbox standing: the next start removes it', async (t) => {
  const engine = new Devboxd();
  t.after(async () => { await engine.cleanup(); });
  await engine.start();
  const [warm] = await waitReady(engine, 'a sandbox started ahead');
  engine.proc.kill('SIGKILL');
  await engine.exited;
  engine.proc = null;

  await engine.start();
  await waitFor(() => !existsSync(path.join(engine.stateDir, 'devboxes', warm)) || null,
    { timeoutMs: 60000, what: 'the old pool dir to be removed' });
  assert.match(engine.stderr, new RegExp(`removed .*${warm}`));
  assert.deepEqual(groups(warm), [], 'the killed engine\'s pool sandbox kept its cgroups');
  assert.ok(!existsSync(path.join(engine.stateDir, 'sandbox', 'runc', warm)),
    'runc\'s state of the killed pool sandbox is left');
  assert.deepEqual(readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .filter((l) => l.includes(warm)), [], 'a mount of the killed pool sandbox is left');
  const [fresh] = await waitReady(engine, 'a new sandbox ahead');
  const box = await engine.client().devboxes.createAndAwaitRunning({});
  assert.equal(box.id, fresh);
});

test('RLMCP_WARM_POOL: 0 turns the pool off; a bad value is refused at start', async (t) => {
  const off = new Devboxd({ env: { RLMCP_WARM_POOL: '0' } });
  t.after(async () => { await off.cleanup(); });
  await off.start();
  const box = await off.client().devboxes.createAndAwaitRunning({});
  assert.deepEqual(poolDirs(off.stateDir), [], 'a sandbox was started ahead with the pool off');
  assert.ok(existsSync(path.join(off.stateDir, 'devboxes', box.id, 'devbox.json')));

  for (const bad of ['-1', '9', 'two']) {
    const r = spawnSync(devboxdBin, ['--state-dir', off.stateDir + '-bad', '--listen', '127.0.0.1:0'],
      { env: { ...process.env, RLMCP_WARM_POOL: bad }, encoding: 'utf8', timeout: 30000 });
    assert.notEqual(r.status, 0, `RLMCP_WARM_POOL=${bad} was accepted`);
    assert.match(r.stderr, new RegExp(`RLMCP_WARM_POOL="${bad}" is not a whole number from 0 to 8`));
  }
  spawnSync('rm', ['-rf', off.stateDir + '-bad']);
});

test('an image built later by another process starts the pool; the builder is asked ever less often', async (t) => {
  // devboxd from a dir of its own, whose devboxd-image notes each call and
  // runs the real one; its image cache starts empty.
  const binDir = path.dirname(devboxdBin);
  const realBuilder = path.join(binDir, 'devboxd-image');
  const image = process.env.RLMCP_DEVBOX_IMAGE || 'starter';
  const rootfs = spawnSync(realBuilder, ['--check', image], { encoding: 'utf8' }).stdout.trim();
  if (!rootfs.startsWith('/')) {
    t.skip(`the ${image} image is not built (devboxd-image --check ${image})`);
    return;
  }
  const tmp = mkdtempSync(path.join(tmpdir(), 'devboxd-pool-image-'));
  const bin = path.join(tmp, 'bin');
  const cache = path.join(tmp, 'cache');
  const calls = path.join(tmp, 'builder-calls');
  mkdirSync(bin);
  mkdirSync(cache);
  for (const f of readdirSync(binDir).filter((n) => n.startsWith('devboxd-') && n !== 'devboxd-image')) {
    symlinkSync(path.join(binDir, f), path.join(bin, f));
  }
  copyFileSync(devboxdBin, path.join(bin, 'devboxd'));
  writeFileSync(path.join(bin, 'devboxd-image'), `#!/bin/sh\necho "$*" >> '${calls}'\nexec '${realBuilder}' "$@"\n`,
    { mode: 0o755 });
  const checks = () => (existsSync(calls) ? readFileSync(calls, 'utf8') : '').split('\n')
    .filter((l) => l === `--check ${image}`).length;
  const engine = new Devboxd({ env: { RLMCP_WARM_POOL: '1', RLMCP_IMAGE_CACHE: cache } });
  engine.bin = path.join(bin, 'devboxd');
  t.after(async () => {
    await engine.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  });
  await engine.start();

  // Not built: the pool waits, asking after 5, 10, 20 s... (not every 5 s).
  await waitFor(() => checks() >= 1 || null, { timeoutMs: 30000, what: 'the first --check' });
  await new Promise((r) => setTimeout(r, 25000));
  const asked = checks();
  assert.ok(asked >= 2 && asked <= 4, `${asked} --check calls in 25 s`);
  assert.deepEqual(poolDirs(engine.stateDir), [], 'a sandbox was started ahead without the image');

  // Another process builds it (here: the machine's copy appears in the cache).
  symlinkSync(path.dirname(rootfs), path.join(cache, path.basename(path.dirname(rootfs))));
  await waitFor(() => (readyPool(engine.stateDir).length > 0 ? true : null),
    { timeoutMs: 150000, what: 'the pool to start once the image is there' });
  // Found once: no more asking.
  const after = checks();
  await new Promise((r) => setTimeout(r, 12000));
  assert.equal(checks(), after, 'the builder was asked again after the image was found');
  const box = await engine.client().devboxes.createAndAwaitRunning({});
  assert.ok(box.id.startsWith('dbx_'));
});
