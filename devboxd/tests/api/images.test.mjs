// Images through the official Runloop SDK: Runloop's public names resolve
// to our images (not the host's /usr); unknown ones are a clear 400.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, rejectsWith, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd(), (c) => { client = c; });

const run = async (id, command) => {
  // Generous: creating a venv installs pip (slow on a loaded machine).
  const r = await client.devboxes.executeSync(id, { command }, { timeout: 300000, maxRetries: 0 });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
};

describe('devbox images', () => {
  test('runloop/starter-x86_64 is the small image', async () => {
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_name: 'runloop/starter-x86_64' });
    const r = await run(box.id, 'command -v python3 pip3 git curl sudo ps unzip bash >/dev/null && echo ok; '
      + 'command -v go || echo no-go; python3 -m venv /tmp/v && /tmp/v/bin/pip --version >/dev/null && echo venv-ok; id -un');
    assert.equal(r.out, 'ok\nno-go\nvenv-ok\nuser\n', r.err);
    // The host has cmake (it builds this project); the image does not.
    const host = await run(box.id, 'test -e /usr/bin/cmake && echo host-usr || echo image-usr');
    assert.equal(host.out, 'image-usr\n');
    await client.devboxes.shutdown(box.id);
  });

  test('unknown runloop/ image names are a 400 naming what exists', async () => {
    for (const name of ['runloop/universal-ubuntu-24.04-arm64', 'runloop/nope']) {
      await rejectsWith(assert, client.devboxes.create({ blueprint_name: name }), 400,
        /unknown image .*runloop\/universal-ubuntu-24\.04-x86_64/);
    }
  });

  test('refused creates leave nothing behind', async () => {
    const dir = path.join(engine.stateDir, 'devboxes');
    const entries = () => (existsSync(dir) ? readdirSync(dir).sort() : []);
    const count = async () => (await client.devboxes.list({ limit: 100 })).devboxes.length;
    const before = { list: await count(), dirs: entries() };
    const bad = [
      [{ blueprint_name: 'runloop/nope' }, /unknown image/],
      [{ blueprint_name: 'no-such-blueprint' }, /no-such-blueprint/],
      [{ blueprint_id: 'bpt_doesnotexist' }, /bpt_doesnotexist/],
      [{ launch_parameters: { user_parameters: { username: 'alice', uid: 70000 } } }, /uid/],
      [{ launch_parameters: { user_parameters: { username: 'root', uid: 5 } } }, /root/],
      [{ launch_parameters: { resource_size_request: 'CUSTOM_SIZE', custom_cpu_cores: 1, custom_gb_memory: 2, custom_disk_size: 0.1 } }, /custom_disk_size/],
    ];
    for (const [body, re] of bad) {
      let err = null;
      try { await client.devboxes.create(body); } catch (e) { err = e; }
      assert.ok(err && err.status >= 400 && err.status < 500, `${JSON.stringify(body)} was accepted`);
      assert.match(String(err.error?.message ?? err.message), re);
    }
    assert.equal(await count(), before.list, 'a refused create left a devbox record');
    assert.deepEqual(entries(), before.dirs, 'a refused create left a devbox directory');
  });
});
