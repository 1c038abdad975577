// Blueprint build contexts (`build_context: {type: "object", object_id}`)
// through the official Runloop SDK against a real devboxd built by buildah:
// a directory uploaded with the SDK's storage object calls becomes the
// context COPY reads (beside file_mounts), a devbox from the blueprint
// sees the files; the object may be deleted once the create returned.
// Bad input is a 400 naming what to fix: an unknown object, an object not
// completed, bytes that are not a tar archive, entries leaving the context
// (.., absolute names, symlinks and hard links out), device nodes, an
// archive over RLMCP_BUILD_CONTEXT_MB, a type other than "object". A symlink leading out only through other links fails
// the build before buildah runs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, rejectsWith, sdkRequire, useEngine } from './devboxd.mjs';

const { RunloopSDK } = sdkRequire('@runloop/api-client');

let client;
let sdk;
// A 1 MiB limit: the over-the-limit archive stays small to upload.
const engine = useEngine(new Devboxd({ env: { RLMCP_BUILDER: 'buildah', RLMCP_BUILD_CONTEXT_MB: '1' } }), (c) => {
  client = c;
  sdk = new RunloopSDK({ bearerToken: engine.key, baseURL: engine.baseURL, maxRetries: 0 });
});

const work = mkdtempSync(path.join(os.tmpdir(), 'build-context-'));
const cleanupDirs = [];
after(() => {
  rmSync(work, { recursive: true, force: true });
  for (const d of cleanupDirs) rmSync(d, { recursive: true, force: true });
});

const settled = (id) => blueprintSettled(client, id);
const logText = (id) => blueprintLog(client, id);

// A tar archive with exactly the entries given, written by Python's tarfile
// (which writes names and links as given, unlike tar(1)).
function craftTar(name, entries, gzip = true) {
  const out = path.join(work, name);
  const script = `
import io, json, sys, tarfile
entries = json.loads(sys.argv[2])
with tarfile.open(sys.argv[1], "w:gz" if sys.argv[3] == "1" else "w") as t:
    for e in entries:
        i = tarfile.TarInfo(e["name"])
        data = e.get("data", "").encode() * e.get("repeat", 1)
        i.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE,
                  "hard": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[e["type"]]
        i.linkname = e.get("link", "")
        i.mode = 0o755 if i.type == tarfile.DIRTYPE else 0o644
        if i.type == tarfile.REGTYPE:
            i.size = len(data)
        t.addfile(i, io.BytesIO(data) if i.type == tarfile.REGTYPE else None)
`;
  execFileSync('python3', ['-c', script, out, JSON.stringify(entries), gzip ? '1' : '0']);
  return out;
}

async function upload(file, contentType = 'tgz') {
  const obj = await sdk.storageObject.uploadFromBuffer(readFileSync(file), path.basename(file), contentType);
  return { type: 'object', object_id: obj.id };
}

const dockerfile = 'FROM runloop/starter-x86_64\nCOPY app/ /opt/app/\n';

describe('build_context', () => {
  test('a directory uploaded with the SDK is the context COPY reads', async () => {
    const dir = path.join(work, 'ctx');
    mkdirSync(path.join(dir, 'app', 'bin'), { recursive: true });
    writeFileSync(path.join(dir, 'app', 'hello.txt'), 'hello from the context\n');
    writeFileSync(path.join(dir, 'app', 'bin', 'run.sh'), '#!/bin/sh\necho ran\n');
    chmodSync(path.join(dir, 'app', 'bin', 'run.sh'), 0o755);
    symlinkSync('hello.txt', path.join(dir, 'app', 'link.txt'));
    writeFileSync(path.join(dir, 'notes.txt'), 'not copied\n');
    const obj = await sdk.storageObject.uploadFromDir(dir, { name: 'ctx.tgz' });
    assert.equal((await obj.getInfo()).state, 'READ_ONLY');

    const b = await client.blueprints.create({
      name: 'bc-app',
      dockerfile: dockerfile + 'COPY notes.txt conf.txt /opt/\n',
      file_mounts: { '/conf.txt': 'from file_mounts\n' },
      build_context: { type: 'object', object_id: obj.id },
    });
    // The create checked and kept the archive: deleting the object now
    // does not take the build's context away.
    await obj.delete();
    const done = await settled(b.id);
    const logs = await logText(b.id);
    assert.equal(done.status, 'build_complete', logs);
    assert.match(logs, /unpacking the build context/);

    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const r = await client.devboxes.executeAndAwaitCompletion(box.id, {
      command: 'cat /opt/app/hello.txt /opt/app/link.txt /opt/notes.txt /opt/conf.txt; /opt/app/bin/run.sh; ' +
        'readlink /opt/app/link.txt; stat -c %a /opt/app/bin/run.sh' });
    assert.equal(r.stdout, 'hello from the context\nhello from the context\nnot copied\nfrom file_mounts\n' +
      'ran\nhello.txt\n755\n', r.stderr);
    await client.devboxes.shutdown(box.id);
    await client.blueprints.delete(b.id);
  });

  test('a symlink leading out only through other links fails the build before buildah', async () => {
    // d/e -> .. is the top; s -> d/e/.. is then above it, though each
    // name alone stays inside.
    const ctx = await upload(craftTar('chain.tgz', [
      { name: 'app/', type: 'dir' }, { name: 'app/x', type: 'file', data: 'x' },
      { name: 'd/', type: 'dir' }, { name: 'd/e', type: 'sym', link: '..' },
      { name: 's', type: 'sym', link: 'd/e/..' }]));
    const b = await client.blueprints.create({ name: 'bc-chain', dockerfile, build_context: ctx });
    const done = await settled(b.id);
    const logs = await logText(b.id);
    assert.equal(done.status, 'failed', logs);
    assert.match(logs, /symlink "s" leads outside the build context through other links/);
    assert.doesNotMatch(logs, /STEP|Step 1/);
  });

  test('file_mounts never write through a symlink of the archive, not even one dangling at unpack', async () => {
    // a climbs through m, which does not exist when the archive is
    // unpacked: the file_mounts write of /m/x would create it, and /a/pwn
    // would then land in a host directory. Neither may happen.
    const host = mkdtempSync(path.join(os.tmpdir(), 'bc-escape-'));
    cleanupDirs.push(host);
    // Each d/e/ counts two levels down for a name-only check but stays at
    // the top; the ../ then climb to the host's /.
    const up = '../'.repeat(8);
    const ctx = await upload(craftTar('dangling.tgz', [
      { name: 'app/', type: 'dir' }, { name: 'app/x', type: 'file', data: 'x' },
      { name: 'd/', type: 'dir' }, { name: 'd/e', type: 'sym', link: '..' },
      { name: 'a', type: 'sym', link: `m/../${'d/e/'.repeat(4)}${up}${host.slice(1)}` }]));
    const b = await client.blueprints.create({
      name: 'bc-dangling', dockerfile, build_context: ctx,
      file_mounts: { '/m/x': '', '/a/pwn': 'written outside\n' },
    });
    const done = await settled(b.id);
    const logs = await logText(b.id);
    assert.equal(done.status, 'failed', logs);
    assert.deepEqual(readdirSync(host), [], 'a file_mounts write left the build context');
    assert.match(logs, /symlink "a" leads outside the build context/);

    // A link that stays inside is fine in the archive, but a file_mounts
    // path through it is refused rather than followed.
    const inside = await upload(craftTar('inside.tgz', [
      { name: 'app/', type: 'dir' }, { name: 'app/x', type: 'file', data: 'x' },
      { name: 'l', type: 'sym', link: 'app' }]));
    const b2 = await client.blueprints.create({
      name: 'bc-through-link', dockerfile, build_context: inside, file_mounts: { '/l/y': 'y\n' },
    });
    const done2 = await settled(b2.id);
    const logs2 = await logText(b2.id);
    assert.equal(done2.status, 'failed', logs2);
    assert.match(logs2, /cannot write l\/y into the build context: .*must not pass through a symlink/);
  });

  test('bad input is a 400 naming what to fix', async () => {
    const create = (build_context, extra = {}) =>
      client.blueprints.create({ name: 'bc-bad', dockerfile, build_context, ...extra });
    await rejectsWith(assert, create({ type: 'object', object_id: 'obj_nosuchobject' }), 400,
      /build_context\.object_id: object obj_nosuchobject not found.*upload a tar or tar\.gz archive/);
    const pending = await client.objects.create({ name: 'pending.tgz', content_type: 'tgz' });
    await rejectsWith(assert, create({ type: 'object', object_id: pending.id }), 400,
      new RegExp(`object ${pending.id} is UPLOADING, not READ_ONLY.*complete it`));
    const text = await sdk.storageObject.uploadFromText('just text, no archive\n', 'notes.txt');
    await rejectsWith(assert, create({ type: 'object', object_id: text.id }), 400,
      /build_context: the object is not a tar or tar\.gz archive/);
    await rejectsWith(assert, create({ type: 'git', object_id: text.id }), 400, /build_context\.type must be "object"/);
    await rejectsWith(assert, create({ object_id: text.id }), 400, /build_context\.type must be "object"/);
    await rejectsWith(assert, create({ type: 'object' }), 400, /build_context\.object_id is required/);
    await rejectsWith(assert, create('obj_x'), 400, /build_context must be an object/);
    await rejectsWith(assert, create({ type: 'object', object_id: text.id, path: '/' }), 400, /build_context/);

    const cases = [
      ['dotdot.tgz', [{ name: 'app/../../escape.txt', type: 'file', data: 'x' }],
        /entry "app\/\.\.\/\.\.\/escape\.txt" leaves the build context/],
      ['abs.tar', [{ name: '/etc/cron.d/evil', type: 'file', data: 'x' }],
        /entry "\/etc\/cron\.d\/evil" leaves the build context/, false],
      ['symout.tgz', [{ name: 'app/', type: 'dir' }, { name: 'app/l', type: 'sym', link: '../../../etc' }],
        /symlink "app\/l" -> "\.\.\/\.\.\/\.\.\/etc" points outside the build context/],
      ['symabs.tgz', [{ name: 'etc', type: 'sym', link: '/etc' }],
        /symlink "etc" -> "\/etc" points outside the build context/],
      ['hardout.tgz', [{ name: 'passwd', type: 'hard', link: '../../../etc/passwd' }],
        /hard link "passwd" points to "\.\.\/\.\.\/\.\.\/etc\/passwd", outside the build context/],
      ['hardabs.tgz', [{ name: 'shadow', type: 'hard', link: '/etc/shadow' }],
        /hard link "shadow" points to "\/etc\/shadow", outside/],
      ['dev.tgz', [{ name: 'app/', type: 'dir' }, { name: 'app/mem', type: 'chr' }],
        /entry "app\/mem" is a device node/],
      ['fifo.tgz', [{ name: 'pipe', type: 'fifo' }], /entry "pipe" is a fifo or socket/],
      // 2 MiB of one byte: tiny compressed, over the 1 MiB limit unpacked.
      ['big.tgz', [{ name: 'app/', type: 'dir' }, { name: 'app/big', type: 'file', data: 'a', repeat: 2 << 20 }],
        /the archive unpacks to more than 1 MiB \(RLMCP_BUILD_CONTEXT_MB\)/],
    ];
    for (const [name, entries, re, gzip] of cases) {
      const file = craftTar(name, entries, gzip !== false);
      await rejectsWith(assert, create(await upload(file, gzip === false ? 'tar' : 'tgz')), 400, re);
    }
    // A failed create left no blueprint behind.
    const list = await client.blueprints.list({ name: 'bc-bad' });
    assert.equal(list.blueprints.length, 0);
  });
});
