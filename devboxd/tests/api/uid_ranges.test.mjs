// Host id ranges are unique per machine, not per engine: two devboxd engines
// on different state dirs claim in one directory (RLMCP_UID_CLAIMS_DIR, here
// a temp one so the small RLMCP_UID_RANGE_SLOTS below meets no other
// engine's devboxes; by default /var/lib/devboxd/uids), so their devboxes
// never share host ids; a claim whose owner's record dir is gone (a state
// dir deleted without a clean stop) is taken again, a live one never.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Devboxd, waitFor } from './devboxd.mjs';

const SB_RANGE_BASE = 1048576;
const SB_RANGE_SIZE = 65536;
const SLOTS = 3;
const claims = mkdtempSync(path.join(tmpdir(), 'devboxd-claims-'));
const env = { RLMCP_UID_CLAIMS_DIR: claims, RLMCP_UID_RANGE_SLOTS: String(SLOTS) };
const a = new Devboxd({ env });
const b = new Devboxd({ env });
after(async () => {
  await a.cleanup();
  await b.cleanup();
  rmSync(claims, { recursive: true, force: true });
});

// {range base -> owner dir} of every claim.
const claimed = () => Object.fromEntries(readdirSync(claims).filter((f) => /^\d+$/.test(f))
  .map((f) => [Number(f), readFileSync(path.join(claims, f), 'utf8')]));
const rangeOf = (engine, id) => {
  const dir = path.join(engine.stateDir, 'devboxes', id, 'sandbox');
  const hit = Object.entries(claimed()).filter(([, owner]) => owner === dir);
  assert.equal(hit.length, 1, `${id} holds ${hit.length} claims: ${JSON.stringify(claimed())}`);
  return Number(hit[0][0]);
};

test('two engines never hand out the same host id range; stale claims are taken, live ones never', async () => {
  // Every slot starts claimed by devboxes of a state dir that is gone.
  const gone = path.join(tmpdir(), `devboxd-gone-${process.pid}`);
  for (let k = 0; k < SLOTS; k++)
    writeFileSync(path.join(claims, String(SB_RANGE_BASE + k * SB_RANGE_SIZE)),
      path.join(gone, 'devboxes', `dbx_gone${k}`, 'sandbox'));
  // One whose record dir is still there (a stopped engine's suspended
  // devbox) is live: never taken.
  const kept = path.join(claims, 'kept-state', 'devboxes', 'dbx_kept');
  mkdirSync(kept, { recursive: true });
  writeFileSync(path.join(claims, String(SB_RANGE_BASE + SLOTS * SB_RANGE_SIZE)), path.join(kept, 'sandbox'));

  await a.start();
  await b.start();
  const ca = a.client();
  const cb = b.client();
  const a1 = await ca.devboxes.createAndAwaitRunning({ name: 'a1' });
  const b1 = await cb.devboxes.createAndAwaitRunning({ name: 'b1' });
  const a2 = await ca.devboxes.createAndAwaitRunning({ name: 'a2' });
  const ranges = [rangeOf(a, a1.id), rangeOf(b, b1.id), rangeOf(a, a2.id)];
  assert.equal(new Set(ranges).size, 3, `overlapping host id ranges: ${ranges}`);
  for (const r of ranges) assert.ok(r >= SB_RANGE_BASE && r < SB_RANGE_BASE + SLOTS * SB_RANGE_SIZE, `${r}`);
  // The devbox's processes run on its range.
  const r = await cb.devboxes.executeAndAwaitCompletion(b1.id, { command: 'cat /proc/self/uid_map' });
  assert.match(r.stdout, new RegExp(`^\\s*0\\s+${rangeOf(b, b1.id)}\\s+${SB_RANGE_SIZE}\\s*$`, 'm'));

  // Every slot is held by a live devbox of one engine or the other: the
  // next one fails to boot, saying so, and takes nobody's range.
  const b2 = await cb.devboxes.create({ name: 'b2' });
  const failed = await waitFor(async () => {
    const v = await cb.devboxes.retrieve(b2.id);
    return v.status === 'failure' ? v : null;
  }, { timeoutMs: 60000, what: 'the devbox without a range to fail' });
  assert.match(JSON.stringify(failed), /all 3 host uids are in use \(by the devboxes and builds of every devboxd/);
  assert.deepEqual([rangeOf(a, a1.id), rangeOf(b, b1.id), rangeOf(a, a2.id)], ranges);
  assert.equal(claimed()[SB_RANGE_BASE + SLOTS * SB_RANGE_SIZE], path.join(kept, 'sandbox'));

  // A range freed by one engine's shutdown goes to the other's next devbox.
  await ca.devboxes.shutdown(a1.id);
  await waitFor(async () => (await ca.devboxes.retrieve(a1.id)).status === 'shutdown' || null,
    { timeoutMs: 60000, what: 'a1 to shut down' });
  const b3 = await cb.devboxes.createAndAwaitRunning({ name: 'b3' });
  assert.equal(rangeOf(b, b3.id), ranges[0]);
  assert.notEqual(rangeOf(b, b3.id), rangeOf(a, a2.id));
  for (const [c, id] of [[ca, a2.id], [cb, b1.id], [cb, b3.id]]) await c.devboxes.shutdown(id);
});

test('a bad RLMCP_UID_RANGE_SLOTS stops devboxd with a message naming it', async () => {
  const e = new Devboxd({ env: { ...env, RLMCP_UID_RANGE_SLOTS: '0' } });
  await assert.rejects(e.start(), /RLMCP_UID_RANGE_SLOTS="0" is not a whole number from 1 to 4096/);
  e.proc = null;
  await e.cleanup();
});
