// Blueprint versions and tags through the official Runloop SDK against a
// real devboxd: the builds of a name are its versions (GET
// /v1/blueprints?name=, newest first); devboxd's POST /v1/blueprints/{id}/tag
// gives one build of a name a tag (moved from the build that had it), every
// BlueprintView lists its tags, "NAME:TAG" resolves to the tagged build
// where a blueprint name is taken (devbox create, a Dockerfile's FROM,
// base_blueprint_name), tags survive a restart,
// and bad tags are 400s that say what to change.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Devboxd, blueprintLog, blueprintSettled, rejectsWith, useEngine } from './devboxd.mjs';

let client;
const engine = useEngine(new Devboxd(), (c) => { client = c; });

async function build(name, setup) {
  const b = await client.blueprints.create({ name, system_setup_commands: setup });
  const done = await blueprintSettled(client, b.id);
  return { done, log: await blueprintLog(client, b.id) };
}

async function versionOn(blueprintName) {
  const box = await client.devboxes.createAndAwaitRunning({ blueprint_name: blueprintName });
  const r = await client.devboxes.executeAndAwaitCompletion(box.id, { command: 'cat ~/v' });
  await client.devboxes.shutdown(box.id);
  return r.stdout;
}

const tag = (id, body) => client.post(`/v1/blueprints/${id}/tag`, { body });

describe('blueprint versions and tags', () => {
  test('a tag names one version of a name; NAME:TAG resolves to it', async () => {
    const v1 = await build('tagged', ['echo v1 > ~/v']);
    assert.equal(v1.done.status, 'build_complete', v1.log);
    const v2 = await build('tagged', ['echo v2 > ~/v']);
    assert.equal(v2.done.status, 'build_complete', v2.log);
    const versions = (await client.blueprints.list({ name: 'tagged' })).blueprints;
    assert.deepEqual(versions.map((b) => b.id), [v2.done.id, v1.done.id]);
    assert.deepEqual(versions.map((b) => b.tags), [[], []]);

    const t1 = await tag(v1.done.id, { tag: 'stable' });
    assert.deepEqual(t1.tags, ['stable']);
    assert.equal(await versionOn('tagged:stable'), 'v1\n');
    assert.equal(await versionOn('tagged'), 'v2\n', 'the plain name stays the latest build');

    // Moving the tag: the other version loses it.
    const t2 = await tag(v2.done.id, { tag: 'stable' });
    assert.deepEqual(t2.tags, ['stable']);
    assert.deepEqual((await client.blueprints.retrieve(v1.done.id)).tags, []);
    await tag(v1.done.id, { tag: 'old' });
    assert.equal(await versionOn('tagged:stable'), 'v2\n');
    assert.equal(await versionOn('tagged:old'), 'v1\n');

    // A Dockerfile's FROM and base_blueprint_name take NAME:TAG too.
    for (const params of [{ dockerfile: 'FROM tagged:old\nRUN echo child >> /home/user/v\n' },
      { base_blueprint_name: 'tagged:old', system_setup_commands: ['echo child >> ~/v'] }]) {
      const child = await client.blueprints.create({ name: 'tagged-child', ...params });
      const cd = await blueprintSettled(client, child.id);
      assert.equal(cd.status, 'build_complete', await blueprintLog(client, child.id));
      assert.equal(cd.base_blueprint_id, v1.done.id);
      assert.equal(await versionOn('tagged-child'), 'v1\nchild\n');
      await client.blueprints.delete(child.id);
    }

    // Kept across a restart.
    await engine.stop();
    await engine.start();
    client = engine.client();
    assert.deepEqual((await client.blueprints.retrieve(v1.done.id)).tags, ['old']);
    assert.deepEqual((await client.blueprints.retrieve(v2.done.id)).tags, ['stable']);
    assert.equal(await versionOn('tagged:old'), 'v1\n');
  });

  test('bad tags, unknown and unfinished builds are errors that say what to change', async () => {
    const some = (await client.blueprints.list({ name: 'tagged' })).blueprints[0];
    await rejectsWith(assert, tag(some.id, { tag: 'has space' }), 400, /tag "has space" is not valid/);
    await rejectsWith(assert, tag(some.id, { tag: '-x' }), 400, /not starting with/);
    await rejectsWith(assert, tag(some.id, {}), 400, /tag is required/);
    await rejectsWith(assert, tag(some.id, { tag: 'a', version: 1 }), 400, /version/);
    await rejectsWith(assert, tag('bpt_nosuch', { tag: 'a' }), 404, /not found/);
    const bad = await build('tagged-bad', ['exit 3']);
    assert.equal(bad.done.status, 'failed');
    await rejectsWith(assert, tag(bad.done.id, { tag: 'stable' }), 400, /is failed: only a completed build can be tagged/);
    await rejectsWith(assert, client.devboxes.create({ blueprint_name: 'tagged:nosuch' }), 400,
      /no successful build of a blueprint named "tagged:nosuch"/);
  });
});
