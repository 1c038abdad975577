// x-request-deadline through the official Runloop SDK (which lets a caller
// add headers): the Unix time in ms when the client stops waiting, sent by
// runloop-mcp on each attempt. A request read after it does nothing and
// says so; a malformed one is a 400 naming the header; one in the future,
// or none (the SDK's own requests), works as before.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Devboxd, rejectsWith, useEngine } from './devboxd.mjs';

let client;
useEngine(new Devboxd(), (c) => { client = c; });

const at = (ms) => ({ headers: { 'x-request-deadline': String(ms) }, maxRetries: 0 });
const count = async () => (await client.devboxes.list({ limit: 100 })).devboxes.length;

describe('x-request-deadline', () => {
  test('work whose deadline has passed is not started', async () => {
    const before = await count();
    const err = await rejectsWith(assert, client.devboxes.create({ name: 'late' }, at(Date.now() - 5000)), 408,
      /deadline \(x-request-deadline\) passed \d+ ms before devboxd read it; nothing was done/);
    assert.equal(err.headers['x-should-retry'], 'false');
    assert.equal(await count(), before, 'a late create made a devbox');
  });

  test('a deadline still ahead, or none, is served', async () => {
    const box = await client.devboxes.create({ name: 'in-time' }, at(Date.now() + 60000));
    assert.equal(box.name, 'in-time');
    await client.devboxes.shutdown(box.id);
  });

  test('a malformed deadline is a 400 naming the header', async () => {
    for (const v of ['soon', '12abc', '-5', '0', '99999999999999999999999']) {
      await rejectsWith(assert, client.devboxes.list({}, { headers: { 'x-request-deadline': v }, maxRetries: 0 }), 400,
        /x-request-deadline: expected the Unix time in milliseconds/);
    }
  });
});
