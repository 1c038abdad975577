// Leases and evictions through the official Runloop SDK against a real
// devboxd: the SDK's onEvict monitor (GET /v1/devboxes/evictions/watch)
// is told of a devbox whose lifetime ends within the notice, with the
// deadline at which it is then shut down; a renewal (devboxd's extension,
// POST /v1/devboxes/{id}/renew) moves the lifetime's end and is announced
// as a new eviction once pending again; bad renewals are 400s that say
// what to change; accounts.me's created_at is a time also when the key
// comes from --api-key-file; a blueprint's base_blueprint_name takes
// Runloop's public image names.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, rejectsWith, sdkRequire, useEngine, waitFor } from './devboxd.mjs';

const { RunloopSDK } = sdkRequire('@runloop/api-client');

let client;
// A 120 s notice: a devbox living 5 s is pending from its start, one living
// an hour is not.
const engine = useEngine(new Devboxd({ env: { RLMCP_EVICTION_NOTICE_S: '120', RLMCP_BUILDER: 'buildah' } }),
  (c) => { client = c; });

describe('leases and evictions', () => {
  test('onEvict: the SDK monitor gets the deadline, and the devbox ends there', async () => {
    const sdk = new RunloopSDK({ bearerToken: engine.key, baseURL: engine.baseURL, maxRetries: 0 });
    const long = await client.devboxes.createAndAwaitRunning({ launch_parameters: { keep_alive_time_seconds: 3600 } });
    const short = await client.devboxes.createAndAwaitRunning({ launch_parameters: { keep_alive_time_seconds: 8 } });
    assert.ok(Math.abs(short.lifetime_end_ms - (short.create_time_ms + 8000)) < 2000, JSON.stringify(short));
    const heard = [];
    const got = new Promise((resolve) => {
      sdk.devbox.fromId(short.id).onEvict((d, deadline) => { heard.push([d.id, deadline]); resolve(); });
      sdk.devbox.fromId(long.id).onEvict((d, deadline) => heard.push([d.id, deadline]));
    });
    let timer;
    await Promise.race([got, new Promise((_, rej) => {
      timer = setTimeout(() => rej(new Error('no eviction event in 30 s')), 30000);
    })]).finally(() => clearTimeout(timer));
    assert.deepEqual(heard, [[short.id, short.lifetime_end_ms]]);
    // The devbox is shut down at its deadline (not before it).
    const ended = await waitFor(async () => {
      const v = await client.devboxes.retrieve(short.id);
      return v.status === 'shutdown' ? v : null;
    }, { timeoutMs: 60000, stepMs: 200, what: 'the evicted devbox to end' });
    assert.equal(ended.shutdown_reason, 'keep_alive_timeout');
    assert.ok(ended.end_time_ms >= short.lifetime_end_ms, `${ended.end_time_ms} < ${short.lifetime_end_ms}`);
    assert.equal(ended.lifetime_end_ms, null);
    // A renewal that brings the other's end within the notice is a new
    // eviction for the monitor, with the renewed deadline.
    const t0 = Date.now();
    const renewed = await client.post(`/v1/devboxes/${long.id}/renew`, { body: { keep_alive_time_seconds: 60 } });
    assert.ok(renewed.lifetime_end_ms >= t0 + 60000 && renewed.lifetime_end_ms <= Date.now() + 60000,
      JSON.stringify(renewed));
    await waitFor(() => heard.length === 2, { timeoutMs: 30000, what: 'the renewed devbox\'s eviction' });
    assert.deepEqual(heard[1], [long.id, renewed.lifetime_end_ms]);
    sdk.devbox.fromId(long.id).cancelOnEvict();
    await client.devboxes.shutdown(long.id);
  });

  test('the raw stream: every pending eviction on connect, as DevboxEvictionEventView', async () => {
    const box = await client.devboxes.createAndAwaitRunning({ launch_parameters: { keep_alive_time_seconds: 90 } });
    const stream = await client.devboxes.watchEvictions({ headers: { Accept: 'text/event-stream' } });
    let ev = null;
    for await (const e of stream) {
      if (e.devbox_id === box.id) { ev = e; break; }
    }
    stream.controller.abort();
    assert.deepEqual(Object.keys(ev).sort(), ['devbox_id', 'eviction_deadline_ms']);
    assert.equal(ev.eviction_deadline_ms, (await client.devboxes.retrieve(box.id)).lifetime_end_ms);
    await client.devboxes.shutdown(box.id);
  });

  test('renew: the lifetime ends N seconds from now; bad input says what to change', async () => {
    const box = await client.devboxes.createAndAwaitRunning({ launch_parameters: { keep_alive_time_seconds: 600 } });
    const t0 = Date.now();
    const v = await client.post(`/v1/devboxes/${box.id}/renew`, { body: { keep_alive_time_seconds: 7200 } });
    assert.equal(v.id, box.id);
    assert.ok(v.lifetime_end_ms >= t0 + 7200000 && v.lifetime_end_ms <= Date.now() + 7200000);
    assert.equal((await client.devboxes.retrieve(box.id)).lifetime_end_ms, v.lifetime_end_ms);
    await rejectsWith(assert, client.post(`/v1/devboxes/${box.id}/renew`, { body: { keep_alive_time_seconds: 30 } }),
      400, /keep_alive_time_seconds.*60/);
    await rejectsWith(assert, client.post(`/v1/devboxes/${box.id}/renew`, { body: {} }), 400,
      /keep_alive_time_seconds is required/);
    await rejectsWith(assert, client.post(`/v1/devboxes/${box.id}/renew`, { body: { seconds: 60 } }), 400, /seconds/);
    await client.devboxes.suspend(box.id);
    await client.devboxes.awaitSuspended(box.id);
    await rejectsWith(assert, client.post(`/v1/devboxes/${box.id}/renew`, { body: { keep_alive_time_seconds: 600 } }),
      400, /is suspended; only a running .*a resume starts a fresh lifetime/);
    await client.devboxes.shutdown(box.id);
    await rejectsWith(assert, client.post('/v1/devboxes/dbx_nosuch/renew', { body: { keep_alive_time_seconds: 600 } }),
      404, /not found/);
  });

  test('a blueprint\'s base_blueprint_name takes Runloop\'s public image names', async () => {
    const b = await client.blueprints.create({ name: 'lease-on-starter', base_blueprint_name: 'runloop/starter-x86_64',
      system_setup_commands: ['echo from-setup > ~/setup.txt'] });
    const done = await blueprintSettled(client, b.id);
    assert.equal(done.status, 'build_complete', await blueprintLog(client, b.id));
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const r = await client.devboxes.executeAndAwaitCompletion(box.id, { command: 'cat ~/setup.txt' });
    assert.equal(r.stdout, 'from-setup\n', r.stderr);
    await client.devboxes.shutdown(box.id);
    await rejectsWith(assert, client.blueprints.create({ name: 'bad-base', base_blueprint_name: 'runloop/nosuch-x86_64' }),
      400, /unknown image "runloop\/nosuch-x86_64"/);
    await client.blueprints.delete(b.id);
  });
});

describe('accounts.me with --api-key-file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'devboxd-keyfile-'));
  const keyFile = path.join(dir, 'key');
  writeFileSync(keyFile, 'ak_local_from_a_file\n', { mode: 0o600 });
  const other = useEngine(new Devboxd({ extraArgs: ['--api-key-file', keyFile] }));

  test('created_at is a time, not null', async () => {
    const me = await other.client().accounts.me();
    assert.match(me.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(Math.abs(Date.parse(me.created_at) - Date.now()) < 3600000, me.created_at);
    rmSync(dir, { recursive: true, force: true });
  });
});
