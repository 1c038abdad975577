// Images through the official Runloop SDK: Runloop's public names resolve
// to our images (not the host's /usr); unknown ones are a clear 400.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Devboxd, rejectsWith, useEngine } from './devboxd.mjs';

let client;
useEngine(new Devboxd(), (c) => { client = c; });

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
});
