// Blueprint builds are bounded and can be stopped, through the official
// Runloop SDK against a real devboxd: a step past the build's memory limit
// is killed and named as such, a step runs on the build's CPUs, a build past
// its time limit fails saying so, builds past RLMCP_MAX_BUILDS wait in a
// queue their log tells of, and deleting a queued or running build stops it
// and frees its slot. A build that fails, runs out of time or is deleted
// releases the host id range its RUN steps ran on. A build writes to a disk
// of its own (RLMCP_BUILD_DISK_GB): a step past it fails saying so.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, claimsDir, waitFor, useEngine } from './devboxd.mjs';

// The host id claims (machine-wide, claimsDir/<id>) of blueprint id's build.
function claimsOf(engine, id) {
  const dir = claimsDir;
  const mine = path.join(engine.stateDir, 'blueprints', id, 'sandbox');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => {
    try { return readFileSync(path.join(dir, f), 'utf8') === mine; } catch { return false; }
  });
}

function helpers(getClient) {
  const settled = (id) => blueprintSettled(getClient(), id, { timeoutMs: 180000, stepMs: 100 });
  const logText = (id) => blueprintLog(getClient(), id);
  return { settled, logText };
}

describe('build limits', () => {
  let client;
  const engine = useEngine(new Devboxd({ env: { RLMCP_BUILD_MEMORY_GB: '0.25', RLMCP_BUILD_CPUS: '0.5',
    RLMCP_BUILD_TIMEOUT_S: '300' } }), (c) => { client = c; });
  const { settled, logText } = helpers(() => client);

  test('a step past the memory limit is killed and the log names the limit', async () => {
    const b = await client.blueprints.create({ name: 'hungry', system_setup_commands: [
      `python3 -c "print(len('x' * (700 << 20)))"`] });
    const done = await settled(b.id);
    assert.equal(done.status, 'failed');
    const log = await logText(b.id);
    assert.match(log, /limits: 0\.25 GiB of memory, 0\.5 CPUs, 300 s/);
    assert.match(log, /killed for memory: a build may use 0\.25 GiB \(RLMCP_BUILD_MEMORY_GB\)/, log);
    assert.deepEqual(claimsOf(engine, b.id), [], 'the failed build kept its host ids');
  });

  test('a step runs on the build\'s CPUs', async () => {
    const b = await client.blueprints.create({ name: 'cpus',
      system_setup_commands: ['echo "cpus=$(nproc)"'] });
    const done = await settled(b.id);
    assert.equal(done.status, 'build_complete', await logText(b.id));
    assert.match(await logText(b.id), /cpus=1\b/);
  });
});

describe('build disk limit', () => {
  let client;
  const engine = useEngine(new Devboxd({ env: { RLMCP_BUILD_DISK_GB: '1' } }), (c) => { client = c; });
  const { settled, logText } = helpers(() => client);

  // A build used to see the host's free space and write to the state
  // filesystem: now its store and steps are on a disk of RLMCP_BUILD_DISK_GB.
  test('a step past the build disk fails saying so; a step within it builds', async () => {
    const b = await client.blueprints.create({ name: 'fills', dockerfile:
      'FROM runloop/starter-x86_64\nRUN df -k / | tail -1 | awk \'{print "disk-kb=" $2}\'\n' +
      'RUN fallocate -l 1536M /big || dd if=/dev/zero of=/big bs=1M count=1536\n' });
    const done = await settled(b.id);
    assert.equal(done.status, 'failed');
    assert.equal(done.failure_reason, 'out_of_disk', await logText(b.id));
    const log = await logText(b.id);
    assert.match(log, /limits: .*, 1 GiB of disk \(.*RLMCP_BUILD_DISK_GB\)/);
    // The step saw the build disk, not the host's free space.
    const kb = Number(/disk-kb=(\d+)/.exec(log)?.[1]);
    assert.ok(kb > 0 && kb < 1.1 * 1024 * 1024, `the step's / is ${kb} kB:\n${log}`);
    assert.match(log, /step 2\/2 \(Dockerfile line 3\): RUN fallocate .* failed: the build disk limit of 1 GiB was reached \(RLMCP_BUILD_DISK_GB\).*raise RLMCP_BUILD_DISK_GB/, log);
    assert.match(log, /no space left on device/i);
    assert.ok(!readdirSync('/var/tmp/devboxd-buildah').some((f) => f.startsWith(b.id)),
      'the build disk is removed with the build');

    const ok = await client.blueprints.create({ name: 'fits', dockerfile:
      'FROM runloop/starter-x86_64\nRUN dd if=/dev/zero of=/some bs=1M count=16 && ls -l /some\n' });
    const fine = await settled(ok.id);
    assert.equal(fine.status, 'build_complete', await logText(ok.id));
  });

  test('a bad RLMCP_BUILD_DISK_GB stops devboxd naming it', async () => {
    for (const [v, re] of [['0.1', /RLMCP_BUILD_DISK_GB="0\.1" is not a number from 0\.25 to/],
      ['lots', /RLMCP_BUILD_DISK_GB="lots" is not a number from 0\.25 to/]]) {
      const e = new Devboxd({ env: { RLMCP_BUILD_DISK_GB: v } });
      try {
        await assert.rejects(e.start(), re);
      } finally {
        await e.stop().catch(() => {});
        rmSync(e.stateDir, { recursive: true, force: true });
      }
    }
  });
});

describe('build time limit', () => {
  let client;
  const engine = useEngine(new Devboxd({ env: { RLMCP_BUILD_TIMEOUT_S: '3' } }), (c) => { client = c; });
  const { settled, logText } = helpers(() => client);

  test('a build past its time limit fails saying so', async () => {
    const b = await client.blueprints.create({ name: 'slow', system_setup_commands: ['sleep 600'] });
    const done = await settled(b.id);
    assert.equal(done.status, 'failed');
    assert.match(await logText(b.id), /ran past its time limit of 3 s \(RLMCP_BUILD_TIMEOUT_S\)/);
    assert.deepEqual(claimsOf(engine, b.id), [], 'the build past its time kept its host ids');
    // The killed step ran in a cgroup below the build's: none is left.
    const left = readdirSync('/sys/fs/cgroup').filter((c) => existsSync(path.join('/sys/fs/cgroup', c, 'devboxd', b.id)));
    assert.deepEqual(left, [], 'the killed build left cgroups');
  });
});

describe('build queue and cancel', () => {
  let client;
  const engine = useEngine(new Devboxd({ env: { RLMCP_MAX_BUILDS: '1' } }), (c) => { client = c; });
  const { settled, logText } = helpers(() => client);

  test('builds past RLMCP_MAX_BUILDS wait; a delete stops a queued or running build', async () => {
    const a = await client.blueprints.create({ name: 'runs', system_setup_commands: ['sleep 600'] });
    await waitFor(async () => /Step 1\/1: RUN sleep 600/.test(await logText(a.id)) || null,
      { timeoutMs: 180000, stepMs: 200, what: 'the first build to run its step' });
    assert.equal(claimsOf(engine, a.id).length, 1, 'the running build holds no host id range');
    const q = await client.blueprints.create({ name: 'waits', system_setup_commands: ['sleep 600'] });
    await waitFor(async () => /queued: 1 builds run at once \(RLMCP_MAX_BUILDS\)/.test(await logText(q.id)) || null,
      { timeoutMs: 60000, stepMs: 200, what: 'the second build to say it is queued' });
    assert.notEqual((await client.blueprints.retrieve(q.id)).status, 'building');

    // The queued one leaves the queue without running.
    await client.blueprints.delete(q.id);
    const qd = await client.blueprints.retrieve(q.id);
    assert.equal(qd.status, 'failed');
    assert.equal(qd.state, 'deleted');
    assert.match(await logText(q.id), /deleted before its build ran/);
    assert.doesNotMatch(await logText(q.id), /Step 1\/1/);

    // The running one is stopped: the delete answers once it has ended.
    await client.blueprints.delete(a.id);
    const ad = await client.blueprints.retrieve(a.id);
    assert.equal(ad.status, 'failed');
    assert.equal(ad.state, 'deleted');
    assert.match(await logText(a.id), /the blueprint was deleted during the build/);
    assert.deepEqual(claimsOf(engine, a.id), [], 'the deleted build kept its host ids');

    // Its slot is free: the next build runs at once.
    const c = await client.blueprints.create({ name: 'after', system_setup_commands: ['echo next-ran'] });
    const done = await settled(c.id);
    assert.equal(done.status, 'build_complete', await logText(c.id));
    assert.doesNotMatch(await logText(c.id), /queued:/);
  });
});
