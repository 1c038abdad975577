// End-to-end: the snapshots and blueprints plugins through the built host,
// driven by the official MCP SDK client over stdio, against a real devboxd
// on a temporary state dir. Every tool of both plugins, progress while
// building and snapshotting, create_devbox from snapshot_id / blueprint_id /
// blueprint_name, run_code on a configured blueprint, and the error paths
// (failed build naming the step, unsupported instruction, a RUN --mount
// reaching out of the build, snapshot of a shut
// down devbox, unknown ids).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { waitFor } from './lib/host.mjs';
import { engineRequest, startEngineAndHost } from './lib/engine.mjs';

const LONG = { timeout: 300000 };

const CONF = `server:
  name: runloop-mcp-snapshots-blueprints-test
  transport: stdio
host:
  log_level: warning
runloop:
  backend: local
  state_dir: \${RLMCP_TEST_STATE_DIR}
plugins:
  - name: lifecycle
    config:
      create_wait_seconds: 120
  - name: exec
    config:
      default_timeout_seconds: 120
      create_wait_seconds: 120
      run_code: {purpose: snapshots-blueprints-e2e, keep_alive_seconds: 900, blueprint_name: e2e-tools}
  - name: files
  - name: snapshots
    config:
      poll_interval_ms: 100
      wait_seconds: 240
  - name: blueprints
    config:
      poll_interval_ms: 100
      build_wait_seconds: 240
`;

const engineGet = (sock, p) => engineRequest(sock, 'GET', p);

function errorOf(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  return JSON.parse(result.content.find((c) => c.type === 'text').text).error;
}

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, 'structuredContent is set');
  return result.structuredContent;
}

describe('snapshots and blueprints plugins end to end (local engine)', () => {
  let stack;
  let engine;
  let client;
  let tools; // the e2e-tools blueprint
  let box;
  let snap;

  const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined,
    { timeout: 280000, ...opts });

  before(async () => {
    stack = await startEngineAndHost({
      name: 'snapbp', plugins: ['snapshots', 'blueprints'],
      conf: ({ tmp }) => {
        const conf = path.join(tmp, 'snapshots-blueprints.yaml');
        writeFileSync(conf, CONF);
        return conf;
      },
    });
    ({ engine, client } = stack);
  });

  after(() => stack?.stop());

  it('lists every snapshots and blueprints tool', async () => {
    const { tools: list } = await client.listTools();
    const byName = Object.fromEntries(list.map((t) => [t.name, t]));
    for (const n of ['create_snapshot', 'list_snapshots', 'delete_snapshot', 'get_snapshot_status',
      'build_blueprint', 'list_blueprints', 'get_blueprint', 'get_blueprint_logs', 'delete_blueprint', 'tag_blueprint'])
      assert.ok(byName[n], `${n} is listed`);
    assert.equal(byName.delete_snapshot.annotations.destructiveHint, true);
    assert.equal(byName.list_blueprints.annotations.readOnlyHint, true);
  });

  it('build_blueprint streams log lines as progress until build_complete', LONG, async () => {
    const progress = [];
    tools = ok(await call('build_blueprint', {
      name: 'e2e-tools',
      system_setup_commands: ['mkdir -p ~/.local/bin',
        'printf "#!/bin/sh\\necho e2e-tool-ok\\n" > ~/.local/bin/e2e-tool && chmod 755 ~/.local/bin/e2e-tool'],
    }, { onprogress: (p) => progress.push(p) }));
    assert.equal(tools.status, 'build_complete', JSON.stringify(tools));
    assert.match(tools.id, /^bpt_/);
    // Progress carries the build's log lines as they come (a quick build
    // may finish after the first poll); the result carries the rest.
    assert.ok(progress.length >= 1, 'at least one progress notification');
    const text = progress.map((p) => p.message ?? '').join('\n');
    assert.match(text, new RegExp(`blueprint ${tools.id} (provisioning|building)`), text);
    // Which log lines ride on progress depends on timing (a progress message
    // that shares a pipe read with the result is dropped by the SDK client);
    // the full log is checked through get_blueprint_logs below.
    assert.ok(tools.log_lines >= 2, `log_lines ${tools.log_lines}`);
    const got = ok(await call('get_blueprint', { blueprint_id: tools.id }));
    assert.equal(got.status, 'build_complete');
    assert.equal(got.parameters.system_setup_commands.length, 2);
    const logs = ok(await call('get_blueprint_logs', { blueprint_id: tools.id }));
    assert.ok(logs.lines.some((l) => /queued on the local engine/.test(l.message)), JSON.stringify(logs));
    assert.ok(logs.lines.some((l) => /Step 1\/2: RUN mkdir/.test(l.message)), JSON.stringify(logs));
    assert.ok(logs.lines.some((l) => /Step 2\/2: RUN printf/.test(l.message)), JSON.stringify(logs));
    const list = ok(await call('list_blueprints', { name: 'e2e-tools' }));
    assert.deepEqual(list.blueprints.map((b) => b.id), [tools.id]);
  });

  it('create_devbox from blueprint_name / blueprint_id; run_code on the configured blueprint', LONG, async () => {
    box = ok(await call('create_devbox', { blueprint_name: 'e2e-tools' }));
    assert.equal(box.status, 'running');
    assert.equal(box.blueprint_id, tools.id);
    const r = ok(await call('execute_command', { devbox_id: box.id, command: '~/.local/bin/e2e-tool' }));
    assert.equal(r.stdout, 'e2e-tool-ok\n');
    const byId = ok(await call('create_devbox', { blueprint_id: tools.id }));
    assert.equal(byId.blueprint_id, tools.id);
    ok(await call('shutdown_devbox', { devbox_id: byId.id }));
    const rc = ok(await call('run_code', { command: '~/.local/bin/e2e-tool' }));
    assert.equal(rc.stdout, 'e2e-tool-ok\n');
  });

  it('versions and tags: list_blueprints by name, tag_blueprint, NAME:TAG in create_devbox and run_code', LONG, async () => {
    const v1 = ok(await call('build_blueprint', { name: 'e2e-versions', system_setup_commands: ['echo v1 > ~/v'] }));
    const v2 = ok(await call('build_blueprint', { name: 'e2e-versions', system_setup_commands: ['echo v2 > ~/v'] }));
    assert.equal(v2.status, 'build_complete', JSON.stringify(v2));
    let versions = ok(await call('list_blueprints', { name: 'e2e-versions' })).blueprints;
    assert.deepEqual(versions.map((b) => [b.id, b.tags]), [[v2.id, []], [v1.id, []]]);
    const t = ok(await call('tag_blueprint', { blueprint_id: v1.id, tag: 'stable' }));
    assert.deepEqual(t.tags, ['stable']);
    assert.equal(t.name, 'e2e-versions');
    const cat = async (args) => {
      const d = ok(await call('create_devbox', args));
      const r = ok(await call('execute_command', { devbox_id: d.id, command: 'cat ~/v' }));
      ok(await call('shutdown_devbox', { devbox_id: d.id }));
      return [d.blueprint_id, r.stdout];
    };
    assert.deepEqual(await cat({ blueprint_name: 'e2e-versions:stable' }), [v1.id, 'v1\n']);
    assert.deepEqual(await cat({ blueprint_name: 'e2e-versions' }), [v2.id, 'v2\n']);
    const rc = ok(await call('run_code', { command: 'cat ~/v', blueprint_name: 'e2e-versions:stable' }));
    assert.equal(rc.stdout, 'v1\n');
    ok(await call('shutdown_devbox', { devbox_id: rc.devbox_id }));
    // The tag moves to the other version.
    ok(await call('tag_blueprint', { blueprint_id: v2.id, tag: 'stable' }));
    versions = ok(await call('list_blueprints', { name: 'e2e-versions' })).blueprints;
    assert.deepEqual(versions.map((b) => [b.id, b.tags]), [[v2.id, ['stable']], [v1.id, []]]);
    assert.deepEqual(await cat({ blueprint_name: 'e2e-versions:stable' }), [v2.id, 'v2\n']);
    // Bad input.
    const badTag = await call('tag_blueprint', { blueprint_id: v1.id, tag: 'no spaces' });
    assert.equal(badTag.isError, true);
    assert.match(badTag.content[0].text, /tag/);
    assert.equal(errorOf(await call('tag_blueprint', { blueprint_id: 'bpt_nope', tag: 'x' })).code, 'not_found');
    const none = errorOf(await call('create_devbox', { blueprint_name: 'e2e-versions:nosuch' }));
    assert.match(none.message, /e2e-versions:nosuch/);
    const rcNone = errorOf(await call('run_code', { command: 'true', blueprint_name: 'e2e-versions:nosuch' }));
    assert.equal(rcNone.code, 'not_found');
    ok(await call('delete_blueprint', { blueprint_id: v1.id }));
    ok(await call('delete_blueprint', { blueprint_id: v2.id }));
  });

  it('build_blueprint of a failing step and of an unknown instruction', LONG, async () => {
    const e = errorOf(await call('build_blueprint', { name: 'e2e-fails',
      system_setup_commands: ['true', 'echo nope; exit 4'] }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /failed to build: build_failed/);
    assert.match(e.message, /step 2\/2/);
    const u = errorOf(await call('build_blueprint', { name: 'e2e-unsupported',
      dockerfile: 'FROM runloop:runloop/starter-x86_64\nFROWN x\n' }));
    assert.match(u.message, /line 2: unknown instruction "FROWN"/);
    // A cache id out of the build's cache (buildah 1.28 mounted the host's
    // path): refused before any build, with the line and the flag.
    const esc = errorOf(await call('build_blueprint', { name: 'e2e-escape',
      dockerfile: 'FROM runloop:runloop/starter-x86_64\nRUN --mount=type=cache,id=../../../..,target=/h ls /h\n' }));
    assert.match(esc.message, /line 2: RUN --mount=type=cache,id=\.\.\/\.\.\/\.\.\/\.\.,target=\/h: cache id "[./]+" must be a plain name/);
    const failed = ok(await call('list_blueprints', { status: 'failed' }));
    assert.equal(failed.blueprints.length, 1, 'a Dockerfile with an error is refused, not built');
  });

  it('create_snapshot (async with progress, then wait), status, list, create_devbox from it', LONG, async () => {
    ok(await call('write_file', { devbox_id: box.id, file_path: '/home/user/snap.txt', contents: 'in the snapshot\n' }));
    snap = ok(await call('create_snapshot', { devbox_id: box.id, name: 'e2e-snap', metadata: { k: 'v' } }));
    assert.equal(snap.status, 'complete', JSON.stringify(snap));
    assert.equal(snap.source_devbox_id, box.id);
    assert.equal(snap.source_blueprint_id, tools.id);
    const st = ok(await call('get_snapshot_status', { snapshot_id: snap.id }));
    assert.equal(st.status, 'complete');
    const nowait = ok(await call('create_snapshot', { devbox_id: box.id, wait: false }));
    assert.ok(['in_progress', 'complete'].includes(nowait.status));
    await waitFor(async () => ok(await call('get_snapshot_status', { snapshot_id: nowait.id })).status === 'complete',
      120000, 'the async snapshot');
    const list = ok(await call('list_snapshots', { devbox_id: box.id }));
    assert.deepEqual(list.snapshots.map((s) => s.id), [nowait.id, snap.id]);
    const bybp = ok(await call('list_snapshots', { source_blueprint_id: tools.id, limit: 1 }));
    assert.equal(bybp.snapshots.length, 1);
    assert.equal(bybp.has_more, true);
    ok(await call('delete_snapshot', { snapshot_id: nowait.id }));
    const child = ok(await call('create_devbox', { snapshot_id: snap.id }));
    assert.equal(child.snapshot_id, snap.id);
    const r = ok(await call('execute_command', { devbox_id: child.id,
      command: 'cat ~/snap.txt && ~/.local/bin/e2e-tool' }));
    assert.equal(r.stdout, 'in the snapshot\ne2e-tool-ok\n');
    ok(await call('shutdown_devbox', { devbox_id: child.id }));
  });

  it('errors: snapshot of a shut down devbox, unknown ids', LONG, async () => {
    const down = ok(await call('create_devbox', {}));
    ok(await call('shutdown_devbox', { devbox_id: down.id }));
    const e = errorOf(await call('create_snapshot', { devbox_id: down.id }));
    assert.match(`${e.code} ${e.message}`, /devbox_not_running|only a running devbox/);
    assert.ok(errorOf(await call('get_snapshot_status', { snapshot_id: 'snp_nope' })).message.length > 0);
    assert.equal(errorOf(await call('get_blueprint', { blueprint_id: 'bpt_nope' })).code, 'not_found');
    const bad = errorOf(await call('create_devbox', { snapshot_id: 'snp_nope' }));
    assert.match(bad.message, /snp_nope/);
  });

  it('delete_snapshot and delete_blueprint once nothing uses them', LONG, async () => {
    ok(await call('shutdown_devbox', { devbox_id: box.id }));
    const list = await engineGet(engine.sock, '/v1/devboxes?limit=100');
    for (const d of list.devboxes)
      if (d.status !== 'shutdown') ok(await call('shutdown_devbox', { devbox_id: d.id }));
    const d = ok(await call('delete_snapshot', { snapshot_id: snap.id }));
    assert.equal(d.deleted, true);
    assert.equal(ok(await call('get_snapshot_status', { snapshot_id: snap.id })).status, 'deleted');
    const b = ok(await call('delete_blueprint', { blueprint_id: tools.id }));
    assert.equal(b.deleted, true);
    assert.equal((await engineGet(engine.sock, `/v1/blueprints/${tools.id}`)).state, 'deleted');
  });
});
