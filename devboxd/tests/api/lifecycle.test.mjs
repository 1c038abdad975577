// Devbox lifecycle, pagination and bad input, through the official Runloop
// SDK with its default transport (cleartext HTTP/2) and with http2:false.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Devboxd, rejectsWith, waitFor } from './devboxd.mjs';

const engine = new Devboxd();
// POST /v1/devboxes/{id}/wait_for_status through the SDK's own request path
// (the SDK exposes it only inside awaitRunning/awaitSuspended).
const waitBox = (client, id, body) =>
  client.post(`/v1/devboxes/${id}/wait_for_status`, { body, maxRetries: 0 });
before(async () => { await engine.start(); });
after(async () => { await engine.cleanup(); });

for (const mode of [{ name: 'h2c (SDK default)', opts: {} }, { name: 'HTTP/1.1', opts: { http2: false } }]) {
  describe(`devboxes over ${mode.name}`, () => {
    let client;
    before(() => { client = engine.client(mode.opts); });

    test('create, retrieve, update, suspend, resume, usage, logs, shutdown', async () => {
      const box = await client.devboxes.createAndAwaitRunning({
        name: 'life',
        metadata: { team: 'qa' },
        environment_variables: { GREETING: 'hello there' },
        mounts: [{ type: 'file_mount', target: '/home/user/conf/app.txt', content: 'mounted\n' }],
        launch_parameters: {
          resource_size_request: 'SMALL',
          keep_alive_time_seconds: 600,
          launch_commands: ['echo booted > /home/user/boot.txt'],
        },
      });
      assert.equal(box.status, 'running');
      assert.match(box.id, /^dbx_/);
      assert.equal(box.name, 'life');
      assert.deepEqual(box.metadata, { team: 'qa' });
      const seen = box.state_transitions.map((t) => t.status);
      assert.deepEqual(seen, ['provisioning', 'initializing', 'running']);

      const got = await client.devboxes.retrieve(box.id);
      assert.equal(got.id, box.id);
      assert.equal(got.launch_parameters.resource_size_request, 'SMALL');

      const r = await client.devboxes.executeAndAwaitCompletion(box.id, {
        command: 'echo "$GREETING"; cat conf/app.txt boot.txt; id -u; echo $HOME',
      });
      assert.equal(r.exit_status, 0, r.stderr);
      assert.equal(r.stdout, 'hello there\nmounted\nbooted\n1000\n/home/user\n');

      const upd = await client.devboxes.update(box.id, { name: 'renamed', metadata: { a: 'b' } });
      assert.equal(upd.name, 'renamed');
      assert.deepEqual(upd.metadata, { a: 'b' });

      await client.devboxes.keepAlive(box.id);
      await client.devboxes.writeFileContents(box.id, { file_path: 'kept.txt', contents: 'disk state' });

      await client.devboxes.suspend(box.id);
      const susp = await client.devboxes.awaitSuspended(box.id);
      assert.equal(susp.status, 'suspended');
      await rejectsWith(assert, client.devboxes.execute(box.id, { command: 'true' }), 400,
        /suspended; resume it/);

      await client.devboxes.resume(box.id);
      const back = await client.devboxes.awaitRunning(box.id);
      assert.equal(back.status, 'running');
      const kept = await client.devboxes.readFileContents(box.id, { file_path: 'kept.txt' });
      assert.equal(kept, 'disk state');

      const usage = await client.devboxes.retrieveResourceUsage(box.id);
      assert.equal(usage.id, box.id);
      assert.ok(usage.total_active_seconds > 0);
      assert.ok(usage.total_elapsed_seconds >= usage.total_active_seconds);
      assert.equal(usage.vcpu_seconds, usage.total_active_seconds * 1);
      assert.equal(usage.memory_gb_seconds, usage.total_active_seconds * 2);

      const logs = await client.devboxes.logs.list(box.id);
      assert.ok(logs.logs.some((l) => l.source === 'setup_commands' && l.cmd?.includes('booted')));

      const down = await client.devboxes.shutdown(box.id);
      assert.equal(down.status, 'shutdown');
      assert.equal(down.shutdown_reason, 'api_shutdown');
      assert.ok(down.end_time_ms >= down.create_time_ms);
      await rejectsWith(assert, client.devboxes.execute(box.id, { command: 'true' }), 400,
        /shutdown/);
    });

    test('a failing launch command ends in failure with a reason', async () => {
      const box = await client.devboxes.create({
        launch_parameters: { launch_commands: ['echo about to fail', 'exit 7'] },
      });
      assert.equal(box.status, 'provisioning');
      const done = await waitBox(client, box.id, { statuses: ['failure', 'running'] });
      assert.equal(done.status, 'failure');
      assert.equal(done.failure_reason, 'execution_failed');
      // The cause in words, not only the enum.
      assert.match(done.failure_message, /launch command 'exit 7' failed \(exit status 7\)/);
      await assert.rejects(client.devboxes.awaitRunning(box.id), /failure/);
      const logs = await client.devboxes.logs.list(box.id);
      assert.ok(logs.logs.some((l) => /launch command 'exit 7' failed/.test(l.message ?? '')));
    });

    test('entrypoint exit shuts the devbox down', async () => {
      const box = await client.devboxes.create({ entrypoint: 'sleep 0.3' });
      const done = await waitBox(client, box.id, { statuses: ['shutdown'] });
      assert.equal(done.status, 'shutdown');
      assert.equal(done.shutdown_reason, 'entrypoint_exit');
    });
  });
}

describe('pagination', () => {
  test('limit, starting_after, has_more, total_count and the status filter', async () => {
    const client = engine.client();
    const ids = [];
    for (let i = 0; i < 5; i++) {
      const b = await client.devboxes.create({ name: `page-${i}`, metadata: { page: 'yes' } });
      ids.push(b.id);
    }
    const all = await client.devboxes.list({ limit: 5000 });
    const total = all.total_count;
    assert.ok(total >= 5);
    const first = await client.devboxes.list({ limit: 2 });
    assert.equal(first.devboxes.length, 2);
    assert.equal(first.has_more, true);
    assert.equal(first.total_count, total);
    // Newest first: the last created comes first.
    assert.equal(first.devboxes[0].id, ids[4]);
    assert.equal(first.devboxes[1].id, ids[3]);
    const second = await client.devboxes.list({ limit: 2, starting_after: first.devboxes[1].id });
    assert.deepEqual(second.devboxes.map((d) => d.id), [ids[2], ids[1]]);
    // The SDK's auto-pagination walks every page exactly once.
    const walked = [];
    for await (const d of client.devboxes.list({ limit: 2 })) walked.push(d.id);
    assert.equal(walked.length, total);
    assert.equal(new Set(walked).size, total);
    for (const id of ids) assert.ok(walked.includes(id));

    for (const id of ids) await client.devboxes.awaitRunning(id);
    await client.devboxes.shutdown(ids[0]);
    const downs = [];
    for await (const d of client.devboxes.list({ status: 'shutdown', limit: 1 })) downs.push(d);
    assert.ok(downs.some((d) => d.id === ids[0]));
    assert.ok(downs.every((d) => d.status === 'shutdown'));
    const tagged = await engine.raw('GET', '/v1/devboxes?limit=100&metadata%5Bpage%5D=yes');
    assert.equal(tagged.status, 200);
    assert.deepEqual(tagged.json.devboxes.map((d) => d.id).sort(), [...ids].sort());
    const none = await engine.raw('GET', '/v1/devboxes?metadata%5Bpage%5D=no');
    assert.equal(none.json.devboxes.length, 0);
    const noCount = await engine.raw('GET', '/v1/devboxes?limit=1&include_total_count=false');
    assert.equal(noCount.status, 200);
    assert.equal(noCount.json.total_count, null);
    for (const id of ids.slice(1)) await client.devboxes.shutdown(id);
  });
});

describe('bad input', () => {
  let client;
  before(() => { client = engine.client(); });

  test('lower-case resource size is a 400 that names the valid values', async () => {
    await rejectsWith(assert, client.devboxes.create({
      launch_parameters: { resource_size_request: 'small' } }), 400, /X_SMALL, SMALL/);
  });
  test('custom size rules', async () => {
    await rejectsWith(assert, client.devboxes.create({
      launch_parameters: { resource_size_request: 'CUSTOM_SIZE', custom_cpu_cores: 2 } }), 400,
      /needs both/);
    await rejectsWith(assert, client.devboxes.create({
      launch_parameters: { resource_size_request: 'CUSTOM_SIZE', custom_cpu_cores: 1,
        custom_gb_memory: 16 } }), 400, /2 to 8 GiB per CPU/);
    await rejectsWith(assert, client.devboxes.create({
      launch_parameters: { custom_cpu_cores: 2, custom_gb_memory: 4 } }), 400, /CUSTOM_SIZE/);
  });
  test('unknown fields and wrong types', async () => {
    await rejectsWith(assert, client.devboxes.create({ nmae: 'typo' }), 400, /unknown field 'nmae'/);
    await rejectsWith(assert, client.devboxes.create({ launch_parameters: { keep_alive: 5 } }),
      400, /launch_parameters.keep_alive/);
    await rejectsWith(assert, client.devboxes.create({ name: 5 }), 400, /'name' must be a string/);
    await rejectsWith(assert, client.devboxes.create({ metadata: { a: 1 } }), 400,
      /'metadata.a' must be a string/);
    await rejectsWith(assert, client.devboxes.create({
      launch_parameters: { keep_alive_time_seconds: 999999 } }), 400, /between 1 and 172800/);
    await rejectsWith(assert, client.devboxes.create({ environment_variables: { '1BAD': 'x' } }),
      400, /not a valid variable name/);
    await rejectsWith(assert, client.devboxes.create({
      mounts: [{ type: 'file_mount', target: 'relative', content: 'x' }] }), 400, /absolute/);
  });
  test('unknown snapshots and blueprints are refused clearly', async () => {
    await rejectsWith(assert, client.devboxes.create({ blueprint_id: 'bpt_x' }), 404,
      /blueprint_id bpt_x not found/);
    await rejectsWith(assert, client.devboxes.create({ snapshot_id: 'snp_x' }), 404,
      /snapshot_id snp_x not found/);
    await rejectsWith(assert, client.devboxes.create({ blueprint_name: 'x' }), 400,
      /no successful build of a blueprint named "x"/);
  });
  test('unknown ids are 404', async () => {
    await rejectsWith(assert, client.devboxes.retrieve('dbx_nope'), 404, /dbx_nope not found/);
    await rejectsWith(assert, client.devboxes.suspend('dbx_nope'), 404, /not found/);
    await rejectsWith(assert, client.devboxes.executions.retrieve('dbx_nope', 'exn_x'), 404);
  });
  test('bad list parameters', async () => {
    await rejectsWith(assert, client.devboxes.list({ status: 'RUNNING' }), 400, /not a devbox status/);
    await rejectsWith(assert, client.devboxes.list({ limit: 0 }), 400, /'limit' must be an integer/);
    await rejectsWith(assert, client.devboxes.list({ starting_after: 'dbx_gone' }), 400,
      /starting_after/);
  });
  test('wait_for_status needs statuses', async () => {
    const b = await client.devboxes.create({});
    await rejectsWith(assert, waitBox(client, b.id, { statuses: [] }), 400,
      /'statuses' is required/);
    await rejectsWith(assert, waitBox(client, b.id, { statuses: ['up'] }), 400,
      /not one of/);
    await client.devboxes.awaitRunning(b.id);
    await client.devboxes.shutdown(b.id);
    await rejectsWith(assert, waitBox(client, b.id, { statuses: ['running'] }), 422,
      /never reach/);
  });
  test('malformed JSON, oversized bodies, wrong method, unknown path (raw HTTP)', async () => {
    let r = await engine.raw('POST', '/v1/devboxes', { body: '{"name": ', headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 400);
    assert.match(r.json.message, /malformed JSON/);
    r = await engine.raw('POST', '/v1/devboxes', { body: '[1,2]' });
    assert.equal(r.status, 400);
    assert.match(r.json.message, /must be a JSON object/);
    r = await engine.raw('POST', '/v1/devboxes', { body: JSON.stringify({ name: 'x'.repeat(2 << 20) }) });
    assert.equal(r.status, 413);
    assert.match(r.json.message, /too large/);
    r = await engine.raw('DELETE', '/v1/devboxes/dbx_x');
    assert.equal(r.status, 501);
    r = await engine.raw('GET', '/v2/nothing');
    assert.equal(r.status, 501);
    assert.equal(r.json.code, 'not_implemented');
    assert.equal(r.headers.get('x-should-retry'), 'false');
    assert.match(r.json.message, /GET \/v2\/nothing is not implemented by devboxd/);
  });
  test('every endpoint the engine does not serve is one 501 naming it (official SDK)', async () => {
    const c = engine.client();
    const box = await c.devboxes.create({});
    // One from each family the engine lacks, through the SDK's own methods.
    const cases = [
      [() => c.networkPolicies.list(), /GET \/v1\/network-policies /],
      [() => c.agents.list(), /GET \/v1\/agents /],
      [() => c.scenarios.list(), /GET \/v1\/scenarios /],
      [() => c.benchmarks.list(), /GET \/v1\/benchmarks /],
      [() => c.gatewayConfigs.list(), /GET \/v1\/gateway-configs /],
    ];
    for (const [fn, re] of cases) {
      await assert.rejects(fn(), (e) => {
        assert.equal(e.status, 501, `${re}: ${e.status} ${e.message}`);
        assert.equal(e.error?.code, 'not_implemented');
        assert.match(e.error?.message, re);
        return true;
      });
    }
    // accounts.me carries the AccountView's billing and created_at.
    const me = await c.accounts.me();
    assert.match(me.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(me.billing.account_billing_type, 'UNRECOGNIZED');
    // Runloop's queue states are accepted list filters (nothing waits here).
    for (const status of ['queued', 'scheduled']) {
      const page = await c.devboxes.list({ status });
      assert.deepEqual(page.devboxes, []);
    }
    await c.devboxes.shutdown(box.id);
  });
  test('a bad or missing key is a 401 in the Runloop error shape', async () => {
    const bad = engine.client({ bearerToken: 'ak_wrong' });
    await rejectsWith(assert, bad.devboxes.list(), 401, /invalid API key/);
    // Near misses: a prefix, one byte more, the key twice.
    for (const k of [engine.key.slice(0, -1), `${engine.key}x`, engine.key + engine.key]) {
      await rejectsWith(assert, engine.client({ bearerToken: k }).devboxes.list(), 401, /invalid API key/);
    }
    const r = await engine.raw('GET', '/v1/devboxes', { auth: false });
    assert.equal(r.status, 401);
    assert.equal(typeof r.json.message, 'string');
    assert.ok(!r.text.includes(engine.key));
  });
});

describe('policies and limits', () => {
  let client;
  before(() => { client = engine.client(); });

  test('the built-in deny-all network policy leaves only loopback', async () => {
    const open = await client.devboxes.createAndAwaitRunning({});
    const closed = await client.devboxes.createAndAwaitRunning({
      launch_parameters: { network_policy_id: 'npol_local_deny_all' } });
    const ifaces = async (id) => (await client.devboxes.executeAndAwaitCompletion(id,
      { command: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '" })).stdout.trim();
    assert.equal(await ifaces(closed.id), 'lo');
    assert.notEqual(await ifaces(open.id), 'lo');
    await client.devboxes.shutdown(open.id);
    await client.devboxes.shutdown(closed.id);
  });

  test('keep_alive_time_seconds expiry shuts the devbox down', async () => {
    const b = await client.devboxes.createAndAwaitRunning({ launch_parameters: { keep_alive_time_seconds: 2 } });
    const done = await waitBox(client, b.id, { statuses: ['shutdown'], timeout_seconds: 20 });
    assert.equal(done.status, 'shutdown');
    assert.equal(done.shutdown_reason, 'keep_alive_timeout');
  });

  // keep_alive_time_seconds bounds a run: a devbox resumed after its first
  // deadline passed gets a fresh lifetime instead of being shut down by the
  // next timer tick, right after it booted.
  test('a resume past keep_alive_time_seconds starts a fresh lifetime', async () => {
    const life = 10;
    const b = await client.devboxes.createAndAwaitRunning({ launch_parameters: { keep_alive_time_seconds: life } });
    await client.devboxes.suspend(b.id);
    await client.devboxes.awaitSuspended(b.id);
    await waitFor(() => Date.now() - b.create_time_ms > (life + 1) * 1000 || null,
      { timeoutMs: 60000, stepMs: 200, what: 'the first lifetime to pass' });
    await client.devboxes.resume(b.id);
    await client.devboxes.awaitRunning(b.id);
    const r = await client.devboxes.executeAndAwaitCompletion(b.id, { command: 'echo alive' });
    assert.equal(r.stdout, 'alive\n');
    const done = await waitFor(async () => {
      const d = await client.devboxes.retrieve(b.id);
      return d.status === 'shutdown' ? d : null;
    }, { timeoutMs: 120000, stepMs: 250, what: 'the second lifetime to end' });
    assert.equal(done.shutdown_reason, 'keep_alive_timeout');
    const resumed = done.state_transitions.filter((t) => t.status === 'resuming').at(-1).transition_time_ms;
    assert.ok(done.end_time_ms - resumed >= life * 1000,
      `shut down ${done.end_time_ms - resumed} ms after the resume, before a lifetime of ${life} s`);
  });

  test('after_idle suspends an idle devbox; keep_alive and commands count as activity', async () => {
    const b = await client.devboxes.createAndAwaitRunning({
      launch_parameters: { lifecycle: { after_idle: { idle_time_seconds: 3, on_idle: 'suspend' } } } });
    const t0 = Date.now();
    for (let i = 0; i < 8; i++) {
      await new Promise((r) => setTimeout(r, 500));
      await client.devboxes.keepAlive(b.id);
    }
    assert.equal((await client.devboxes.retrieve(b.id)).status, 'running',
      `suspended despite keep_alive after ${Date.now() - t0} ms`);
    const done = await waitBox(client, b.id, { statuses: ['suspended'], timeout_seconds: 20 });
    assert.equal(done.status, 'suspended');
    await client.devboxes.shutdown(b.id);
  });

  test('lifecycle_hooks.suspend_commands run before a suspend; failures and the deadline are logged', async () => {
    const b = await client.devboxes.createAndAwaitRunning({ launch_parameters: { lifecycle: {
      lifecycle_hooks: { suspend_commands: ['echo quiesced > /home/user/hook.txt', 'exit 3'] } } } });
    await client.devboxes.suspend(b.id);
    assert.equal((await client.devboxes.awaitSuspended(b.id)).status, 'suspended');
    await client.devboxes.resume(b.id);
    await client.devboxes.awaitRunning(b.id);
    const r = await client.devboxes.executeAndAwaitCompletion(b.id, { command: 'cat /home/user/hook.txt' });
    assert.equal(r.stdout, 'quiesced\n', 'the first hook ran in the devbox before the suspend');
    const logs = (await client.devboxes.logs.list(b.id)).logs.map((l) => l.message);
    assert.ok(logs.some((m) => /suspend_commands: command 1 exited with status 0/.test(m)), logs.join('\n'));
    assert.ok(logs.some((m) => /suspend_commands: command 2 exited with status 3; the suspend goes on/.test(m)), logs.join('\n'));
    await client.devboxes.shutdown(b.id);

    // A hook that hangs is cut at suspend_deadline_ms; the suspend still happens.
    const slow = await client.devboxes.createAndAwaitRunning({ launch_parameters: { lifecycle: {
      lifecycle_hooks: { suspend_commands: ['sleep 120', 'touch /home/user/never'], suspend_deadline_ms: 1000 } } } });
    await client.devboxes.suspend(slow.id);
    assert.equal((await client.devboxes.awaitSuspended(slow.id)).status, 'suspended');
    const slowLogs = (await client.devboxes.logs.list(slow.id)).logs.map((l) => l.message);
    assert.ok(slowLogs.some((m) => /command 1 did not finish within the 1000 ms deadline \(killed\); the suspend goes on/.test(m)),
      slowLogs.join('\n'));
    assert.ok(!slowLogs.some((m) => /command 2/.test(m)), 'nothing runs after the deadline');
    await client.devboxes.shutdown(slow.id);
  });

  test('a flex devbox starts queued as documented, then runs; queued is a list and wait filter', async () => {
    const f = await client.devboxes.create({ launch_parameters: { provisioning_tier: 'flex' } });
    assert.equal(f.status, 'queued');
    const std = await client.devboxes.create({ launch_parameters: { provisioning_tier: 'standard' } });
    assert.equal(std.status, 'provisioning');
    const running = await client.devboxes.awaitRunning(f.id);
    assert.equal(running.status, 'running');
    const seen = running.state_transitions.map((t) => t.status);
    assert.deepEqual(seen.slice(0, 2), ['queued', 'provisioning'], JSON.stringify(seen));
    assert.ok(seen.includes('running'));
    const r = await client.devboxes.executeAndAwaitCompletion(f.id, { command: 'echo flex' });
    assert.equal(r.stdout, 'flex\n');
    await client.devboxes.awaitRunning(std.id);
    await client.devboxes.shutdown(f.id);
    await client.devboxes.shutdown(std.id);
  });

  test('lifecycle_hooks bad input: each field named with what to send', async () => {
    const bad = async (hooks, re) => rejectsWith(assert, client.devboxes.create(
      { launch_parameters: { lifecycle: { lifecycle_hooks: hooks } } }), 400, re);
    await bad('echo', /lifecycle_hooks must be an object/);
    await bad({ suspend_commands: 'echo hi' }, /suspend_commands must be an array of shell command strings/);
    await bad({ suspend_commands: ['ok', 7] }, /suspend_commands\[1\] must be a non-empty string/);
    await bad({ suspend_commands: [''] }, /suspend_commands\[0\] must be a non-empty string/);
    await bad({ suspend_commands: Array(33).fill('true') }, /more than 32 commands/);
    await bad({ suspend_deadline_ms: 60001 }, /suspend_deadline_ms must be a whole number of milliseconds from 1 to 60000/);
    await bad({ suspend_deadline_ms: 0 }, /suspend_deadline_ms/);
    await bad({ suspend_deadline_ms: 'soon' }, /suspend_deadline_ms/);
    await bad({ on_resume: [] }, /on_resume/);
  });

  test('a memory bomb is killed by the size limit and reported; the engine keeps serving', async () => {
    const small = await client.devboxes.createAndAwaitRunning({
      launch_parameters: { resource_size_request: 'X_SMALL' } });
    const other = await client.devboxes.createAndAwaitRunning({});
    // bash keeps the whole substitution in memory: it grows past the 1 GiB limit.
    const bomb = await client.devboxes.executeAndAwaitCompletion(small.id,
      { command: "x=$(head -c 3000000000 /dev/zero | tr '\\0' a); echo survived ${#x}" });
    assert.notEqual(bomb.exit_status, 0);
    // The view says why (not in Runloop's types: exit_status 137 alone hides it).
    const logs = await client.devboxes.logs.list(small.id);
    const view = await client.devboxes.retrieve(small.id);
    assert.equal(bomb.ended_by, 'out_of_memory', JSON.stringify([bomb, view, logs.logs.slice(-4)]));
    const reported = logs.logs.some((l) => /out of memory/.test(l.message ?? '')) ||
      view.failure_reason === 'out_of_memory';
    assert.ok(reported, `not reported: ${JSON.stringify(view)} ${JSON.stringify(logs.logs.slice(-3))}`);
    const ok = await client.devboxes.executeAndAwaitCompletion(other.id, { command: 'echo fine' });
    assert.equal(ok.stdout, 'fine\n');
    assert.equal(ok.ended_by, 'exit');
    // A kill is a kill (137 too, but no OOM kill counted).
    const sleeper = await client.devboxes.executions.executeAsync(other.id, { command: 'sleep 60' });
    await client.devboxes.executions.kill(other.id, sleeper.execution_id);
    const killed = await client.devboxes.executions.awaitCompleted(other.id, sleeper.execution_id);
    assert.equal(killed.exit_status, 137);
    assert.equal(killed.ended_by, 'killed', JSON.stringify(killed));
    await client.devboxes.shutdown(small.id);
    await client.devboxes.shutdown(other.id);
  });
});

// Routes that read no body refuse one over the JSON limit in the router,
// before they act: nothing is suspended, shut down or deleted.
describe('an oversized body on a route that reads none', () => {
  test('is a 413 before the route acts; a small body is ignored', async () => {
    const client = engine.client();
    const box = await client.devboxes.createAndAwaitRunning({ name: 'no-body' });
    await client.secrets.create({ name: 'NO_BODY_SECRET', value: 'kept' });
    const big = { body: JSON.stringify({ pad: 'x'.repeat(2 << 20) }), headers: { 'content-type': 'application/json' } };
    const paths = ['suspend', 'resume', 'shutdown', 'keep_alive', 'remove_tunnel', 'create_pty_tunnel',
      'create_ssh_key'].map((a) => `/v1/devboxes/${box.id}/${a}`).concat([
      '/v1/secrets/NO_BODY_SECRET/delete', '/v1/blueprints/bpt_none/delete',
      '/v1/devboxes/disk_snapshots/snp_none/delete', '/v1/mcp-configs/mcp_none/delete']);
    for (const p of paths) {
      const r = await engine.raw('POST', p, big);
      assert.equal(r.status, 413, `${p}: ${r.status} ${r.text}`);
      assert.equal(r.json?.message, 'request body too large', p);
    }
    assert.equal((await client.devboxes.retrieve(box.id)).status, 'running');
    const names = (await client.secrets.list()).secrets.map((s) => s.name);
    assert.ok(names.includes('NO_BODY_SECRET'), JSON.stringify(names));
    // A body within the limit is not read: the route acts as without one.
    const r = await engine.raw('POST', `/v1/devboxes/${box.id}/keep_alive`, { body: '{"ignored": true}' });
    assert.equal(r.status, 200, r.text);
    await client.devboxes.shutdown(box.id);
  });
});
