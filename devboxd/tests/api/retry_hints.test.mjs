// Answers a retry cannot change reach an SDK user at once: the official
// Runloop SDK (with its default retries) sends a duplicate name, a missing
// object or an unimplemented endpoint once, because devboxd marks them
// x-should-retry: false; and the messages say what to do in words an SDK
// user can act on (no route of the engine's own docs, what serves a 501).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Devboxd, useEngine } from './devboxd.mjs';

const engine = useEngine(new Devboxd());

// A client with the SDK's default retries, counting what it sends.
function countingClient() {
  const sent = [];
  const client = engine.client({
    maxRetries: 2,
    fetch: (url, init) => {
      sent.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
      return globalThis.fetch(url, init);
    },
  });
  return { client, sent };
}

// The call fails with status once, without a retry; returns the error.
async function failsOnce(make, status, re) {
  const { client, sent } = countingClient();
  let err = null;
  try {
    await make(client);
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected HTTP ${status}, the call succeeded`);
  assert.equal(err.status, status, `${err.status}: ${err.message}`);
  assert.equal(err.headers['x-should-retry'], 'false', JSON.stringify(err.headers));
  assert.equal(sent.length, 1, `sent ${sent.length} times: ${sent.join(', ')}`);
  if (re) assert.match(String(err.error?.message ?? err.message), re);
  return err;
}

test('a duplicate name is a 409 the SDK does not retry, saying what to do instead', async () => {
  const c = engine.client();
  await c.secrets.create({ name: 'DUP', value: 'x' });
  const e = await failsOnce((cl) => cl.secrets.create({ name: 'DUP', value: 'y' }), 409,
    /a secret named DUP already exists; pick another name, or update that secret's value instead/);
  assert.doesNotMatch(e.error.message, /\/v1\//);

  const cfg = { name: 'dup-cfg', endpoint: 'https://x.example/mcp', allowed_tools: ['*'] };
  await c.mcpConfigs.create(cfg);
  await failsOnce((cl) => cl.mcpConfigs.create(cfg), 409, /already exists.*pick another name/);
});

test('a missing object and a bad argument are answered once, the message without routes', async () => {
  const e = await failsOnce((cl) => cl.devboxes.retrieve('dbx_nope'), 404, /devbox dbx_nope not found/);
  assert.doesNotMatch(e.error.message, /\/v1\/|GET |POST /);
  await failsOnce((cl) => cl.secrets.retrieve('NOPE'), 404, /not found/);
  await failsOnce((cl) => cl.secrets.create({ name: '1bad', value: 'x' }), 400, /not valid/);
  await failsOnce((cl) => cl.blueprints.create({ name: 'b', dockerfile: 'FROM x', base_blueprint_name: 'nope' }),
    400, /base blueprint nope has no successful build; list the blueprints/);
});

test('a 501 is answered once and names what serves the call: the Runloop cloud and its key', async () => {
  const e = await failsOnce((cl) => cl.agents.list(), 501, /GET \/v1\/agents is not implemented by devboxd/);
  const msg = e.error.message;
  assert.match(msg, /Runloop cloud API serves it/);
  assert.match(msg, /https:\/\/api\.runloop\.ai/);
  assert.match(msg, /RUNLOOP_API_KEY/);
  assert.match(msg, /runloop\.backend: cloud/);
  assert.doesNotMatch(msg, /docs\//);
});

test('transient answers keep their retry: a 408 long-poll and an unauthenticated call', async () => {
  // A 401 is not retried by the SDK anyway; it carries the same hint.
  const bad = await engine.raw('GET', '/v1/devboxes', { auth: false });
  assert.equal(bad.status, 401);
  assert.equal(bad.headers.get('x-should-retry'), 'false');
  // A long-poll that ran out is "ask again".
  const c = engine.client();
  const box = await c.devboxes.create({});
  const r = await engine.raw('POST', `/v1/devboxes/${box.id}/wait_for_status`, {
    body: JSON.stringify({ statuses: ['suspended'], timeout_seconds: 1 }),
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(r.status, 408, r.text);
  assert.equal(r.headers.get('x-should-retry'), 'true');
  await c.devboxes.shutdown(box.id);
});
