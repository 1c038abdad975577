// Blueprint builds through the official Runloop SDK against a real devboxd
// (buildah, the one builder): setup commands and Dockerfiles (FROM, ARG, ENV, WORKDIR, USER,
// COPY, RUN) build, devboxes from blueprint_id / blueprint_name boot on the
// result, logs stream while building, failing steps fail the build naming
// the step, delete is refused while a devbox uses it (a blueprint a
// snapshot is built on is deleted, its files staying for the snapshot), and
// records survive a restart.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Devboxd, blueprintSettled, rejectsWith, waitFor, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd(), (c) => { client = c; });

async function run(id, command) {
  const r = await client.devboxes.executeAndAwaitCompletion(id, { command });
  return { code: r.exit_status, out: r.stdout, err: r.stderr };
}

const settled = (id) => blueprintSettled(client, id, { timeoutMs: 180000, stepMs: 100 });

async function logText(id) {
  const l = await client.blueprints.logs(id);
  assert.equal(l.blueprint_id, id);
  for (const e of l.logs) {
    assert.equal(typeof e.level, 'string');
    assert.equal(typeof e.message, 'string');
    assert.equal(typeof e.timestamp_ms, 'number');
  }
  return l.logs.map((e) => `${e.level}: ${e.message}`).join('\n');
}

describe('blueprints', () => {
  let tools;

  test('setup commands: the devbox from the blueprint has the tool installed', async () => {
    const created = await client.blueprints.create({
      name: 'tools',
      system_setup_commands: [
        'mkdir -p ~/.local/bin',
        'printf "#!/bin/sh\\necho hello-from-blueprint\\n" > ~/.local/bin/hello && chmod 755 ~/.local/bin/hello',
      ],
      launch_parameters: { launch_commands: ['echo launched > /tmp/launch.txt'] },
      metadata: { owner: 'tests' },
    });
    assert.match(created.id, /^bpt_/);
    assert.ok(['provisioning', 'building'].includes(created.status), created.status);
    assert.equal(created.state, 'created');
    assert.equal(created.name, 'tools');
    tools = await settled(created.id);
    assert.equal(tools.status, 'build_complete', await logText(created.id));
    assert.ok(tools.build_finish_time_ms >= tools.create_time_ms);
    assert.deepEqual(tools.parameters.system_setup_commands.length, 2);
    assert.deepEqual(tools.metadata, { owner: 'tests' });
    const logs = await logText(tools.id);
    assert.match(logs, /Step 1\/2: RUN mkdir -p ~\/.local\/bin/);
    assert.match(logs, /Step 2\/2: RUN printf/);
    assert.match(logs, /build complete/);

    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: tools.id });
    assert.equal(box.blueprint_id, tools.id);
    assert.deepEqual(box.launch_parameters.launch_commands, ['echo launched > /tmp/launch.txt'],
      'the blueprint launch_parameters are the defaults');
    const r = await run(box.id, '~/.local/bin/hello && cat /tmp/launch.txt && stat -c %u ~/.local/bin/hello');
    assert.equal(r.out, 'hello-from-blueprint\nlaunched\n1000\n', r.err);
    const byName = await client.devboxes.createAndAwaitRunning({ blueprint_name: 'tools' });
    assert.equal(byName.blueprint_id, tools.id);
    assert.equal((await run(byName.id, 'hello=$(~/.local/bin/hello); echo $hello')).out, 'hello-from-blueprint\n');
    await client.devboxes.shutdown(box.id);
    await client.devboxes.shutdown(byName.id);
  });

  test('Dockerfile: FROM another blueprint, ARG, ENV, WORKDIR, USER, COPY, RUN', async () => {
    const b = await client.blueprints.create({
      name: 'docker',
      dockerfile: [
        '# a comment',
        `FROM runloop:${tools.id}`,
        'ARG GREETING=hi',
        'ENV APP_HOME=/home/user/app \\',
        '    MODE="local dev"',
        'ENV PATH=/home/user/.local/bin:$PATH',
        'USER user',
        'WORKDIR /home/user/app',
        'COPY config.json ./conf/',
        'RUN echo "$GREETING from $(pwd)" > greeting.txt && hello > hello.txt',
        'RUN ["sh", "-c", "echo exec-form > exec.txt"]',
      ].join('\n'),
      file_mounts: { '/home/user/src/config.json': '{"k": 1}\n' },
      build_args: { GREETING: 'hello' },
    });
    const done = await settled(b.id);
    const logs = await logText(b.id);
    assert.equal(done.status, 'build_complete', logs);
    assert.equal(done.base_blueprint_id, tools.id);
    assert.match(logs, /Step 1\/8: ARG GREETING=hi/);
    assert.match(logs, /Step 7\/8: RUN echo "\$GREETING from/);
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    const r = await run(box.id, 'cd /home/user/app && cat greeting.txt hello.txt exec.txt conf/config.json ../src/config.json && echo "$MODE|$APP_HOME" && hello');
    assert.equal(r.out, 'hello from /home/user/app\nhello-from-blueprint\nexec-form\n{"k": 1}\n{"k": 1}\n' +
      'local dev|/home/user/app\nhello-from-blueprint\n', r.err);
    await client.devboxes.shutdown(box.id);
    await client.blueprints.delete(b.id);
    const gone = await client.blueprints.retrieve(b.id);
    assert.equal(gone.state, 'deleted');
    await rejectsWith(assert, client.devboxes.create({ blueprint_id: b.id }), 404, /not found or not built/);
  });

  test('a failing step fails the build; the logs say which step', async () => {
    const b = await client.blueprints.create({ name: 'breaks',
      system_setup_commands: ['echo one', 'echo about-to-fail; exit 3', 'echo never'] });
    const done = await settled(b.id);
    assert.equal(done.status, 'failed');
    assert.equal(done.failure_reason, 'build_failed');
    const logs = await logText(b.id);
    assert.match(logs, /error: step 2\/3: system_setup_commands\[1\] echo about-to-fail; exit 3 failed: command exited with code 3/);
    assert.match(logs, /about-to-fail/);
    assert.doesNotMatch(logs, /never/);
    await rejectsWith(assert, client.devboxes.create({ blueprint_id: b.id }), 404, /not built/);
    await rejectsWith(assert, client.devboxes.create({ blueprint_name: 'breaks' }), 400, /no successful build/);
    const df = await client.blueprints.create({ name: 'breaks-df',
      dockerfile: 'FROM runloop:runloop/starter-x86_64\nRUN true\nRUN false\nRUN echo never' });
    assert.equal((await settled(df.id)).status, 'failed');
    assert.match(await logText(df.id), /step 2\/3 \(Dockerfile line 3\): RUN false failed: command exited with code 1/);
  });

  test('EXPOSE, LABEL, ADD, HEALTHCHECK and USER root build; bad Dockerfiles are a 400 naming the line', async () => {
    const b = await client.blueprints.create({ name: 'full-docker', dockerfile: [
      'FROM runloop:runloop/starter-x86_64',
      'USER root',
      'RUN mkdir -p /opt/acc && echo hi > /opt/acc/f',
      'EXPOSE 8080',
      'LABEL purpose=tests',
      'ADD notes.txt /opt/acc/',
      'HEALTHCHECK NONE',
      'USER user',
    ].join('\n'), file_mounts: { '/tmp/notes.txt': 'n\n' } });
    const done = await settled(b.id);
    assert.equal(done.status, 'build_complete', await logText(b.id));
    const cases = [
      ['FROM python:3.12\nRUN true\n', /line 1: FROM python:3\.12: no image or built blueprint of that name/],
      ['RUN true\n', /line 1: RUN before FROM/],
      ['FROM runloop:runloop/starter-x86_64\nFROWN x\n', /line 2: unknown instruction "FROWN"/],
      ['FROM runloop:no-such-blueprint\n', /FROM runloop:no-such-blueprint: no image or built blueprint/],
    ];
    for (const [dockerfile, re] of cases)
      await rejectsWith(assert, client.blueprints.create({ name: 'unsupported', dockerfile }), 400, re);
  });

  test('build logs stream into the logs endpoint while the build runs', async () => {
    const b = await client.blueprints.create({ name: 'slow',
      system_setup_commands: ['echo "first-line-$((20+22))"; sleep 8; echo "second-line-$((20+22))"'] });
    // Seen while building: the status read before the log read says building.
    const seen = await waitFor(async () => {
      const st = (await client.blueprints.retrieve(b.id)).status;
      const logs = await logText(b.id);
      return logs.includes('first-line-42') ? { st, logs } : null;
    }, { timeoutMs: 120000, stepMs: 100, what: 'the first output line' });
    assert.equal(seen.st, 'building', 'the first line arrived before the build ended');
    assert.doesNotMatch(seen.logs, /second-line-42/);
    const done = await settled(b.id);
    assert.equal(done.status, 'build_complete');
    assert.match(await logText(b.id), /second-line-42/);
  });

  test('builds run at most two at a time; the others wait in provisioning', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push((await client.blueprints.create({ name: `queue-${i}`,
        system_setup_commands: ['sleep 2'] })).id);
    let maxBuilding = 0;
    let sawWaiting = false;
    const statuses = () => Promise.all(ids.map(async (id) => (await client.blueprints.retrieve(id)).status));
    await waitFor(async () => {
      // Reads of three records are not one instant. A status only moves
      // forward, so a build read 'building' in two passes was building
      // throughout the gap between them: count those.
      const a = await statuses();
      const b = await statuses();
      const building = ids.filter((_, i) => a[i] === 'building' && b[i] === 'building').length;
      maxBuilding = Math.max(maxBuilding, building);
      if (building === 2 && a.includes('provisioning') && b.includes('provisioning')) sawWaiting = true;
      return b.every((s) => s === 'build_complete' || s === 'failed') ? b : null;
    }, { timeoutMs: 180000, stepMs: 50, what: 'three builds' });
    assert.ok(maxBuilding <= 2, `${maxBuilding} builds ran at once`);
    for (const id of ids) assert.equal((await client.blueprints.retrieve(id)).status, 'build_complete');
    console.log(`# most builds at once: ${maxBuilding}; a third seen waiting: ${sawWaiting}`);
  });

  test('list by name and status with pagination', async () => {
    const listed = [];
    for (let i = 0; i < 5; i++)
      listed.push((await client.blueprints.create({ name: 'listed', system_setup_commands: ['true'] })).id);
    for (const id of listed) await settled(id);
    const all = await client.blueprints.list({ limit: 100 });
    assert.ok(all.blueprints.length >= 3);
    const named = await client.blueprints.list({ name: 'listed', limit: 3 });
    assert.equal(named.blueprints.length, 3);
    assert.equal(named.has_more, true);
    assert.ok(named.blueprints.every((b) => b.name === 'listed'));
    const next = await client.blueprints.list({ name: 'listed', limit: 100,
      starting_after: named.blueprints[2].id });
    assert.equal(next.blueprints.length, 2);
    const ok = await client.blueprints.list({ status: 'build_complete', limit: 100 });
    assert.ok(ok.blueprints.every((b) => b.status === 'build_complete'));
    assert.ok(ok.blueprints.some((b) => b.id === tools.id));
    await rejectsWith(assert, client.blueprints.list({ status: 'done' }), 400, /not a blueprint status/);
  });

  test('bad input', async () => {
    await rejectsWith(assert, client.blueprints.create({}), 400, /name is required/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x', bogus: 1 }), 400, /bogus/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x', system_setup_commands: 'ls' }), 400,
      /system_setup_commands/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x', file_mounts: { rel: 'x' } }), 400,
      /absolute path/);
    // The SDK checks file sizes itself: send this one raw.
    const big = await engine.raw('POST', '/v1/blueprints', { headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', file_mounts: { '/a': 'x'.repeat(131001) } }) });
    assert.equal(big.status, 400);
    assert.match(big.json.message, /keep each file under/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x', secrets: { A: 'b' } }), 400,
      /'secrets' is not supported by the local engine/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x', base_blueprint_id: tools.id,
      base_blueprint_name: 'tools' }), 400, /only one of base_blueprint_id and base_blueprint_name/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x', base_blueprint_id: 'bpt_nope' }), 404,
      /no successful build/);
    await rejectsWith(assert, client.blueprints.create({ name: 'x',
      launch_parameters: { resource_size_request: 'huge' } }), 400, /resource_size_request/);
    await rejectsWith(assert, client.blueprints.retrieve('bpt_nope'), 404, /not found/);
    await rejectsWith(assert, client.blueprints.logs('bpt_nope'), 404, /not found/);
    await rejectsWith(assert, client.blueprints.delete('bpt_nope'), 404, /not found/);
    await rejectsWith(assert, client.blueprints.list({ limit: 0 }), 400, /limit/);
  });

  test('base_blueprint_name composes; records survive a restart', async () => {
    const child = await client.blueprints.create({ name: 'child', base_blueprint_name: 'tools',
      system_setup_commands: ['~/.local/bin/hello > ~/child.txt'] });
    assert.equal(child.base_blueprint_id, tools.id);
    const done = await settled(child.id);
    assert.equal(done.status, 'build_complete', await logText(child.id));
    await engine.stop();
    await engine.start();
    client = engine.client();
    const again = await client.blueprints.retrieve(child.id);
    assert.equal(again.status, 'build_complete');
    assert.match(await logText(child.id), /build complete/);
    const box = await client.devboxes.createAndAwaitRunning({ blueprint_name: 'child' });
    assert.equal((await run(box.id, 'cat ~/child.txt')).out, 'hello-from-blueprint\n');
    const snap = await client.devboxes.snapshotDisk(box.id, {});
    assert.equal(snap.source_blueprint_id, child.id);
    const list = await client.devboxes.listDiskSnapshots({ source_blueprint_id: child.id });
    assert.deepEqual(list.snapshots.map((s) => s.id), [snap.id]);
    await client.devboxes.shutdown(box.id);
    // The snapshot is built on child: child goes, its layer stays for it.
    await client.blueprints.delete(child.id);
    const fromSnap = await client.devboxes.createAndAwaitRunning({ snapshot_id: snap.id });
    assert.equal((await run(fromSnap.id, 'cat ~/child.txt')).out, 'hello-from-blueprint\n');
    await client.devboxes.shutdown(fromSnap.id);
    await client.devboxes.diskSnapshots.delete(snap.id);
    await client.blueprints.delete(tools.id);
  });
});
