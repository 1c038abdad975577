// Retention of ended devboxes' records: with RLMCP_RECORD_RETENTION_MAX=5
// only the 5 newest shut-down devboxes stay (in the API and under the state
// dir), running ones are never touched; RLMCP_RECORD_RETENTION_DAYS removes
// ended ones by age, also those loaded at a restart; bad settings stop
// devboxd with a message naming them.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { Devboxd, waitFor } from './devboxd.mjs';

const engines = [];
after(async () => {
  for (const e of engines) await e.cleanup();
});

const ended = async (client) => (await client.devboxes.list({ status: 'shutdown', limit: 100 })).devboxes;
// Devbox records (a warm sandbox's directory has no devbox.json).
const recordDirs = (engine) => readdirSync(path.join(engine.stateDir, 'devboxes'))
  .filter((d) => existsSync(path.join(engine.stateDir, 'devboxes', d, 'devbox.json')));

test('the newest RLMCP_RECORD_RETENTION_MAX ended devboxes stay, older ones go', async () => {
  const engine = new Devboxd({ env: { RLMCP_RECORD_RETENTION_MAX: '5' } });
  engines.push(engine);
  await engine.start();
  let client = engine.client();
  const keeper = await client.devboxes.createAndAwaitRunning({ name: 'keeps-running' });
  const ids = [];
  for (let i = 0; i < 8; i++) {
    const b = await client.devboxes.createAndAwaitRunning({ name: `gone-${i}` });
    await client.devboxes.executeAndAwaitCompletion(b.id, { command: `echo output-${i}` });
    await client.devboxes.shutdown(b.id);
    ids.push(b.id);
  }
  await waitFor(async () => (await ended(client)).length === 5 || null,
    { timeoutMs: 60000, stepMs: 200, what: 'only 5 ended devboxes to stay' });
  const kept = (await ended(client)).map((b) => b.id).sort();
  assert.deepEqual(kept, ids.slice(3).sort(), 'the newest 5 stay');
  for (const id of ids.slice(0, 3)) {
    const r = await engine.raw('GET', `/v1/devboxes/${id}`);
    assert.equal(r.status, 404, `${id}: ${r.text}`);
    assert.equal(existsSync(path.join(engine.stateDir, 'devboxes', id)), false, `${id}'s record remains`);
  }
  assert.deepEqual(recordDirs(engine).sort(), [keeper.id, ...ids.slice(3)].sort());
  // The running one and the kept ones work as before.
  assert.equal((await client.devboxes.retrieve(keeper.id)).status, 'running');
  assert.match(JSON.stringify(await client.devboxes.logs.list(ids[7])), /output-7|echo output-7/);

  // By age, also for records loaded at a restart: ended ones older than
  // ~4 s go, the running one stays.
  await engine.stop();
  engine.env = { RLMCP_RECORD_RETENTION_DAYS: '0.00005' };
  await engine.start();
  client = engine.client();
  await waitFor(async () => (await ended(client)).length === 0 || null,
    { timeoutMs: 60000, stepMs: 200, what: 'the aged records to go' });
  await client.devboxes.awaitRunning(keeper.id);
  assert.deepEqual(recordDirs(engine), [keeper.id]);
  await client.devboxes.shutdown(keeper.id);
});

test('bad retention settings stop devboxd with a message naming them', async () => {
  for (const [k, v, re] of [
    ['RLMCP_RECORD_RETENTION_MAX', 'many', /RLMCP_RECORD_RETENTION_MAX="many" is not a whole number from 0 to 10000000/],
    ['RLMCP_RECORD_RETENTION_MAX', '2.5', /RLMCP_RECORD_RETENTION_MAX="2\.5" is not a whole number/],
    ['RLMCP_RECORD_RETENTION_DAYS', '0', /RLMCP_RECORD_RETENTION_DAYS="0" is not a number from 1e-05 to 36500/],
  ]) {
    const e = new Devboxd({ env: { [k]: v } });
    await assert.rejects(e.start(), re);
    e.proc = null;
    await e.cleanup();
  }
});
