// Devbox disks through the official Runloop SDK against a real devboxd:
// custom_disk_size is a loop-mounted ext4 holding the devbox's writable
// layer and its command output. Writing past it is ENOSPC inside, the host
// gives no more than the size, `df /` inside shows it, it survives suspend,
// resume and a devboxd restart, and a shutdown deletes the devbox's files
// (its records stay). Bad sizes are 400s naming the field.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, rejectsWith, useEngine, waitFor } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd(), (c) => { client = c; });

const MiB = 1 << 20;
const GiB = 1 << 30;
const disk = (gib) => ({ launch_parameters: { custom_disk_size: gib } });
const run = async (id, command) => {
  const r = await client.devboxes.executeSync(id, { command }, { timeout: 300000 });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
};
const boxDir = (id) => path.join(engine.stateDir, 'devboxes', id);
const sandboxDir = (id) => path.join(boxDir(id), 'sandbox');
const image = (id) => `${sandboxDir(id)}.img`;
// What the host gave the state dir (allocated blocks, on its own
// filesystem only: the disk's contents count as the image's blocks).
const hostBytes = () => Number(execFileSync('du', ['-sx', '-B1', engine.stateDir]).toString().split('\t')[0]);
const allocated = (file) => statSync(file).blocks * 512;
const mountedUnder = (dir) => readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
  .filter((l) => l.includes(dir));
const dfRoot = async (id) => {
  const r = await run(id, 'df -B1 --output=size,avail / | tail -1');
  const [size, avail] = r.out.trim().split(/\s+/).map(Number);
  return { size, avail };
};

describe('devbox disk (custom_disk_size)', () => {
  test('writing past it is ENOSPC inside and the host gives no more', async () => {
    const box = await client.devboxes.createAndAwaitRunning(disk(0.25));
    const before = hostBytes();
    const { size } = await dfRoot(box.id);
    // df / inside is the devbox's disk (ext4's own metadata aside), not the host's.
    assert.ok(size <= 256 * MiB && size >= 200 * MiB, `df / says ${size} bytes`);

    const fill = await run(box.id, 'dd if=/dev/zero of=$HOME/big bs=1M count=400');
    assert.notEqual(fill.code, 0, 'dd past the disk succeeded');
    assert.ok(allocated(image(box.id)) <= 256 * MiB, `image holds ${allocated(image(box.id))} bytes`);
    assert.ok(allocated(image(box.id)) >= 200 * MiB, 'the disk did not fill');
    assert.ok(hostBytes() - before <= 256 * MiB, `the state dir grew by ${hostBytes() - before} bytes`);
    // The files API meets the same full disk.
    await rejectsWith(assert, client.devboxes.writeFileContents(box.id,
      { file_path: 'more.txt', contents: 'x'.repeat(MiB / 2) }), 507, /disk is full/);

    // The error as dd saw it (kept in memory until space is freed).
    const again = await run(box.id, 'msg=$(dd if=/dev/zero of=$HOME/more bs=1M count=8 2>&1); '
      + 'rc=$?; s=$(stat -c %s $HOME/big); rm -f $HOME/big $HOME/more; sync; echo "$rc $s"; echo "$msg"');
    const [rc, written] = again.out.split('\n')[0].split(' ').map(Number);
    assert.equal(rc, 1, again.out);
    assert.ok(written < 256 * MiB && written > 150 * MiB, `big holds ${written} bytes`);
    assert.match(again.out, /No space left on device/);

    // Freed space is usable again, inside and on the host (discard).
    const ok = await run(box.id, 'dd if=/dev/zero of=$HOME/ok bs=1M count=16 status=none && echo written');
    assert.equal(ok.out, 'written\n', ok.err);
    assert.ok((await dfRoot(box.id)).avail > 150 * MiB);
    await waitFor(() => allocated(image(box.id)) < 128 * MiB,
      { timeoutMs: 60000, stepMs: 500, what: 'the host to get the freed blocks back' });

    // Shutdown: records and logs stay; the disk, the writable layer and
    // the command output go, and nothing stays mounted.
    await client.devboxes.shutdown(box.id);
    assert.ok(existsSync(path.join(boxDir(box.id), 'devbox.json')));
    assert.ok(!existsSync(sandboxDir(box.id)), 'the sandbox dir outlived shutdown');
    assert.ok(!existsSync(image(box.id)), 'the disk image outlived shutdown');
    assert.deepEqual(mountedUnder(boxDir(box.id)), []);
  });

  test('command output is on the disk and goes with the devbox', async () => {
    const box = await client.devboxes.createAndAwaitRunning(disk(0.25));
    const r = await client.devboxes.executeAndAwaitCompletion(box.id, { command: 'echo kept; echo err >&2' });
    const out = path.join(sandboxDir(box.id), 'output', `${r.execution_id}.stdout`);
    assert.equal(readFileSync(out, 'utf8'), 'kept\n');
    assert.equal(statSync(out).dev, statSync(sandboxDir(box.id)).dev);
    assert.notEqual(statSync(out).dev, statSync(boxDir(box.id)).dev, 'output is not on the disk');
    // A command whose output fills the disk is stopped by it.
    const flood = await client.devboxes.executeAndAwaitCompletion(box.id,
      { command: 'yes 0123456789abcdef | head -c 400M' }, { timeout: 300000 });
    assert.notEqual(flood.exit_status, 0);
    const floodOut = path.join(sandboxDir(box.id), 'output', `${flood.execution_id}.stdout`);
    assert.ok(statSync(floodOut).size < 256 * MiB, `${statSync(floodOut).size} bytes of output`);
    assert.ok(allocated(image(box.id)) <= 256 * MiB);
    await client.devboxes.shutdown(box.id);
    assert.ok(!existsSync(out), 'output files outlived shutdown');
    const view = await client.devboxes.executions.retrieve(box.id, r.execution_id);
    assert.equal(view.status, 'completed');
    assert.equal(view.stdout, '');
  });

  test('without custom_disk_size a devbox gets its size default (4 GiB)', async () => {
    const box = await client.devboxes.createAndAwaitRunning({});
    const { size } = await dfRoot(box.id);
    assert.ok(size <= 4 * GiB && size >= 3.8 * GiB, `df / says ${size} bytes`);
    // Sparse: the host holds only what is written.
    assert.ok(allocated(image(box.id)) < 64 * MiB);
    await client.devboxes.shutdown(box.id);
  });

  test('suspend, resume and a devboxd restart keep the disk and its files', async () => {
    const up = await client.devboxes.createAndAwaitRunning(disk(0.5));
    const susp = await client.devboxes.createAndAwaitRunning(disk(0.25));
    await client.devboxes.writeFileContents(up.id, { file_path: 'a.txt', contents: 'running box' });
    const said = await client.devboxes.executeAndAwaitCompletion(susp.id, { command: 'echo said; echo s > $HOME/s.txt' });
    await client.devboxes.suspend(susp.id);
    await client.devboxes.awaitSuspended(susp.id);
    // Suspended: its output stays readable from the mounted disk.
    assert.equal((await client.devboxes.executions.retrieve(susp.id, said.execution_id)).stdout, 'said\n');

    await engine.stop();
    // devboxd stopped: no disk stays mounted here. (A mount namespace made
    // meanwhile, e.g. a sandbox of another engine on this machine, may keep
    // a copy and its loop device until it ends; the next start mounts that
    // same device again.)
    assert.deepEqual(mountedUnder(engine.stateDir), []);
    await engine.start();
    client = engine.client();

    // The suspended devbox's disk is mounted again for its output.
    assert.equal((await client.devboxes.executions.retrieve(susp.id, said.execution_id)).stdout, 'said\n');
    await client.devboxes.awaitRunning(up.id);
    assert.equal((await run(up.id, 'cat $HOME/a.txt')).out, 'running box');
    assert.ok((await dfRoot(up.id)).size > 256 * MiB);
    await client.devboxes.resume(susp.id);
    await client.devboxes.awaitRunning(susp.id);
    assert.equal((await run(susp.id, 'cat $HOME/s.txt')).out, 's\n');
    assert.ok((await dfRoot(susp.id)).size <= 256 * MiB);
    await client.devboxes.shutdown(up.id);
    await client.devboxes.shutdown(susp.id);
    assert.ok(!existsSync(image(up.id)) && !existsSync(image(susp.id)));
  });

  test('a snapshot of a devbox with a disk boots on another disk', async () => {
    const box = await client.devboxes.createAndAwaitRunning(disk(0.25));
    await client.devboxes.writeFileContents(box.id, { file_path: 'snap.txt', contents: 'in snapshot' });
    const snap = await client.devboxes.snapshotDisk(box.id, { name: 'disk-snap' });
    const child = await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id, ...disk(0.5) });
    assert.equal((await run(child.id, 'cat $HOME/snap.txt')).out, 'in snapshot');
    assert.ok((await dfRoot(child.id)).size > 256 * MiB);
    await client.devboxes.shutdown(box.id);
    await client.devboxes.shutdown(child.id);
  });

  test('bad custom_disk_size is a 400 naming the field and the minimum', async () => {
    for (const gib of [0.1, 0, -1]) {
      await rejectsWith(assert, client.devboxes.create(disk(gib)), 400,
        /custom_disk_size must be at least 0\.25 GiB \(256 MiB/);
    }
    for (const gib of [3, 0.3, 65]) {
      await rejectsWith(assert, client.devboxes.create(disk(gib)), 400,
        /custom_disk_size must be 0\.25, 0\.5, 1 or an even number of GiB from 2 to 64/);
    }
    await rejectsWith(assert, client.devboxes.create(disk('big')), 400, /custom_disk_size/);
  });
});

describe('devbox disk with the runc runtime', () => {
  const runc = new Devboxd({ env: { RLMCP_DEVBOX_RUNTIME: 'runc', RLMCP_DEVBOX_IMAGE: 'starter' } });
  let rc;
  useEngine(runc, (c) => { rc = c; });

  test('root inside meets the same disk: df, ENOSPC, files gone at shutdown', async () => {
    const box = await rc.devboxes.createAndAwaitRunning(disk(0.25), { timeout: 1800000 });
    const r = await rc.devboxes.executeSync(box.id, {
      command: 'df -B1 --output=size / | tail -1; msg=$(sudo dd if=/dev/zero of=/opt/big bs=1M count=400 2>&1); '
        + 'rc=$?; sudo rm -f /opt/big; echo "$rc"; echo "$msg"',
    }, { timeout: 300000 });
    const [size, code] = r.stdout.split('\n').map(Number);
    assert.ok(size <= 256 * MiB && size >= 200 * MiB, r.stdout);
    assert.equal(code, 1, r.stdout);
    assert.match(r.stdout, /No space left on device/);
    const dir = path.join(runc.stateDir, 'devboxes', box.id, 'sandbox');
    assert.ok(allocated(`${dir}.img`) <= 256 * MiB);
    await rc.devboxes.shutdown(box.id);
    assert.ok(!existsSync(dir) && !existsSync(`${dir}.img`));
  });
});
