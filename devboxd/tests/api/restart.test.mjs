// Persistence across a devboxd restart: every devbox is listed again with
// its files, running ones come back running, suspended ones stay suspended,
// executions that were in flight are completed (killed), and a second
// engine cannot take the same state dir.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, test } from 'node:test';
import { Devboxd, devboxdBin } from './devboxd.mjs';

const engine = new Devboxd();
after(async () => { await engine.cleanup(); });

test('records, files and statuses survive a restart', async () => {
  await engine.start();
  let client = engine.client();
  const run = await client.devboxes.createAndAwaitRunning({ name: 'keeps-running', metadata: { k: 'v' },
    launch_parameters: { launch_commands: ['echo boot >> /home/user/boots.txt'] } });
  await client.devboxes.writeFileContents(run.id, { file_path: 'data.txt', contents: 'persisted' });
  const done = await client.devboxes.executeAndAwaitCompletion(run.id, { command: 'echo finished' });
  const inflight = await client.devboxes.executions.executeAsync(run.id, { command: 'sleep 600' });

  const susp = await client.devboxes.createAndAwaitRunning({ name: 'stays-suspended' });
  await client.devboxes.writeFileContents(susp.id, { file_path: 's.txt', contents: 'suspended data' });
  await client.devboxes.suspend(susp.id);
  await client.devboxes.awaitSuspended(susp.id);

  const gone = await client.devboxes.createAndAwaitRunning({ name: 'was-shutdown' });
  await client.devboxes.shutdown(gone.id);

  // A second engine on the same state dir refuses to start.
  const second = spawnSync(devboxdBin, ['--state-dir', engine.stateDir, '--listen', '127.0.0.1:0'],
    { encoding: 'utf8', timeout: 30000 });
  assert.notEqual(second.status, 0);
  assert.match(second.stderr, /another devboxd already serves state dir/);

  await engine.stop();
  await engine.start();
  client = engine.client();

  const list = await client.devboxes.list({ limit: 100 });
  const byId = Object.fromEntries(list.devboxes.map((d) => [d.id, d]));
  assert.ok(byId[run.id] && byId[susp.id] && byId[gone.id], 'a devbox is missing after restart');
  assert.equal(byId[gone.id].status, 'shutdown');
  assert.equal(byId[susp.id].status, 'suspended');
  assert.deepEqual(byId[run.id].metadata, { k: 'v' });

  const back = await client.devboxes.awaitRunning(run.id);
  assert.equal(back.status, 'running');
  assert.equal(await client.devboxes.readFileContents(run.id, { file_path: 'data.txt' }), 'persisted');
  // launch_commands ran at each boot, as after a reboot.
  assert.equal(await client.devboxes.readFileContents(run.id, { file_path: 'boots.txt' }), 'boot\nboot\n');

  const old = await client.devboxes.executions.retrieve(run.id, done.execution_id);
  assert.equal(old.status, 'completed');
  assert.equal(old.stdout, 'finished\n');
  const killed = await client.devboxes.executions.retrieve(run.id, inflight.execution_id);
  assert.equal(killed.status, 'completed');
  assert.equal(killed.exit_status, 137);

  await client.devboxes.resume(susp.id);
  await client.devboxes.awaitRunning(susp.id);
  assert.equal(await client.devboxes.readFileContents(susp.id, { file_path: 's.txt' }), 'suspended data');

  const fresh = await client.devboxes.executeAndAwaitCompletion(run.id, { command: 'echo alive' });
  assert.equal(fresh.stdout, 'alive\n');
});
