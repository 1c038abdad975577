// Devboxes from a snapshot mount its layers where the store keeps them
// (read-only, idmapped to each devbox's ids) under their own writable
// layer: nothing is copied, so a devbox from a 24 MiB snapshot adds little
// to the state dir; files keep their owners (root's stay root's, the
// user's the user's), a write lands in the devbox's own layer only, and
// the layers outlive the devbox that wrote them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd(), (c) => { client = c; });

async function run(id, command) {
  const r = await client.devboxes.executeAndAwaitCompletion(id, { command });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
}

// KiB allocated under a devbox's dir (its sparse disk counts what it holds).
function diskKiB(id) {
  const out = execFileSync('du', ['-sk', path.join(engine.stateDir, 'devboxes', id)], { encoding: 'utf8' });
  return Number(out.split('\t')[0]);
}

describe('layer mounts', () => {
  test('devboxes from a snapshot share its layer: owners kept, writes their own, little disk', async () => {
    const src = await client.devboxes.createAndAwaitRunning({ name: 'mount-src' });
    const made = await run(src.id, 'head -c 24M /dev/urandom > ~/big && sha256sum ~/big | cut -c1-64 && ' +
      'sudo sh -c "mkdir -p /opt/tool && echo root-file > /opt/tool/conf && chmod 644 /opt/tool/conf"');
    assert.equal(made.code, 0, made.err);
    const sum = made.out.trim();
    const snap = await client.devboxes.snapshotDisk(src.id, { name: 'mounted' });

    const kids = [];
    for (let i = 0; i < 2; i++)
      kids.push(await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id }));
    for (const kid of kids) {
      const r = await run(kid.id, 'sha256sum ~/big | cut -c1-64; stat -c %u ~/big /opt/tool/conf; cat /opt/tool/conf');
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, `${sum}\n1000\n0\nroot-file\n`);
      // 24 MiB copied per devbox before layers were mounted.
      const kib = diskKiB(kid.id);
      assert.ok(kib < 8 * 1024, `devbox ${kid.id} holds ${kib} KiB on the host`);
    }

    // Root changes a root file, the user a user file: each lands in that
    // devbox's own layer, the other devbox and the source see the original.
    const [a, b] = kids;
    const w = await run(a.id, 'sudo sh -c "echo changed > /opt/tool/conf" && echo more >> ~/big && ' +
      'stat -c %u /opt/tool/conf ~/big && touch /opt/tool/x 2>/dev/null || echo user-cannot');
    assert.equal(w.code, 0, w.err);
    assert.equal(w.out, '0\n1000\nuser-cannot\n');
    const seen = await run(b.id, 'cat /opt/tool/conf; sha256sum ~/big | cut -c1-64');
    assert.equal(seen.out, `root-file\n${sum}\n`);
    assert.equal((await run(src.id, 'cat /opt/tool/conf')).out, 'root-file\n');

    // The source gone (its disk deleted), devboxes on its snapshot run on.
    await client.devboxes.shutdown(src.id);
    const after = await run(b.id, 'sha256sum ~/big | cut -c1-64');
    assert.equal(after.out, `${sum}\n`);

    // A snapshot of a devbox on a snapshot: a chain of two layers of two
    // owners, both mounted for the grandchild.
    const s2 = await client.devboxes.snapshotDisk(a.id, {});
    const g = await client.devboxes.createAndAwaitRunning({ snapshot_id: s2.id });
    const gr = await run(g.id, 'cat /opt/tool/conf; tail -c 5 ~/big; stat -c %u /opt/tool/conf ~/big; ' +
      'sudo rm /opt/tool/conf && test ! -e /opt/tool/conf && echo removed');
    assert.equal(gr.code, 0, gr.err);
    assert.equal(gr.out, 'changed\nmore\n0\n1000\nremoved\n');
    assert.ok(diskKiB(g.id) < 8 * 1024, `grandchild holds ${diskKiB(g.id)} KiB`);
    assert.equal((await run(a.id, 'cat /opt/tool/conf')).out, 'changed\n');

    for (const box of [g, a, b]) await client.devboxes.shutdown(box.id);
    await client.devboxes.diskSnapshots.delete(s2.id);
    await client.devboxes.diskSnapshots.delete(snap.id);
  });
});
