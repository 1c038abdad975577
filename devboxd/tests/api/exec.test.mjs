// Executions through the official Runloop SDK: optimistic execute, command_id
// idempotency, last_n, async + wait + kill, stdin, named shells, SSE output
// streams, on both transports.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Devboxd, rejectsWith } from './devboxd.mjs';

const engine = new Devboxd();
let boxId;
before(async () => {
  await engine.start();
  const b = await engine.client().devboxes.createAndAwaitRunning({ name: 'exec' });
  boxId = b.id;
});
after(async () => { await engine.cleanup(); });

async function collect(streamPromise) {
  const stream = await streamPromise;
  let text = '';
  let expect = null;
  for await (const chunk of stream) {
    assert.equal(typeof chunk.output, 'string');
    // Each chunk's offset is the byte offset where it starts.
    if (expect !== null) assert.equal(chunk.offset, expect);
    expect = chunk.offset + Buffer.byteLength(chunk.output);
    text += chunk.output;
  }
  return text;
}

for (const mode of [{ name: 'h2c (SDK default)', opts: {} }, { name: 'HTTP/1.1', opts: { http2: false } }]) {
  describe(`executions over ${mode.name}`, () => {
    let client;
    before(() => { client = engine.client(mode.opts); });

    test('optimistic execute returns the completed result', async () => {
      const r = await client.devboxes.execute(boxId, { command: 'echo out; echo err >&2; exit 4',
        command_id: `cmd-${mode.name}-1` });
      assert.equal(r.status, 'completed');
      assert.equal(r.exit_status, 4);
      assert.equal(r.stdout, 'out\n');
      assert.equal(r.stderr, 'err\n');
      assert.equal(r.devbox_id, boxId);
      assert.match(r.execution_id, /^exn_/);
      const again = await client.devboxes.executions.retrieve(boxId, r.execution_id);
      assert.equal(again.exit_status, 4);
      assert.equal(again.stdout, 'out\n');
    });

    test('command_id makes execute idempotent: a retry returns the same run', async () => {
      const id = `idem-${mode.name}-${Date.now()}`;
      const cmd = 'echo x >> /tmp/idem-count; wc -l < /tmp/idem-count';
      await client.devboxes.execute(boxId, { command: 'rm -f /tmp/idem-count', command_id: `${id}-rm` });
      const a = await client.devboxes.execute(boxId, { command: cmd, command_id: id });
      const b = await client.devboxes.execute(boxId, { command: cmd, command_id: id });
      assert.equal(a.execution_id, b.execution_id);
      assert.equal(a.stdout.trim(), '1');
      assert.equal(b.stdout.trim(), '1');
      const c = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'wc -l < /tmp/idem-count' });
      assert.equal(c.stdout.trim(), '1');
    });

    test('last_n keeps the last lines and flags truncation', async () => {
      const r = await client.devboxes.execute(boxId, { command: 'seq 1 300', command_id: `ln-${mode.name}`,
        last_n: '5' });
      assert.equal(r.stdout, '296\n297\n298\n299\n300\n');
      assert.equal(r.stdout_truncated, true);
      const d = await client.devboxes.executions.retrieve(boxId, r.execution_id);
      assert.equal(d.stdout.split('\n').length - 1, 100); // default last_n
      const all = await client.devboxes.executions.retrieve(boxId, r.execution_id, { last_n: '1000' });
      assert.equal(all.stdout_truncated, false);
      assert.equal(all.stdout.split('\n').length - 1, 300);
    });

    test('large views arrive whole; a view carries at most the last 1 MiB', async () => {
      const r = await client.devboxes.execute(boxId, { command: "head -c 600000 /dev/zero | tr '\\0' a",
        command_id: `big-${mode.name}` });
      assert.equal(r.stdout.length, 600000);
      assert.equal(r.stdout_truncated, false);
      const r2 = await client.devboxes.execute(boxId, { command: "head -c 3000000 /dev/zero | tr '\\0' b",
        command_id: `bigger-${mode.name}` });
      assert.equal(r2.stdout.length, 1 << 20);
      assert.equal(r2.stdout_truncated, true);
    });

    test('execute_async, wait_for_status with 408 on timeout, kill', async () => {
      const a = await client.devboxes.executions.executeAsync(boxId, { command: 'sleep 60' });
      assert.ok(["queued", "running"].includes(a.status), JSON.stringify(a));
      const peek = await client.devboxes.executions.retrieve(boxId, a.execution_id);
      assert.notEqual(peek.status, "completed", JSON.stringify(peek));
      const err = await rejectsWith(assert, client.devboxes.waitForCommand(boxId, a.execution_id,
        { statuses: ['completed'], timeout_seconds: 1 }), 408, /did not reach/);
      assert.equal(err.headers['x-should-retry'], 'true');
      const running = await client.devboxes.waitForCommand(boxId, a.execution_id, { statuses: ['running'] });
      assert.equal(running.status, 'running');
      const k = await client.devboxes.executions.kill(boxId, a.execution_id, { kill_process_group: true });
      assert.equal(k.status, 'completed');
      assert.equal(k.exit_status, 137);
      const done = await client.devboxes.executions.awaitCompleted(boxId, a.execution_id);
      assert.equal(done.exit_status, 137);
    });

    test('optimistic execute of a long command returns running, then completes', async () => {
      const r = await client.devboxes.execute(boxId, { command: 'sleep 1.5; echo late',
        command_id: `slow-${mode.name}`, optimistic_timeout: 0 });
      assert.equal(r.status, 'running');
      const done = await client.devboxes.executions.awaitCompleted(boxId, r.execution_id);
      assert.equal(done.stdout, 'late\n');
      const e2e = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'sleep 0.2; echo ok' });
      assert.equal(e2e.stdout, 'ok\n');
    });

    test('send_std_in feeds an attached command; EOF ends it', async () => {
      const a = await client.devboxes.executions.executeAsync(boxId, { command: 'cat; echo done',
        attach_stdin: true });
      const s = await client.devboxes.executions.sendStdIn(boxId, a.execution_id, { text: 'line one\n' });
      assert.equal(s.success, true);
      await client.devboxes.executions.sendStdIn(boxId, a.execution_id, { text: 'line two\n', signal: 'EOF' });
      const done = await client.devboxes.executions.awaitCompleted(boxId, a.execution_id);
      assert.equal(done.stdout, 'line one\nline two\ndone\n');
      await rejectsWith(assert, client.devboxes.executions.sendStdIn(boxId, a.execution_id, { text: 'x' }),
        400, /completed/);
      const plain = await client.devboxes.executions.executeAsync(boxId, { command: 'true' });
      await rejectsWith(assert, client.devboxes.executions.sendStdIn(boxId, plain.execution_id, { text: 'x' }),
        400, /attach_stdin/);
      // The SDK takes a body holding only `signal` for request options, so raw HTTP here.
      const bad = await engine.raw('POST', `/v1/devboxes/${boxId}/executions/${plain.execution_id}/send_std_in`,
        { body: JSON.stringify({ text: 'x', signal: 'HUP' }) });
      assert.equal(bad.status, 400);
      assert.match(bad.json.message, /EOF.*INTERRUPT/);
    });

    test('named shells keep cwd and environment; fresh shells do not', async () => {
      const shell = `sh-${mode.opts.http2 === false ? 'h1' : 'h2'}`;
      await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'mkdir -p /tmp/wd && cd /tmp/wd && export KEEP=kept',
        shell_name: shell });
      const r = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'pwd; echo "$KEEP"', shell_name: shell });
      assert.equal(r.stdout, '/tmp/wd\nkept\n');
      assert.equal(r.shell_name, shell);
      const fresh = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'pwd; echo "[$KEEP]"' });
      assert.equal(fresh.stdout, '/home/user\n[]\n');
    });

    test('stdout and stderr SSE streams deliver every byte with offsets', async () => {
      const a = await client.devboxes.executions.executeAsync(boxId, {
        command: 'for i in $(seq 1 5); do echo "line $i"; echo "warn $i" >&2; sleep 0.1; done; seq 1 20000' });
      const [out, errText] = await Promise.all([
        collect(client.devboxes.executions.streamStdoutUpdates(boxId, a.execution_id)),
        collect(client.devboxes.executions.streamStderrUpdates(boxId, a.execution_id)),
      ]);
      let want = '';
      for (let i = 1; i <= 5; i++) want += `line ${i}\n`;
      for (let i = 1; i <= 20000; i++) want += `${i}\n`;
      assert.equal(out, want);
      assert.equal(errText, 'warn 1\nwarn 2\nwarn 3\nwarn 4\nwarn 5\n');
      // From an offset: the rest only.
      const tail = await collect(client.devboxes.executions.streamStdoutUpdates(boxId, a.execution_id,
        { offset: String(Buffer.byteLength(want) - 6) }));
      assert.equal(tail, '20000\n');
      // Multi-byte UTF-8 survives chunking.
      const u = await client.devboxes.executions.executeAsync(boxId, {
        command: 'for i in $(seq 1 3000); do printf "héllo wörld ✓ %d\\n" $i; done' });
      const utf = await collect(client.devboxes.executions.streamStdoutUpdates(boxId, u.execution_id));
      assert.equal(utf.split('\n').length - 1, 3000);
      assert.ok(utf.endsWith('héllo wörld ✓ 3000\n'));
    });

    test('a long-poll does not block other requests on the same connection', async () => {
      const gate = `/tmp/gate-${mode.opts.http2 === false ? 'h1' : 'h2'}`;
      const a = await client.devboxes.executions.executeAsync(boxId,
        { command: `while [ ! -e ${gate} ]; do sleep 0.05; done` });
      let resolved = false;
      const waiting = client.devboxes.waitForCommand(boxId, a.execution_id, { statuses: ['completed'] })
        .then((v) => { resolved = true; return v; });
      // These are served while the long-poll above is held open: the
      // command cannot finish before the gate exists.
      for (let i = 0; i < 5; i++) await client.devboxes.retrieve(boxId);
      const other = await client.devboxes.executeAndAwaitCompletion(boxId, { command: 'echo other' });
      assert.equal(other.exit_status, 0);
      assert.equal(resolved, false, 'the long-poll returned before its command could finish');
      const dep = await client.devboxes.executeAndAwaitCompletion(boxId, { command: `touch ${gate}` });
      assert.equal(dep.exit_status, 0);
      const done = await waiting;
      assert.equal(done.status, 'completed');
      assert.equal(done.exit_status, 0);
    });

    test('execute_sync (deprecated) still answers', async () => {
      const r = await client.devboxes.executeSync(boxId, { command: 'echo sync' });
      assert.equal(r.exit_status, 0);
      assert.equal(r.stdout, 'sync\n');
    });
  });
}

describe('execution bad input', () => {
  test('missing command, bad shell name, unknown execution, bad statuses, bad last_n', async () => {
    const client = engine.client();
    await rejectsWith(assert, client.devboxes.execute(boxId, { command: '' }), 400, /'command' is required/);
    // Over the 32 KiB a devbox runs: the client's to shorten, not a 500.
    await rejectsWith(assert, client.devboxes.execute(boxId, { command: `echo ${'x'.repeat(32 * 1024)}` }), 400,
      /'command' is 32773 bytes, longer than 32768: write a long script to a file/);
    const max = await client.devboxes.execute(boxId, { command: `: ${'x'.repeat(32 * 1024 - 2)}` });
    assert.equal(max.exit_status, 0);
    await rejectsWith(assert, client.devboxes.execute(boxId, { command: 'true', shell_name: 'a b' }), 400,
      /shell_name/);
    await rejectsWith(assert, client.devboxes.execute(boxId, { command: 'true', optimistic_timeout: 99 }), 400,
      /optimistic_timeout/);
    await rejectsWith(assert, client.devboxes.executions.executeAsync(boxId, { command: 'true', bogus: 1 }), 400,
      /unknown field 'bogus'/);
    await rejectsWith(assert, client.devboxes.executions.retrieve(boxId, 'exn_missing'), 404, /not found/);
    const a = await client.devboxes.executions.executeAsync(boxId, { command: 'true' });
    await rejectsWith(assert, client.devboxes.waitForCommand(boxId, a.execution_id, { statuses: [] }), 400,
      /'statuses' is required/);
    await rejectsWith(assert, client.devboxes.waitForCommand(boxId, a.execution_id, { statuses: ['done'] }), 400,
      /queued, running, completed/);
    await rejectsWith(assert, client.devboxes.executions.retrieve(boxId, a.execution_id, { last_n: 'ten' }), 400,
      /last_n/);
  });
});
