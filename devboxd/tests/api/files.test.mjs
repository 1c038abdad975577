// Files API through the official Runloop SDK: text read/write, binary
// upload/download round trip, confinement to the devbox root, bad input.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Devboxd, rejectsWith, toFile } from './devboxd.mjs';

const engine = new Devboxd();
let boxId;
before(async () => {
  await engine.start();
  boxId = (await engine.client().devboxes.createAndAwaitRunning({ name: 'files' })).id;
});
after(async () => { await engine.cleanup(); });

for (const mode of [{ name: 'h2c (SDK default)', opts: {} }, { name: 'HTTP/1.1', opts: { http2: false } }]) {
  describe(`files over ${mode.name}`, () => {
    let client;
    before(() => { client = engine.client(mode.opts); });

    test('write_file_contents then read_file_contents, relative and absolute', async () => {
      const w = await client.devboxes.writeFileContents(boxId, { file_path: 'notes/a.txt', contents: 'héllo\nworld\n' });
      assert.equal(w.exit_status, 0);
      assert.equal(await client.devboxes.readFileContents(boxId, { file_path: 'notes/a.txt' }), 'héllo\nworld\n');
      assert.equal(await client.devboxes.readFileContents(boxId, { file_path: '/home/user/notes/a.txt' }),
        'héllo\nworld\n');
      const r = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'cat notes/a.txt; stat -c %u notes/a.txt' });
      assert.equal(r.stdout, 'héllo\nworld\n1000\n');
    });

    test('upload_file and download_file round-trip binary data', async () => {
      const data = randomBytes(3 * 1024 * 1024 + 17);
      data[0] = 0; data[1] = 0xff;
      const name = `bin-${mode.opts.http2 === false ? 'h1' : 'h2'}.dat`;
      await client.devboxes.uploadFile(boxId, { path: `up/${name}`, file: await toFile(data, name) });
      const sum = await client.devboxes.executeAndAwaitCompletion(boxId, { command: `wc -c < up/${name}` });
      assert.equal(sum.stdout.trim(), String(data.length));
      const res = await client.devboxes.downloadFile(boxId, { path: `up/${name}` });
      assert.equal(res.headers.get('content-type'), 'application/octet-stream');
      const got = Buffer.from(await res.arrayBuffer());
      assert.equal(got.length, data.length);
      assert.ok(got.equals(data), 'downloaded bytes differ from the uploaded ones');
    });
  });
}

describe('files: confinement and bad input', () => {
  let client;
  before(() => { client = engine.client(); });

  test('.. and symlinks cannot reach files outside the devbox', async () => {
    const secret = 'host-secret-' + randomBytes(8).toString('hex');
    // Planted beside the devbox's directories on the host.
    writeFileSync(path.join(engine.stateDir, 'planted.txt'), secret);
    writeFileSync(path.join(engine.stateDir, 'devboxes', boxId, 'planted.txt'), secret);
    const tries = ['../../../../../../planted.txt', '/../../../../planted.txt',
      '../../../../../../../etc/../planted.txt', 'escape/planted.txt', 'abs/planted.txt'];
    await client.devboxes.executeAndAwaitCompletion(boxId, {
      command: 'ln -sfn ../../../../../../../.. escape; ln -sfn / abs' });
    for (const p of tries) {
      let text = null;
      try {
        text = await client.devboxes.readFileContents(boxId, { file_path: p });
      } catch (e) {
        assert.ok([400, 403, 404].includes(e.status), `${p}: unexpected ${e.status} ${e.message}`);
      }
      assert.ok(text === null || !text.includes(secret), `${p} reached a host file`);
      let dl = null;
      try {
        dl = Buffer.from(await (await client.devboxes.downloadFile(boxId, { path: p })).arrayBuffer()).toString();
      } catch (e) {
        assert.ok([400, 403, 404].includes(e.status), `${p}: unexpected ${e.status}`);
      }
      assert.ok(dl === null || !dl.includes(secret), `${p} downloaded a host file`);
    }
    // Writes through an escaping symlink stay inside too.
    try {
      await client.devboxes.writeFileContents(boxId, { file_path: 'escape/written-out.txt', contents: 'x' });
    } catch (e) {
      assert.ok([400, 403, 404].includes(e.status));
    }
    const { existsSync } = await import('node:fs');
    assert.equal(existsSync(path.join(engine.stateDir, 'written-out.txt')), false);
    assert.equal(existsSync('/written-out.txt'), false);
  });

  test('missing files, directories and missing fields', async () => {
    await rejectsWith(assert, client.devboxes.readFileContents(boxId, { file_path: 'nope.txt' }), 404,
      /not found in the devbox/);
    await rejectsWith(assert, client.devboxes.downloadFile(boxId, { path: 'nope.bin' }), 404, /not found/);
    await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'mkdir -p adir' });
    await rejectsWith(assert, client.devboxes.readFileContents(boxId, { file_path: 'adir' }), 400,
      /not a regular file|directory/);
    await rejectsWith(assert, client.devboxes.readFileContents(boxId, {}), 400, /'file_path' is required/);
    await rejectsWith(assert, client.devboxes.writeFileContents(boxId, { file_path: 'x.txt' }), 400,
      /'contents' is required/);
    await rejectsWith(assert, client.devboxes.downloadFile(boxId, { file_path: 'x' }), 400,
      /unknown field 'file_path'/);
    await rejectsWith(assert, client.devboxes.uploadFile(boxId, { path: 'only-path.txt' }), 400,
      /both parts/);
    await rejectsWith(assert, client.devboxes.readFileContents('dbx_missing', { file_path: 'a' }), 404);
    // JSON carries a NUL as \u0000; the file would end before it: refused,
    // and nothing is written.
    await rejectsWith(assert, client.devboxes.writeFileContents(boxId, { file_path: 'nul.txt', contents: 'a\u0000b' }),
      400, /holds \\u0000 \(byte \d+\).*upload_file/);
    const nul = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'test -e nul.txt && echo there || echo absent' });
    assert.equal(nul.stdout.trim(), 'absent');
  });

  test('an upload over the 64 MiB limit is a 413', async () => {
    const big = Buffer.alloc(65 * 1024 * 1024, 1);
    await rejectsWith(assert, client.devboxes.uploadFile(boxId, { path: 'big.bin', file: await toFile(big, 'big.bin') }),
      413, /at most/);
    const r = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'test -e big.bin; echo $?' });
    assert.equal(r.stdout, '1\n');
  });

  test('files on a suspended devbox are refused until resume', async () => {
    const b = await client.devboxes.createAndAwaitRunning({});
    await client.devboxes.writeFileContents(b.id, { file_path: 'k.txt', contents: 'kept' });
    await client.devboxes.suspend(b.id);
    await client.devboxes.awaitSuspended(b.id);
    await rejectsWith(assert, client.devboxes.readFileContents(b.id, { file_path: 'k.txt' }), 400, /resume it/);
    await client.devboxes.resume(b.id);
    await client.devboxes.awaitRunning(b.id);
    assert.equal(await client.devboxes.readFileContents(b.id, { file_path: 'k.txt' }), 'kept');
    await client.devboxes.shutdown(b.id);
  });
});
