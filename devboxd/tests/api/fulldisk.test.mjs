// A full state filesystem never costs a devbox or an acknowledged byte.
// devboxd's state dir is a small loop-mounted ext4 of its own; devboxes
// with 256 MiB disks (sparse images on it) are created until admission
// refuses one (507 naming the state filesystem), their disks and a
// storage object are filled, devboxd restarts before and after space is
// freed, a bystander's disk is damaged so the kernel will not mount it
// read-write, and a running devbox's disk turns read-only.  Every file the
// API acknowledged stays downloadable with the same bytes.
//
// FULLDISK_PEER_DEVBOXD=/path/to/devboxd runs the same fill and restart
// against another build and only reports how many acknowledged files it
// lost (the figure for a build without disk admission).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Devboxd, rejectsWith, toFile, waitFor } from './devboxd.mjs';

const MiB = 1 << 20;
const peer = process.env.FULLDISK_PEER_DEVBOXD;
const top = mkdtempSync(path.join(tmpdir(), 'devboxd-fulldisk-'));
const fsImage = path.join(top, 'state.img');
const mnt = path.join(top, 'mnt');
const sh = (cmd, args) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const sha = (b) => createHash('sha256').update(b).digest('hex');

let engine;
let client;
// Every file the API acknowledged: { box, path, sha, size }.
const acked = [];
const boxes = [];

const disk = { launch_parameters: { custom_disk_size: 0.25 } };
const sandboxDir = (id) => path.join(engine.stateDir, 'devboxes', id, 'sandbox');
const image = (id) => `${sandboxDir(id)}.img`;

async function upload(box, p, data) {
  await client.devboxes.uploadFile(box, { path: p, file: await toFile(data, path.basename(p)) });
  acked.push({ box, path: p, sha: sha(data), size: data.length });
}

async function download(box, p) {
  const res = await client.devboxes.downloadFile(box, { path: p });
  return Buffer.from(await res.arrayBuffer());
}

// How many acknowledged files cannot be downloaded with their bytes.
async function lostFiles() {
  let lost = 0;
  for (const f of acked) {
    let ok = false;
    try {
      ok = sha(await download(f.box, f.path)) === f.sha;
    } catch { /* lost */ }
    if (!ok) lost++;
  }
  return lost;
}

async function restart() {
  await engine.stop();
  await engine.start();
  client = engine.client();
}

before(async () => {
  // 1200 MiB: room for four 256 MiB devbox disks beside the reserve.
  sh('truncate', ['-s', '1200M', fsImage]);
  sh('mkfs.ext4', ['-q', '-F', '-m', '0', fsImage]);
  mkdirSync(mnt);
  sh('mount', ['-o', 'loop', fsImage, mnt]);
  engine = new Devboxd({
    stateDir: path.join(mnt, 'state'),
    env: { RLMCP_WARM_POOL: '0', RLMCP_STATE_DISK_RESERVE_MB: '64' },
  });
  mkdirSync(engine.stateDir);
  if (peer) engine.bin = peer;
  await engine.start();
  client = engine.client();
});

after(async () => {
  try {
    await engine?.stop();
  } catch (e) {
    console.error(String(e));
  }
  // Devbox disks were unmounted lazily by devboxd's stop: lazy here too.
  try { sh('umount', [mnt]); } catch { try { sh('umount', ['-l', mnt]); } catch { /* gone */ } }
  rmSync(top, { recursive: true, force: true });
});

describe('a full state filesystem', () => {
  test('admission never promises more disk than the state filesystem holds', async () => {
    const bystander = await client.devboxes.createAndAwaitRunning(disk);
    boxes.push(bystander.id);
    await upload(bystander.id, 'small.bin', randomBytes(19600));
    await upload(bystander.id, 'big.bin', randomBytes(3 * MiB));
    await upload(bystander.id, 'docs/note.txt', Buffer.from('acknowledged text\n'));

    // More devboxes until one is refused (at most 6: 1.5 GiB of disks).
    let refused = null;
    while (boxes.length < 6) {
      try {
        const b = await client.devboxes.createAndAwaitRunning(disk);
        boxes.push(b.id);
      } catch (e) {
        refused = e;
        break;
      }
    }
    if (!peer) {
      assert.ok(refused, `${boxes.length} devboxes of 256 MiB were admitted on a 1200 MiB filesystem`);
      assert.equal(refused.status, 507, String(refused.message));
      const msg = String(refused.error?.message ?? refused.message);
      assert.match(msg, /the engine's disk is full/);
      assert.ok(msg.includes(engine.stateDir), msg);
      assert.match(msg, /\d+ MiB free, \d+ MiB of it promised .* needs 256 MiB/);
      assert.match(msg, /shut down or delete devboxes/);
      assert.ok(boxes.length >= 3, `only ${boxes.length} admitted`);
    }

    // Fill every admitted disk: the others with commands, the bystander
    // with uploads until its own disk is full.
    for (const id of boxes.slice(1)) {
      await client.devboxes.executeAndAwaitCompletion(id,
        { command: 'dd if=/dev/urandom of=$HOME/fill bs=1M count=300 status=none; sync; true' },
        { timeout: 300000 }).catch(() => {});
    }
    for (let i = 0; i < 40; i++) {
      try {
        await upload(bystander.id, `fill/${i}.bin`, randomBytes(16 * MiB));
      } catch (e) {
        if (!peer) {
          assert.equal(e.status, 507, String(e.message));
          assert.match(String(e.error?.message ?? e.message), /the devbox's disk is full/);
        }
        break;
      }
    }
    // And writes in the bystander once everything is full (commands and
    // their output): its disk must still get the blocks it was promised.
    await client.devboxes.executeAndAwaitCompletion(bystander.id,
      { command: 'for i in 1 2 3; do echo line $i >> $HOME/log.txt; done; dd if=/dev/zero of=$HOME/z bs=1M count=8 status=none; sync; rm -f $HOME/z; sync' },
      { timeout: 300000 }).catch(() => {});
    if (!peer) {
      // The state filesystem kept its reserve: the disks never ran dry.
      const df = sh('df', ['-B1', '--output=avail', mnt]).split('\n')[1].trim();
      assert.ok(Number(df) > 32 * MiB, `state filesystem has ${df} bytes left`);
      console.log(`state filesystem after the fill: ${(Number(df) / MiB).toFixed(0)} MiB free`);
      // Objects may not take what the disks were promised nor the reserve:
      // uploads are refused before that, naming the filesystem.
      const held = [];
      let refusal = null;
      for (let i = 0; i < 8 && !refusal; i++) {
        const obj = await client.objects.create({ name: `filler-${i}.bin`, content_type: 'binary' });
        const put = await fetch(obj.upload_url, { method: 'PUT', body: randomBytes(60 * MiB) });
        if (put.status === 507) refusal = await put.text();
        else {
          assert.equal(put.status, 200, await put.text());
          held.push(obj.id);
        }
      }
      assert.ok(refusal, 'eight 60 MiB objects were all accepted');
      assert.match(refusal, /the engine's disk is full: .*this upload needs 60 MiB/);
      const promised = boxes.reduce((sum, id) => {
        const st = statSync(image(id));
        return sum + Math.max(0, st.size - st.blocks * 512);
      }, 0);
      const avail = Number(sh('df', ['-B1', '--output=avail', mnt]).split('\n')[1].trim());
      assert.ok(avail >= promised + 56 * MiB,
        `${avail >> 20} MiB free for ${promised >> 20} MiB promised to disks and a 64 MiB reserve`);
      for (const id of held) await client.objects.delete(id);
      // Nor a snapshot (a copy of what the devbox wrote).
      await rejectsWith(assert, client.devboxes.snapshotDisk(bystander.id, { name: 'full' }), 507,
        /the engine's disk is full: .*this snapshot needs \d+ MiB/);
      for (const id of boxes) assert.equal((await client.devboxes.retrieve(id)).status, 'running');
    }
  });

  test('a restart on the full filesystem keeps every devbox and file', async () => {
    await restart();
    if (!peer) {
      for (const id of boxes) {
        const b = await client.devboxes.awaitRunning(id);
        assert.equal(b.status, 'running', `${id}: ${b.failure_message}`);
      }
    } else {
      for (const id of boxes) {
        await waitFor(async () => ['running', 'failure'].includes((await client.devboxes.retrieve(id)).status),
          { timeoutMs: 120000, stepMs: 500, what: `${id} to boot` });
      }
    }
    const lost = await lostFiles();
    const failed = [];
    for (const id of boxes) {
      const v = await client.devboxes.retrieve(id);
      if (v.status !== 'running') failed.push(`${id} ${v.status}: ${v.failure_message}`);
    }
    console.log(`devboxes admitted: ${boxes.length}, not running after the restart: ${failed.length}`
      + `${failed.length ? `\n  ${failed.join('\n  ')}` : ''}`);
    console.log(`acknowledged files: ${acked.length}, lost after a restart on a full disk: ${lost}`);
    if (!peer) assert.equal(lost, 0);
  });

  test('a read-only devbox disk refuses writes and commands at once, saying why', { skip: !!peer }, async () => {
    const id = boxes[boxes.length - 1];
    // A storage error as the kernel reports it (ext4's own test hook):
    // mounted errors=remount-ro, the disk turns read-only.
    const src = readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
      .map((l) => l.split(' ')).find((f) => f[4] === sandboxDir(id));
    assert.ok(src, `${sandboxDir(id)} is not mounted`);
    const dev = path.basename(src[src.indexOf('-') + 2]);
    writeFileSync(`/sys/fs/ext4/${dev}/trigger_fs_error`, '1');
    await waitFor(() => readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
      .some((l) => l.split(' ')[4] === sandboxDir(id) && /( - \S+ \S+ ro,|emergency_ro)/.test(l)),
    { timeoutMs: 10000, what: 'the disk to turn read-only' });
    await rejectsWith(assert, client.devboxes.writeFileContents(id, { file_path: 'x.txt', contents: 'x' }),
      423, /disk is read-only.*storage error/);
    const t0 = Date.now();
    await rejectsWith(assert, client.devboxes.executeSync(id, { command: 'true' }), 423,
      /cannot run the command: .*disk is read-only/);
    assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms to refuse`);
    // Its files stay readable.
    assert.equal((await download(id, 'fill')).length > 0, true);

    // Its sandbox dies now (every process killed): the devbox fails, and
    // its read-only disk is kept for its files, not deleted.
    const procs = path.join('/sys/fs/cgroup/pids/devboxd', id, 'cgroup.procs');
    for (const pid of readFileSync(procs, 'utf8').split('\n').filter(Boolean)) {
      try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
    }
    const failed = await waitFor(async () => {
      const v = await client.devboxes.retrieve(id);
      return v.status === 'failure' ? v : null;
    }, { timeoutMs: 60000, stepMs: 250, what: 'the devbox to fail' });
    assert.match(failed.failure_message, /disk went read-only .* its disk is kept/);
    assert.ok(existsSync(image(id)), 'the read-only disk was deleted');
    assert.ok((await download(id, 'fill')).length > 0);
  });

  test('a disk the kernel will not mount read-write is kept, its files downloadable', async () => {
    const bystander = boxes[0];
    // Free space: shut the others down (their disks go); a new devbox fits.
    for (const id of boxes.slice(1)) await client.devboxes.shutdown(id);
    const fresh = await client.devboxes.createAndAwaitRunning(disk);
    await client.devboxes.shutdown(fresh.id);

    await engine.stop();
    // A read-only-compatible feature this kernel does not know: it mounts
    // the disk read-only only.  Set on a copy put in its place, so a loop
    // device another mount namespace may still hold on the old file (and
    // its live superblock) cannot hide it.
    sh('sync', []);
    sh('cp', ['--sparse=always', image(bystander), `${image(bystander)}.new`]);
    sh('debugfs', ['-w', '-R', 'ssv feature_ro_compat 0x80000000', `${image(bystander)}.new`]);
    sh('mv', [`${image(bystander)}.new`, image(bystander)]);
    await engine.start();
    client = engine.client();
    const b = await waitFor(async () => {
      const v = await client.devboxes.retrieve(bystander);
      return v.status === 'failure' ? v : null;
    }, { timeoutMs: 120000, stepMs: 500, what: 'the bystander to fail' });
    const mine = acked.filter((f) => f.box === bystander);
    acked.splice(0, acked.length, ...mine);
    const lost = await lostFiles();
    console.log(`bystander's acknowledged files: ${acked.length}, lost when its disk cannot `
      + `be mounted read-write at a start: ${lost} (image ${existsSync(image(bystander)) ? 'kept' : 'deleted'})`);
    if (peer) return;
    assert.match(b.failure_message, /cannot be used read-write/);
    assert.match(b.failure_message, /its disk is kept/);
    assert.equal(lost, 0);
    assert.equal(await client.devboxes.readFileContents(bystander, { file_path: 'docs/note.txt' }),
      'acknowledged text\n');
    await rejectsWith(assert, client.devboxes.downloadFile(bystander, { path: 'nope.bin' }), 404,
      /kept disk of failed devbox/);
    await rejectsWith(assert, client.devboxes.writeFileContents(bystander, { file_path: 'x', contents: 'x' }),
      400, /failure/);

    // Another restart: the kept disk is still kept and read.
    await restart();
    assert.equal((await client.devboxes.retrieve(bystander)).status, 'failure');
    assert.equal(await lostFiles(), 0);

    // A shutdown deletes the kept disk.
    await client.devboxes.shutdown(bystander);
    await waitFor(() => {
      try { sh('test', ['!', '-e', image(bystander)]); return true; } catch { return false; }
    }, { timeoutMs: 30000, what: 'the kept disk to go' });
  });

  test('another program fills the state filesystem: an upload says it is the engine\'s disk, nothing acknowledged is lost', { skip: !!peer }, async () => {
    const box = await client.devboxes.createAndAwaitRunning(disk);
    acked.splice(0, acked.length);
    await upload(box.id, 'before.txt', Buffer.from('written before the filesystem filled\n'));
    const filler = path.join(mnt, 'filler');
    const avail = Number(sh('df', ['-B1', '--output=avail', mnt]).split('\n')[1].trim());
    sh('fallocate', ['-l', String(Math.max(avail - 256 * 1024, 4096)), filler]);
    try {
      let err = null;
      try {
        await upload(box.id, 'after.bin', randomBytes(8 * MiB));
      } catch (e) {
        err = e;
      }
      assert.ok(err, 'an 8 MiB upload onto a full host was acknowledged');
      const msg = String(err.error?.message ?? err.message);
      console.log(`upload onto a full host: ${err.status} ${msg}`);
      assert.doesNotMatch(msg, /the devbox's disk is full/);
      if (err.status === 507) assert.match(msg, /the engine's disk is full: devboxd's state filesystem/);
      else assert.equal(err.status, 423, msg);
    } finally {
      rmSync(filler, { force: true });
    }
    await restart();
    const v = await waitFor(async () => {
      const b = await client.devboxes.retrieve(box.id);
      return ['running', 'failure'].includes(b.status) ? b : null;
    }, { timeoutMs: 120000, stepMs: 500, what: 'the devbox to come back' });
    assert.equal(await lostFiles(), 0, `${v.status}: ${v.failure_message}`);
    await client.devboxes.shutdown(box.id);
  });
});
