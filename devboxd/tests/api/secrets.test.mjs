// Account secrets through the official Runloop SDK: create, list, retrieve,
// update, delete by name; values never come back; a devbox create's
// `secrets: {ENV: NAME}` injects them; bad input; storage and durability.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Devboxd, filesContaining, rejectsWith, useEngine, waitFor } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd(), (c) => { client = c; });

const VALUE = 'sk-live-Very$ecret "quoted" value';

test('create, list, retrieve, update and delete by name; values never returned', async () => {
  const created = await client.secrets.create({ name: 'API_KEY', value: VALUE });
  assert.match(created.id, /^sec_/);
  assert.equal(created.name, 'API_KEY');
  assert.equal(typeof created.create_time_ms, 'number');
  assert.deepEqual(Object.keys(created).sort(), ['create_time_ms', 'id', 'name', 'update_time_ms']);

  await client.secrets.create({ name: 'OTHER_1', value: '' });
  const list = await client.secrets.list();
  // Newest first; two creates may share a millisecond, so compare the set.
  assert.deepEqual(list.secrets.map((s) => s.name).sort(), ['API_KEY', 'OTHER_1']);
  assert.equal(list.has_more, false);
  assert.equal(list.total_count, 2);
  const page = await client.secrets.list({ limit: 1 });
  assert.equal(page.secrets.length, 1);
  assert.equal(page.has_more, true);

  const got = await client.secrets.retrieve('API_KEY');
  assert.equal(got.id, created.id);
  const upd = await client.secrets.update('API_KEY', { value: 'rotated' });
  assert.equal(upd.id, created.id);
  assert.ok(upd.update_time_ms >= created.update_time_ms);

  // No reply ever carries a value.
  for (const r of [await engine.raw('GET', '/v1/secrets'), await engine.raw('GET', '/v1/secrets/API_KEY')])
    assert.doesNotMatch(r.text, /rotated|Very\$ecret|"value"/);

  const del = await client.secrets.delete('OTHER_1');
  assert.equal(del.name, 'OTHER_1');
  await rejectsWith(assert, client.secrets.retrieve('OTHER_1'), 404, /secret OTHER_1 not found/);
  await rejectsWith(assert, client.secrets.delete('OTHER_1'), 404, /not found/);
  await rejectsWith(assert, client.secrets.update('OTHER_1', { value: 'x' }), 404, /not found/);
});

test('stored 0600 outside every devbox, never in devboxd output', async () => {
  const dir = path.join(engine.stateDir, 'secrets');
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  const files = readdirSync(dir);
  assert.ok(files.includes('API_KEY.json'), files.join(','));
  for (const f of files) assert.equal(statSync(path.join(dir, f)).mode & 0o777, 0o600, f);
  assert.match(readFileSync(path.join(dir, 'API_KEY.json'), 'utf8'), /rotated/);
  assert.doesNotMatch(engine.stderr, /rotated|Very\$ecret/);
});

test('bad input: names, values, duplicates, unknown fields', async () => {
  await rejectsWith(assert, client.secrets.create({ name: '1ABC', value: 'x' }), 400,
    /secret name "1ABC" is not valid/);
  await rejectsWith(assert, client.secrets.create({ name: 'has-dash', value: 'x' }), 400,
    /letters, digits and _/);
  await rejectsWith(assert, client.secrets.create({ name: 'A'.repeat(129), value: 'x' }), 400,
    /1 to 128 letters/);
  await rejectsWith(assert, client.secrets.create({ name: 'BIG', value: 'x'.repeat(32 * 1024 + 1) }), 400,
    /at most 32768 bytes/);
  await rejectsWith(assert, client.secrets.create({ name: 'NOVAL' }), 400, /'value' is required/);
  await rejectsWith(assert, client.secrets.create({ name: 'NUM', value: 5 }), 400, /must be a string/);
  await rejectsWith(assert, client.secrets.create({ value: 'x' }), 400, /'name' is required/);
  await rejectsWith(assert, client.secrets.create({ name: 'API_KEY', value: 'x' }), 409, /already exists/);
  await rejectsWith(assert, client.secrets.create({ name: 'X', value: 'x', extra: 1 }), 400, /extra/);
  await rejectsWith(assert, client.secrets.update('API_KEY', { name: 'RENAMED', value: 'x' }), 400,
    /cannot be renamed/);
  assert.equal((await engine.raw('GET', '/v1/secrets/api.key')).status, 400);
  const r = await engine.raw('GET', '/v1/secrets/..%2Fapi-key');
  assert.ok(r.status === 400 || r.status === 404 || r.status === 501, `${r.status}`);
  assert.doesNotMatch(r.text, new RegExp(engine.key));
  const max = await client.secrets.create({ name: 'MAXSIZE', value: 'y'.repeat(32 * 1024) });
  assert.equal(max.name, 'MAXSIZE');
  await client.secrets.delete('MAXSIZE');
});

test('devbox create injects secrets; a missing one creates nothing; deleting keeps the devbox working',
  async () => {
    await client.secrets.create({ name: 'DB_PASSWORD', value: 'pa ss\nword' });
    const before = (await client.devboxes.list()).devboxes.length;
    await rejectsWith(assert, client.devboxes.create({ secrets: { TOKEN: 'NO_SUCH_SECRET' } }), 400,
      /secrets.TOKEN names the secret NO_SUCH_SECRET, which does not exist/);
    await rejectsWith(assert, client.devboxes.create({ secrets: { 'BAD-ENV': 'API_KEY' } }), 400,
      /not a valid variable name/);
    await rejectsWith(assert, client.devboxes.create({
      secrets: { TOKEN: 'API_KEY' }, environment_variables: { TOKEN: 'x' },
    }), 400, /both environment_variables and secrets/);
    assert.equal((await client.devboxes.list()).devboxes.length, before, 'nothing was created');

    const box = await client.devboxes.createAndAwaitRunning({
      secrets: { MY_KEY: 'API_KEY', DB_PASS: 'DB_PASSWORD' },
    });
    // base64: the values themselves never reach the command's stored output.
    const run = async () => {
      const out = await client.devboxes.executeAndAwaitCompletion(box.id, {
        command: 'printf "%s|%s" "$MY_KEY" "$DB_PASS" | base64 -w0',
      });
      return { ...out, stdout: Buffer.from(out.stdout, 'base64').toString() };
    };
    let r = await run();
    assert.equal(r.stdout, 'rotated|pa ss\nword');
    // The devbox view does not carry the values.
    assert.doesNotMatch(JSON.stringify(await client.devboxes.retrieve(box.id)), /rotated|pa ss/);

    await client.secrets.delete('DB_PASSWORD');
    await client.secrets.update('API_KEY', { value: 'changed-later' });
    r = await run();
    assert.equal(r.stdout, 'rotated|pa ss\nword');
    // It survives a suspend/resume and a devboxd restart with its values.
    await client.devboxes.suspend(box.id);
    await client.devboxes.awaitSuspended(box.id);
    await client.devboxes.resume(box.id);
    await client.devboxes.awaitRunning(box.id);
    r = await run();
    assert.equal(r.stdout, 'rotated|pa ss\nword');
    await engine.stop();
    await engine.start();
    client = engine.client();
    await client.devboxes.awaitRunning(box.id);
    r = await run();
    assert.equal(r.stdout, 'rotated|pa ss\nword');
    assert.equal((await client.secrets.retrieve('API_KEY')).name, 'API_KEY', 'secrets are durable');
    // While it may run again its record keeps the values (a resume starts its
    // processes with them)...
    const record = path.join(engine.stateDir, 'devboxes', box.id, 'devbox.json');
    assert.match(readFileSync(record, 'utf8'), /rotated/);
    await client.devboxes.shutdown(box.id);
    await waitFor(async () => (await client.devboxes.retrieve(box.id)).status === 'shutdown',
      { timeoutMs: 60000, what: 'shutdown' });
    // ...once it ended, no file of devboxd's but the secret's own holds a value
    // (DB_PASSWORD was deleted: no file at all), nor after a restart.
    const needles = ['rotated', 'pa ss\nword'];
    assert.deepEqual(filesContaining(engine.stateDir, needles, { skip: ['secrets'] }), []);
    assert.deepEqual(filesContaining(engine.stateDir, ['pa ss\nword']), []);
    await engine.stop();
    await engine.start();
    client = engine.client();
    assert.deepEqual(filesContaining(engine.stateDir, needles, { skip: ['secrets'] }), []);
  });
