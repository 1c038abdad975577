// kill -9 of devboxd while a blueprint builds, a snapshot is being copied
// (its devbox frozen) and a command runs, then a restart: the build and the
// snapshot are failed with a reason, the snapshot's partial copy is gone, no
// cgroup, mount or process of the build remains, and the devbox (whose
// cgroup the killed devboxd left frozen) boots again without the old
// command's process.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Devboxd, claimsDir, toFile, waitFor } from './devboxd.mjs';

// runc removes a build's groups itself, but the devbox's processes live on
// in its groups.
// The build is buildah's: its working
// container and mount on its build disk, the disk, its temp dir and the claim of the host id range its
// RUN steps ran on are left too, and go at the restart.
const runtimes = [
  ['runc on the starter image (buildah builds)', {}],
];

const CG = '/sys/fs/cgroup';
// The cgroups devboxd made for a sandbox id, one per controller.
const groups = (id) => readdirSync(CG).filter((ctl) => existsSync(path.join(CG, ctl, 'devboxd', id)));
// The command lines of the processes in id's group and the groups below it
// (a build's RUN steps run in groups of their own below the build's).
const procsIn = (id) => {
  const pids = [];
  const walk = (dir) => {
    if (!existsSync(path.join(dir, 'cgroup.procs'))) return;
    pids.push(...readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean));
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(dir, e.name));
  };
  walk(path.join(CG, 'pids', 'devboxd', id));
  return pids.map((pid) => {
    try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim(); } catch { return ''; }
  });
};
const mountsUnder = (dir) => readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
  .filter((l) => l.split(' ')[4]?.startsWith(dir));

// The claim of the host id range a buildah build's RUN steps run on.
const claimFile = (stateDir, id) => path.join(claimsDir,
  readFileSync(path.join(stateDir, 'blueprints', id, 'sandbox', 'uidrange'), 'utf8').trim());

// buildah's working containers in a state dir's store, or (root given) in
// a build's own store on its build disk.
const buildahContainers = (stateDir, buildRoot) => {
  const root = buildRoot ?? path.join(stateDir, 'buildah');
  if (!existsSync(path.join(root, 'storage'))) return [];
  return execFileSync('buildah', ['--root', path.join(root, 'storage'), '--runroot', path.join(root, 'run'),
    '--storage-driver', 'overlay', 'containers', '-q'], { encoding: 'utf8' }).split('\n').filter(Boolean);
};

for (const [name, env] of runtimes) {
test(`${name}: kill -9 during a build, a snapshot and a command leaves nothing behind after a restart`, async (t) => {
  const engine = new Devboxd({ env });
  t.after(async () => { await engine.cleanup(); });
  await engine.start();
  let client = engine.client();
  const box = await client.devboxes.createAndAwaitRunning({ name: 'crash-box' });
  const fill = await client.devboxes.executeAndAwaitCompletion(box.id,
    { command: 'head -c 400M /dev/zero > ~/big' });
  assert.equal(fill.exit_status, 0, fill.stderr);
  await client.devboxes.executions.executeAsync(box.id, { command: 'exec sleep 3600' });
  await waitFor(() => procsIn(box.id).some((c) => c === 'sleep 3600') || null,
    { timeoutMs: 60000, what: 'the command to run' });

  const bp = await client.blueprints.create({ name: 'never-ends',
    system_setup_commands: ['sleep 3600'] });
  await waitFor(async () => (await client.blueprints.retrieve(bp.id)).status === 'building' &&
    procsIn(bp.id).some((c) => c === 'sleep 3600') || null,
  { timeoutMs: 180000, stepMs: 200, what: 'the build to run its step' });

  // Copying 400 MB takes far longer than the kill below.
  const snap = await client.devboxes.snapshotDiskAsync(box.id, {});
  engine.proc.kill('SIGKILL');
  await engine.exited;
  engine.proc = null;
  const partial = path.join(engine.stateDir, 'snapshots', snap.id, 'layer');
  assert.ok(groups(bp.id).length > 0 || procsIn(box.id).includes('sleep 3600'),
    'the killed devboxd left neither the build\'s cgroups nor the devbox\'s processes (nothing to prove)');
  assert.ok(procsIn(bp.id).includes('sleep 3600'), 'the build\'s RUN step lives on in its group');
  assert.ok(buildahContainers(engine.stateDir, `/var/tmp/devboxd-buildah/${bp.id}`).length > 0,
    'buildah left no working container on the build disk (nothing to prove)');
  assert.ok(mountsUnder(`/var/tmp/devboxd-buildah/${bp.id}`).length > 0, 'no build disk is mounted (nothing to prove)');
  assert.ok(existsSync(claimFile(engine.stateDir, bp.id)), 'the build holds no host id range (nothing to prove)');
  const claim = claimFile(engine.stateDir, bp.id);

  await engine.start();
  client = engine.client();
  const b = await client.blueprints.retrieve(bp.id);
  assert.equal(b.status, 'failed');
  const log = (await client.blueprints.logs(bp.id)).logs.map((e) => e.message).join('\n');
  assert.match(log, /devboxd restarted during the build/);
  assert.deepEqual(groups(bp.id), [], 'cgroups of the interrupted build remain');
  assert.deepEqual(mountsUnder(path.join(engine.stateDir, 'blueprints', bp.id)), []);
  assert.deepEqual(buildahContainers(engine.stateDir), [], 'buildah working containers remain');
  assert.deepEqual(mountsUnder(path.join(engine.stateDir, 'buildah')), [], 'buildah mounts remain');
  assert.equal(existsSync(path.join(engine.stateDir, 'blueprints', bp.id, 'build')), false);
  assert.equal(existsSync(claim), false, 'the interrupted build kept its host id range');
  const tmp = `/var/tmp/devboxd-buildah/${bp.id}`;
  assert.deepEqual(mountsUnder(tmp), [], 'mounts in the build\'s temp dir remain');
  assert.equal(existsSync(tmp), false, 'the build\'s temp dir remains');
  assert.equal(existsSync(`${tmp}.img`), false, 'the build disk\'s image remains');

  const s = await client.devboxes.diskSnapshots.queryStatus(snap.id);
  assert.equal(s.status, 'error', JSON.stringify(s));
  assert.match(s.error_message ?? JSON.stringify(s), /restarted while the snapshot was taken/);
  assert.equal(existsSync(partial), false, 'the partial snapshot copy remains');

  // The devbox boots again in fresh, thawed groups: no old process with it.
  await waitFor(async () => (await client.devboxes.retrieve(box.id)).status === 'running' || null,
    { timeoutMs: 120000, stepMs: 200, what: 'the devbox to boot again' });
  const r = await client.devboxes.executeAndAwaitCompletion(box.id, { command: 'echo alive' });
  assert.equal(r.stdout, 'alive\n');
  assert.equal(procsIn(box.id).filter((c) => c === 'sleep 3600').length, 0,
    `processes of the killed devboxd's devbox: ${procsIn(box.id).join(' | ')}`);
  await client.devboxes.shutdown(box.id);
  await client.blueprints.delete(bp.id);
});
}

// A write goes to a hidden temporary file renamed over the target at the
// end; devboxd killed in between used to leave that file in the devbox for
// ever. Its next start removes it (and says so).
test('kill -9 during a file write: the next start removes the temporary file', async (t) => {
  const engine = new Devboxd();
  t.after(async () => { await engine.cleanup(); });
  await engine.start();
  let client = engine.client();
  const box = await client.devboxes.createAndAwaitRunning({ name: 'write-crash' });
  const notes = path.join(engine.stateDir, 'devboxes', box.id, 'writes');
  const data = Buffer.alloc(60 << 20, 0x61);
  let hit = false;
  // The kill must land between the temporary file's creation and its
  // rename: watched through devboxd's note of it; tried again when it
  // landed before the file existed or after the rename.
  for (let attempt = 0; attempt < 4 && !hit; attempt++) {
    const up = client.devboxes.uploadFile(box.id, { path: 'big.bin', file: await toFile(data, 'big.bin') })
      .catch(() => null);
    const noted = await waitFor(() => (existsSync(notes) && readdirSync(notes).length > 0) || null,
      { timeoutMs: 60000, stepMs: 1, what: 'the write to start' }).catch(() => null);
    if (noted) await new Promise((r) => setTimeout(r, 5));
    engine.proc.kill('SIGKILL');
    await engine.exited;
    engine.proc = null;
    // Not awaited: the SDK's stream to the killed devboxd never settles.
    void up;
    await engine.start();
    client = engine.client();
    await waitFor(async () => (await client.devboxes.retrieve(box.id)).status === 'running' || null,
      { timeoutMs: 120000, stepMs: 200, what: 'the devbox to boot again' });
    hit = /devbox \S+: removed 1 temporary files of writes/.test(engine.stderr);
    const ls = await client.devboxes.executeAndAwaitCompletion(box.id,
      { command: 'ls -a /home/user | grep -c devboxd-tmp || true' });
    assert.equal(ls.stdout, '0\n', 'a temporary file of the interrupted write remains');
  }
  assert.ok(hit, 'no kill landed while the temporary file existed (nothing proved)');
  assert.deepEqual(readdirSync(notes), [], 'the notes of the write remain');
  // Writes work as before, and leave no note.
  await client.devboxes.writeFileContents(box.id, { file_path: 'small.txt', contents: 'ok' });
  assert.equal(await client.devboxes.readFileContents(box.id, { file_path: 'small.txt' }), 'ok');
  assert.deepEqual(readdirSync(notes), []);
  await client.devboxes.shutdown(box.id);
});
