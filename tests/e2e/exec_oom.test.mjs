// End-to-end: a command that overruns its devbox's memory limit is killed
// alone, through the built host and the official MCP SDK client over stdio
// against a real devboxd (runc on the starter image, the defaults). The
// result says out_of_memory; the devbox stays running and runs the next
// command, as a process killed in a Docker container or a Runloop devbox.
// The devbox is X_SMALL (1 GiB, the smallest size the API offers), so the
// bomb is killed within a second or two and never threatens the machine.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { sourceDir } from './lib/host.mjs';
import { engineRequest, startEngineAndHost } from './lib/engine.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-local.yaml');
const LONG = { timeout: 600000 };

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

describe('a command killed by the memory limit ends alone', () => {
  let stack;
  const call = (name, args) => stack.client.callTool({ name, arguments: args }, undefined, { timeout: 580000 });

  before(async () => {
    stack = await startEngineAndHost({ name: 'exec-oom', conf, plugins: ['exec'] });
  }, LONG);

  after(() => stack?.stop());

  it('execute_command says out_of_memory; the next command runs; the devbox stays running', LONG, async () => {
    const box = ok(await call('create_devbox', { resource_size: 'X_SMALL' }));
    const bomb = ok(await call('execute_command', {
      devbox_id: box.id, timeout_seconds: 120, command: 'python3 -c "x=bytearray(10**10)"',
    }));
    assert.equal(bomb.ended_by, 'out_of_memory', JSON.stringify(bomb));
    assert.equal(bomb.exit_code, 137);
    // Longer than the engine's health tick (250 ms): a devbox the OOM had
    // failed would no longer read running.
    await new Promise((r) => setTimeout(r, 1500));
    for (let i = 0; i < 2; i++) {
      const next = ok(await call('execute_command', { devbox_id: box.id, command: 'echo alive' }));
      assert.equal(next.stdout, 'alive\n');
      assert.equal(next.ended_by, 'exit');
    }
    assert.equal(ok(await call('get_devbox', { devbox_id: box.id })).status, 'running');
    // The engine's own view agrees, and logged the kill.
    const view = await engineRequest(stack.engine.sock, 'GET', `/v1/devboxes/${box.id}`);
    assert.equal(view.status, 'running', JSON.stringify(view));
    const logs = await engineRequest(stack.engine.sock, 'GET', `/v1/devboxes/${box.id}/logs`);
    assert.ok(logs.logs.some((l) => /memory limit killed a process/.test(l.message ?? '')),
      JSON.stringify(logs.logs.slice(-4)));
    ok(await call('shutdown_devbox', { devbox_id: box.id }));
  });
});
