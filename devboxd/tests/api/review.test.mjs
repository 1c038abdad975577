// Regression tests for defects found in review of devboxd: each test names
// the bug it pins down.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Devboxd, rejectsWith, toFile, waitFor } from './devboxd.mjs';

const engine = new Devboxd();
before(async () => { await engine.start(); });
after(async () => { await engine.cleanup(); });

// A FIFO planted by the (hostile) devbox used to block open() in the files
// API forever: the request never answered and the devbox's io_refs stayed
// held, so a later shutdown never finished. Now: 400, promptly.
describe('files API and FIFOs planted in the devbox', () => {
  for (const mode of [{ name: 'h2c', opts: {} }, { name: 'HTTP/1.1', opts: { http2: false } }]) {
    test(`read, download, write and upload of a FIFO answer 400 (${mode.name})`, async () => {
      // A bound well under the harness' limits: the old code hung here.
      const client = engine.client({ ...mode.opts, timeout: 20000 });
      const box = await client.devboxes.createAndAwaitRunning({ name: `fifo-${mode.name}` });
      const mk = await client.devboxes.executeAndAwaitCompletion(box.id, {
        command: 'mkfifo /home/user/pipe && test -p /home/user/pipe && echo ok',
      });
      assert.equal(mk.stdout, 'ok\n');
      await rejectsWith(assert, client.devboxes.readFileContents(box.id, { file_path: 'pipe' }),
        400, /not a regular file/);
      await rejectsWith(assert, client.devboxes.downloadFile(box.id, { path: '/home/user/pipe' }),
        400, /not a regular file/);
      await rejectsWith(assert, client.devboxes.writeFileContents(box.id, { file_path: 'pipe', contents: 'x' }),
        400, /not a regular file/);
      await rejectsWith(assert, client.devboxes.uploadFile(box.id,
        { path: 'pipe', file: await toFile(Buffer.from('abc'), 'p.bin') }), 400, /not a regular file/);
      // A FIFO with a reader waiting inside must not be written to either.
      await client.devboxes.executeAsync(box.id, { command: 'cat /home/user/pipe > /home/user/got; echo done > /home/user/reader-done' });
      await rejectsWith(assert, client.devboxes.writeFileContents(box.id, { file_path: 'pipe', contents: 'x' }),
        400, /not a regular file/);
      // Regular files still work, and the devbox still shuts down.
      await client.devboxes.writeFileContents(box.id, { file_path: 'plain.txt', contents: 'plain' });
      assert.equal(await client.devboxes.readFileContents(box.id, { file_path: 'plain.txt' }), 'plain');
      await client.devboxes.shutdown(box.id);
      await waitFor(async () => (await client.devboxes.retrieve(box.id)).status === 'shutdown',
        { timeoutMs: 60000, what: 'the devbox to shut down' });
    });
  }
});
