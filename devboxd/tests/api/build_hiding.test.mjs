// What a buildah build sees of the host and what its log tells the caller
// (docs/security.md, "Builds"): a RUN step reads an empty /proc/cmdline
// (devboxd-build-runtime masks it), and no log line names devboxd's state
// dir or buildah's temp root (a failing COPY's buildah error quotes the
// context's host path: it reads "<state>/…").
import assert from 'node:assert/strict';
import { readFileSync, realpathSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd({ env: { RLMCP_BUILDER: 'buildah' } }), (c) => { client = c; });

describe('a build hides host figures', () => {
  test("a RUN step reads an empty /proc/cmdline, not the host's", async () => {
    const host = readFileSync('/proc/cmdline', 'utf8').trim();
    assert.ok(host.length > 0);
    const b = await client.blueprints.create({ name: 'hide-cmdline',
      dockerfile: 'FROM runloop/starter-x86_64\nRUN echo "cmdline=[$(cat /proc/cmdline)] bytes=$(wc -c < /proc/cmdline)"\n' });
    const done = await blueprintSettled(client, b.id);
    const logs = await blueprintLog(client, b.id);
    assert.equal(done.status, 'build_complete', logs);
    assert.match(logs, /cmdline=\[\] bytes=0/, logs);
    assert.ok(!logs.includes(host), logs);
  });

  test("a failing build's log names no host path of devboxd's", async () => {
    const b = await client.blueprints.create({ name: 'hide-paths',
      dockerfile: 'FROM runloop/starter-x86_64\nCOPY no-such-file /tmp/\n' });
    const done = await blueprintSettled(client, b.id);
    const logs = await blueprintLog(client, b.id);
    assert.equal(done.status, 'failed', logs);
    for (const p of [engine.stateDir, realpathSync(engine.stateDir), '/var/tmp/devboxd-buildah'])
      assert.ok(!logs.includes(p), `${p} in:\n${logs}`);
    // The error did quote the context's path: scrubbed, not dropped.
    assert.match(logs, /<state>\/blueprints\//, logs);
  });
});
