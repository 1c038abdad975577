// Storage objects through the official Runloop SDK: the high-level
// storageObject upload and download helpers (create, PUT to the signed
// upload_url, complete; signed download_url), list filters and pages,
// delete, TTL expiry, object mounts at devbox create (a file, a tgz
// unpacked, a gzip), durability across a restart, signed URLs that cannot
// be forged or reused for another object, and bad input.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Devboxd, rejectsWith, sdkRequire, useEngine, waitFor } from './devboxd.mjs';

const { RunloopSDK } = sdkRequire('@runloop/api-client');

let client;
let sdk;
const engine = useEngine(new Devboxd(), (c) => {
  client = c;
  sdk = new RunloopSDK({ bearerToken: engine.key, baseURL: engine.baseURL, maxRetries: 0 });
});

test('upload from text and buffer, complete, info, download as text and buffer', async () => {
  const text = await sdk.storageObject.uploadFromText('hello objects\n', 'greeting.txt', {
    metadata: { team: 'qa' },
  });
  const info = await text.getInfo();
  assert.match(info.id, /^obj_/);
  assert.equal(info.name, 'greeting.txt');
  assert.equal(info.content_type, 'text');
  assert.equal(info.state, 'READ_ONLY');
  assert.equal(info.size_bytes, 14);
  assert.deepEqual(info.metadata, { team: 'qa' });
  assert.equal(info.upload_url ?? null, null, 'a completed object has no upload URL');
  assert.equal(await text.downloadAsText(), 'hello objects\n');

  // Binary bytes, every value 0..255, come back unchanged.
  const bytes = Buffer.alloc(3 * 65536 + 7);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 8)) & 0xff;
  const bin = await sdk.storageObject.uploadFromBuffer(bytes, 'blob.bin', 'binary');
  assert.equal((await bin.getInfo()).size_bytes, bytes.length);
  assert.ok((await bin.downloadAsBuffer()).equals(bytes));

  // An empty object is an object.
  const empty = await sdk.storageObject.uploadFromText('', 'empty.txt');
  assert.equal((await empty.getInfo()).size_bytes, 0);
  assert.equal(await empty.downloadAsText(), '');
});

test('list: newest first, filters, pages; delete', async () => {
  const a = await sdk.storageObject.uploadFromText('a', 'list-a.txt');
  const b = await sdk.storageObject.uploadFromText('b', 'list-b.txt');
  const pending = await client.objects.create({ name: 'pending.bin', content_type: 'binary' });
  assert.equal(pending.state, 'UPLOADING');
  assert.match(pending.upload_url, /\/v1\/objects\/obj_\w+\/upload\?expires=\d+&signature=[0-9a-f]{64}$/);

  const all = await client.objects.list({ limit: 100 });
  const ids = all.objects.map((o) => o.id);
  assert.ok(ids.indexOf(pending.id) < ids.indexOf(b.id) && ids.indexOf(b.id) < ids.indexOf(a.id),
    'newest first');
  assert.ok(all.objects.every((o) => !('upload_url' in o) || o.upload_url == null));
  assert.deepEqual((await client.objects.list({ name: 'list-a.txt' })).objects.map((o) => o.id), [a.id]);
  assert.deepEqual((await client.objects.list({ state: 'UPLOADING' })).objects.map((o) => o.id),
    [pending.id]);
  assert.ok((await client.objects.list({ search: 'list-' })).objects.length >= 2);
  assert.deepEqual((await client.objects.list({ content_type: 'binary', state: 'UPLOADING' }))
    .objects.map((o) => o.id), [pending.id]);
  const page = await client.objects.list({ limit: 1 });
  assert.equal(page.objects.length, 1);
  assert.equal(page.has_more, true);
  const next = await client.objects.list({ limit: 1, starting_after: page.objects[0].id });
  assert.notEqual(next.objects[0].id, page.objects[0].id);
  assert.deepEqual((await client.objects.listPublic()).objects, []);

  const del = await client.objects.delete(a.id);
  assert.equal(del.state, 'DELETED');
  await rejectsWith(assert, client.objects.retrieve(a.id), 404, /object obj_\w+ not found/);
  await rejectsWith(assert, client.objects.delete(a.id), 404, /not found/);
  await client.objects.delete(pending.id);
  const files = readdirSync(path.join(engine.stateDir, 'objects'));
  assert.ok(!files.some((f) => f.startsWith(a.id) || f.startsWith(pending.id)), files.join(','));
});

test('signed URLs: no key needed, but a forged, altered or expired one is refused', async () => {
  const obj = await client.objects.create({ name: 'signed.txt', content_type: 'text' });
  const url = new URL(obj.upload_url);
  const put = (u, body = 'x') => fetch(u, { method: 'PUT', body });

  // The signature binds the object, the method and the expiry.
  const other = await client.objects.create({ name: 'other.txt', content_type: 'text' });
  const swapped = new URL(url);
  swapped.pathname = `/v1/objects/${other.id}/upload`;
  assert.equal((await put(swapped)).status, 401);
  const later = new URL(url);
  later.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 1));
  assert.equal((await put(later)).status, 401);
  const forged = new URL(url);
  forged.searchParams.set('signature', '0'.repeat(64));
  assert.equal((await put(forged)).status, 401);
  const gone = new URL(url);
  gone.searchParams.set('expires', '1000');
  assert.equal((await put(gone)).status, 401);
  const asGet = await fetch(url);
  assert.equal(asGet.status, 401, 'an upload URL does not download');
  // The API key is no substitute for a signature on these paths.
  const keyed = await engine.raw('PUT', `/v1/objects/${obj.id}/upload`, { body: 'x' });
  assert.equal(keyed.status, 501);
  const keyedGet = await engine.raw('GET', `/v1/objects/${obj.id}/content`);
  assert.equal(keyedGet.status, 403);
  assert.match(keyedGet.json.message, /valid, unexpired signature/);

  // Uploading twice before complete keeps the last bytes; after, 409.
  assert.equal((await put(url, 'first')).status, 200);
  assert.equal((await put(url, 'second')).status, 200);
  await client.objects.complete(obj.id);
  const again = await put(url, 'third');
  assert.equal(again.status, 409);
  assert.match((await again.json()).message, /is READ_ONLY/);
  const dl = await client.objects.download(obj.id, { duration_seconds: 60 });
  const res = await fetch(dl.download_url);
  assert.equal(await res.text(), 'second');
  const wrong = new URL(dl.download_url);
  wrong.pathname = `/v1/objects/${other.id}/content`;
  assert.equal((await fetch(wrong)).status, 401);
  await client.objects.delete(obj.id);
  assert.equal((await fetch(dl.download_url)).status, 404, 'a deleted object cannot be fetched');
  await client.objects.delete(other.id);
});

test('bad input: fields, states, limits', async () => {
  await rejectsWith(assert, client.objects.create({ content_type: 'text' }), 400, /'name' must be/);
  await rejectsWith(assert, client.objects.create({ name: 'x', content_type: 'zip' }), 400,
    /'content_type' must be one of unspecified, text, binary, gzip, tar, tgz \(got "zip"\)/);
  await rejectsWith(assert, client.objects.create({ name: 'x' }), 400, /'content_type' must be one of/);
  await rejectsWith(assert, client.objects.create({ name: 'a\nb', content_type: 'text' }), 400,
    /control characters/);
  await rejectsWith(assert, client.objects.create({ name: 'n'.repeat(513), content_type: 'text' }), 400,
    /1 to 512 bytes/);
  await rejectsWith(assert, client.objects.create({ name: 'x', content_type: 'text', ttl_ms: 0 }), 400,
    /'ttl_ms' must be between 1/);
  await rejectsWith(assert, client.objects.create({ name: 'x', content_type: 'text', metadata: { a: 1 } }),
    400, /metadata/);
  await rejectsWith(assert, client.objects.create({ name: 'x', content_type: 'text', extra: true }), 400,
    /extra/);

  const obj = await client.objects.create({ name: 'never-uploaded', content_type: 'text' });
  await rejectsWith(assert, client.objects.complete(obj.id), 400, /nothing was uploaded/);
  await rejectsWith(assert, client.objects.download(obj.id), 400, /complete its upload/);
  await rejectsWith(assert, client.objects.download('obj_nope'), 404, /not found/);
  await rejectsWith(assert, client.objects.retrieve('obj_bad.id'), 404, /not found/);
  const r = await engine.raw('GET', '/v1/objects/obj_x%2F..%2F..%2Fapi-key');
  assert.ok(r.status === 404 || r.status === 501, `${r.status}`);
  assert.doesNotMatch(r.text, new RegExp(engine.key));
  await rejectsWith(assert, client.objects.list({ state: 'GONE' }), 400, /'state' must be one of/);
  // Paths the routes do not serve: an id that is none is a 404 as for an
  // unknown object, a known id with an operation or method not served a 501.
  const paths = [
    ['POST', '/v1/objects/list_public', 404], ['GET', '/v1/objects/bad.id/info', 404],
    ['POST', '/v1/objects/bad.id', 404], ['POST', `/v1/objects/${obj.id}`, 501],
    ['GET', `/v1/objects/${obj.id}/complete`, 501], ['POST', `/v1/objects/${obj.id}/download`, 501],
    ['GET', `/v1/objects/${obj.id}/info`, 501], ['GET', `/v1/objects/${obj.id}/a/b`, 501],
  ];
  for (const [method, p, status] of paths) {
    const got = await engine.raw(method, p);
    assert.equal(got.status, status, `${method} ${p}: ${got.text}`);
    if (status === 404) assert.match(got.json.message, /object \S+ not found/);
  }

  // One object holds at most one upload body (64 MiB): a larger one is a
  // 413 naming the limit, and nothing is stored.
  const big = Buffer.alloc(64 * 1024 * 1024 + 1, 0x61);
  const res = await fetch(obj.upload_url, { method: 'PUT', body: big });
  assert.equal(res.status, 413);
  assert.match((await res.json()).message, /at most 67108864 bytes/);
  await rejectsWith(assert, client.objects.complete(obj.id), 400, /nothing was uploaded/);
  await client.objects.delete(obj.id);
});

test('a state directory that takes no write: create and upload answer 507, nothing is acknowledged', async (t) => {
  const obj = await client.objects.create({ name: 'frozen.txt', content_type: 'text' });
  const dir = path.join(engine.stateDir, 'objects');
  // An immutable directory refuses new files even to root.
  try {
    execFileSync('chattr', ['+i', dir], { stdio: 'pipe' });
  } catch (e) {
    t.skip(`chattr +i ${dir} failed (${String(e.stderr ?? e.message).trim()}): the state filesystem has no immutable flag`);
    return;
  }
  try {
    await rejectsWith(assert, client.objects.create({ name: 'never.txt', content_type: 'text' }), 507,
      /devboxd could not save this change to its state directory \(Operation not permitted\); nothing was acknowledged/);
    const put = await fetch(obj.upload_url, { method: 'PUT', body: 'lost' });
    assert.equal(put.status, 507);
    assert.match((await put.json()).message, /could not save this change to its state directory/);
  } finally {
    execFileSync('chattr', ['-i', dir]);
  }
  const names = (await client.objects.list({ limit: 5000 })).objects.map((o) => o.name);
  assert.ok(!names.includes('never.txt'), 'a refused create left an object');
  await rejectsWith(assert, client.objects.complete(obj.id), 400, /nothing was uploaded/);
  assert.equal((await fetch(obj.upload_url, { method: 'PUT', body: 'kept' })).status, 200);
  await client.objects.complete(obj.id);
  await client.objects.delete(obj.id);
});

test('ttl_ms: an expired object is gone, with its bytes', async () => {
  const obj = await client.objects.create({ name: 'short-lived', content_type: 'text', ttl_ms: 300 });
  assert.ok(obj.delete_after_time_ms >= obj.create_time_ms + 300);
  await waitFor(async () => {
    const r = await engine.raw('GET', `/v1/objects/${obj.id}`);
    return r.status === 404;
  }, { timeoutMs: 30000, stepMs: 100, what: 'the object to expire' });
  assert.ok(!readdirSync(path.join(engine.stateDir, 'objects')).some((f) => f.startsWith(obj.id)));
});

test('object mounts at create: a file, a tgz unpacked, a gzip; a missing object creates nothing',
  async () => {
    const file = await sdk.storageObject.uploadFromText('mounted text\n', 'mounted.txt');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rlmcp-objdir-'));
    try {
      mkdirSync(path.join(dir, 'src'));
      writeFileSync(path.join(dir, 'src', 'main.py'), 'print("from the archive")\n');
      writeFileSync(path.join(dir, 'README'), 'readme\n');
      const tgz = await sdk.storageObject.uploadFromDir(dir, { name: 'project.tgz' });
      assert.equal((await tgz.getInfo()).content_type, 'tgz');
      const zlib = await import('node:zlib');
      const gz = await sdk.storageObject.uploadFromBuffer(zlib.gzipSync(Buffer.from('unzipped\n')),
        'data.gz', 'gzip');

      const before = (await client.devboxes.list()).devboxes.length;
      await rejectsWith(assert, client.devboxes.create({
        mounts: [{ type: 'object_mount', object_id: 'obj_missing', object_path: '/home/user/x' }],
      }), 400, /mounts\[0\]\.object_id obj_missing: no such object/);
      const pending = await client.objects.create({ name: 'p', content_type: 'text' });
      await rejectsWith(assert, client.devboxes.create({
        mounts: [{ type: 'object_mount', object_id: pending.id, object_path: '/home/user/p' }],
      }), 400, /still UPLOADING/);
      await rejectsWith(assert, client.devboxes.create({
        mounts: [{ type: 'object_mount', object_id: file.id, object_path: 'relative' }],
      }), 400, /object_path must be an absolute path/);
      await rejectsWith(assert, client.devboxes.create({
        mounts: [{ type: 'object_mount', object_id: file.id }],
      }), 400, /object_path must be an absolute path/);
      await rejectsWith(assert, client.devboxes.create({
        mounts: [{ type: 'code_mount', repo_name: 'x', repo_owner: 'y' }],
      }), 400, /"code_mount" is not supported by the local engine/);
      assert.equal((await client.devboxes.list()).devboxes.length, before, 'nothing was created');

      const box = await sdk.devbox.create({
        mounts: [
          { '/home/user/in/mounted.txt': file },
          { '/home/user/project': tgz },
          { type: 'object_mount', object_id: gz.id, object_path: '/home/user/data.txt' },
        ],
      });
      const run = async (cmd) => (await client.devboxes.executeAndAwaitCompletion(box.id, { command: cmd }));
      let r = await run('cat in/mounted.txt; cat project/README; python3 project/src/main.py; '
        + 'cat data.txt; ls -A /tmp');
      assert.equal(r.exit_status, 0, r.stderr);
      assert.equal(r.stdout, 'mounted text\nreadme\nfrom the archive\nunzipped\n',
        'each object is in place and the archive copies are gone from /tmp');
      // The mounted files belong to the devbox user, who can change them.
      r = await run('stat -c %U in/mounted.txt project/README && echo more >> in/mounted.txt');
      assert.equal(r.exit_status, 0, r.stderr);
      assert.equal(r.stdout, 'user\nuser\n');
      // Deleting the object later does not change the devbox.
      await file.delete();
      r = await run('cat in/mounted.txt');
      assert.equal(r.stdout, 'mounted text\nmore\n');
      await client.devboxes.shutdown(box.id);
      await client.objects.delete(pending.id);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

test('objects are durable across a restart; the store is 0700 with 0600 files', async () => {
  const obj = await sdk.storageObject.uploadFromText('kept', 'durable.txt');
  const dir = path.join(engine.stateDir, 'objects');
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  for (const f of readdirSync(dir)) assert.equal(statSync(path.join(dir, f)).mode & 0o777, 0o600, f);
  await engine.stop();
  await engine.start();
  client = engine.client();
  sdk = new RunloopSDK({ bearerToken: engine.key, baseURL: engine.baseURL, maxRetries: 0 });
  const again = sdk.storageObject.fromId(obj.id);
  assert.equal((await again.getInfo()).state, 'READ_ONLY');
  assert.equal(await again.downloadAsText(), 'kept');
});
