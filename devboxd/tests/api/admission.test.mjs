// Engine-wide admission caps through the official Runloop SDK: the number
// of devboxes and the memory and CPU their limits add up to; a refusal is a
// 400 naming the cap. Bad cap settings, an unknown runtime or default image
// and a missing runc stop devboxd with a message naming the fix.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { Devboxd, rejectsWith } from './devboxd.mjs';

const engines = [];
async function engineWith(env) {
  const saved = {};
  for (const [k, v] of Object.entries(env)) { saved[k] = process.env[k]; process.env[k] = v; }
  const e = new Devboxd();
  try {
    await e.start();
    engines.push(e);
  } catch (err) {
    rmSync(e.stateDir, { recursive: true, force: true });
    throw err;
  } finally {
    for (const k of Object.keys(env)) {
      if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
    }
  }
  return e;
}
after(async () => { for (const e of engines) await e.cleanup(); });

const size = (s) => ({ launch_parameters: { resource_size_request: s } });

describe('admission caps', () => {
  test('RLMCP_MAX_DEVBOXES: the next create is refused until one shuts down', async () => {
    const c = (await engineWith({ RLMCP_MAX_DEVBOXES: '2' })).client();
    const a = await c.devboxes.create({});
    await c.devboxes.create({});
    await rejectsWith(assert, c.devboxes.create({}), 400, /too many devboxes: 2 .*RLMCP_MAX_DEVBOXES/);
    await c.devboxes.shutdown(a.id);
    const d = await c.devboxes.create({});
    assert.equal(d.status, 'provisioning');
  });

  test('RLMCP_MAX_MEMORY_GB: limits may not add up past the cap', async () => {
    const c = (await engineWith({ RLMCP_MAX_MEMORY_GB: '3' })).client();
    await c.devboxes.create(size('SMALL')); // 2 GiB
    await rejectsWith(assert, c.devboxes.create(size('SMALL')), 400,
      /not enough memory: .*2\.0 GiB.*asks 2\.0 GiB.*3\.0 GiB.*RLMCP_MAX_MEMORY_GB/);
    const small = await c.devboxes.create(size('X_SMALL')); // 1 GiB fits
    assert.equal(small.status, 'provisioning');
  });

  test('RLMCP_MAX_CPUS: CPU limits may not add up past the cap', async () => {
    const c = (await engineWith({ RLMCP_MAX_CPUS: '1.5' })).client();
    await c.devboxes.create(size('SMALL')); // 1 CPU
    await rejectsWith(assert, c.devboxes.create(size('SMALL')), 400,
      /not enough CPU: .*1\.0 CPUs.*asks 1\.0.*1\.5 in all \(RLMCP_MAX_CPUS\)/);
    await c.devboxes.create(size('X_SMALL')); // 0.5 CPU fits
  });

  test('a bad cap setting stops devboxd with a message naming it', async () => {
    for (const [k, v] of [['RLMCP_MAX_CPUS', 'lots'], ['RLMCP_MAX_DEVBOXES', '-1'], ['RLMCP_MAX_MEMORY_GB', '0']]) {
      await assert.rejects(engineWith({ [k]: v }), new RegExp(`${k} must be a positive number`));
    }
  });
});

describe('runtime and image settings', () => {
  const refused = [
    // A machine without runc: what to install, or how to run without it.
    [{ RLMCP_RUNC: '/nonexistent/runc' }, /runc, the devbox runtime, is not at \/nonexistent\/runc: install it .*RLMCP_RUNC.*RLMCP_DEVBOX_RUNTIME=bwrap/],
    [{ RLMCP_DEVBOX_RUNTIME: 'docker' }, /unknown devbox runtime "docker" \(runc, bwrap\)/],
    [{ RLMCP_DEVBOX_IMAGE: 'ubuntu' }, /RLMCP_DEVBOX_IMAGE="ubuntu" is not an image: set it to starter \(the default\), universal, browser or host/],
  ];
  for (const [env, re] of refused) {
    test(`${JSON.stringify(env)} stops devboxd with a message naming the fix`, async () => {
      await assert.rejects(engineWith(env), re);
    });
  }

  test('without runc, bubblewrap still runs devboxes', async () => {
    const e = await engineWith({ RLMCP_RUNC: '/nonexistent/runc', RLMCP_DEVBOX_RUNTIME: 'bwrap' });
    const c = e.client();
    const box = await c.devboxes.createAndAwaitRunning({}, { polling: { timeoutMs: 300000 } });
    const r = await c.devboxes.executeSync(box.id, { command: 'id -un' }, { timeout: 300000 });
    assert.equal(r.stdout, 'user\n');
    await c.devboxes.shutdown(box.id);
  });
});
