// End-to-end, through the built host and the official MCP SDK client over
// stdio against a real devboxd (runc runtime, starter image): renew_devbox
// moves a devbox's lifetime end (as runner-mcp's sandbox_renew) and
// write_file's `user` makes the file that user's inside the devbox (as
// runner-mcp's file_write), with their bad input.
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

function errorOf(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  return JSON.parse(result.content.find((c) => c.type === 'text').text).error;
}

describe('renew_devbox and write_file user', () => {
  let stack;
  let box;
  const call = (name, args) => stack.client.callTool({ name, arguments: args }, undefined, { timeout: 580000 });
  const sh = async (command) => ok(await call('execute_command', { devbox_id: box, command }));

  before(async () => {
    stack = await startEngineAndHost({ name: 'lease-owner', conf, plugins: ['exec'] });
    box = ok(await call('create_devbox', { keep_alive_time_seconds: 900 })).id;
  }, LONG);

  after(() => stack?.stop());

  it('renew_devbox: the lifetime ends keep_alive_time_seconds from now', LONG, async () => {
    const { tools } = await stack.client.listTools();
    const k = tools.find((t) => t.name === 'renew_devbox').inputSchema.properties.keep_alive_time_seconds;
    assert.equal(k.minimum, 60);
    assert.equal(k.maximum, 3600);
    const t0 = Date.now();
    const r = ok(await call('renew_devbox', { devbox_id: box, keep_alive_time_seconds: 3000 }));
    assert.equal(r.devbox_id, box);
    assert.equal(r.status, 'running');
    assert.equal(r.keep_alive_time_seconds, 3000);
    assert.ok(r.expires_at_ms >= t0 + 3000000 && r.expires_at_ms <= Date.now() + 3000000, JSON.stringify(r));
    assert.equal(Date.parse(r.expires_at), r.expires_at_ms);
    assert.match(r.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The engine's own record says the same.
    const view = await engineRequest(stack.engine.sock, 'GET', `/v1/devboxes/${box}`);
    assert.equal(view.lifetime_end_ms, r.expires_at_ms);
  });

  it('renew_devbox: out of range, unknown and suspended devboxes are errors that say what to do', LONG, async () => {
    for (const v of [30, 3601]) {
      const e = await call('renew_devbox', { devbox_id: box, keep_alive_time_seconds: v });
      assert.equal(e.isError, true);
      assert.match(e.content[0].text, /keep_alive_time_seconds/);
    }
    const nf = errorOf(await call('renew_devbox', { devbox_id: 'dbx_doesnotexist', keep_alive_time_seconds: 600 }));
    assert.equal(nf.code, 'not_found');
    const other = ok(await call('create_devbox', {})).id;
    ok(await call('suspend_devbox', { devbox_id: other }));
    const sus = errorOf(await call('renew_devbox', { devbox_id: other, keep_alive_time_seconds: 600 }));
    assert.equal(sus.code, 'devbox_not_running');
    assert.match(sus.message, /suspended/);
    assert.match(sus.remedy, /resume_devbox/);
    ok(await call('shutdown_devbox', { devbox_id: other }));
  });

  it('write_file user: the file is that user\'s inside the devbox', LONG, async () => {
    let w = ok(await call('write_file', { devbox_id: box, file_path: '/home/user/mine.txt', contents: 'a\n' }));
    assert.equal((await sh('stat -c %U:%G /home/user/mine.txt')).stdout, 'user:user\n');
    w = ok(await call('write_file', { devbox_id: box, file_path: '/home/user/roots.txt', contents: 'r\n', user: 'root', mode: '0640' }));
    assert.equal(w.resolved_path, '/home/user/roots.txt');
    assert.equal((await sh('sudo stat -c %U:%G:%a /home/user/roots.txt; sudo cat /home/user/roots.txt')).stdout, 'root:root:640\nr\n');
    // In a sticky directory, over a file of the default user's.
    ok(await call('write_file', { devbox_id: box, file_path: '/tmp/t.txt', contents: 'one\n' }));
    ok(await call('write_file', { devbox_id: box, file_path: '/tmp/t.txt', contents: 'two\n', user: 'root' }));
    assert.equal((await sh('stat -c %U /tmp/t.txt; cat /tmp/t.txt; ls -a /tmp | grep -c rlmcp || true')).stdout, 'root\ntwo\n0\n');
    // A user made in the devbox, in its home; and 'user' by name.
    assert.equal((await sh('sudo useradd -m alice && echo made')).stdout, 'made\n');
    ok(await call('write_file', { devbox_id: box, file_path: '/home/alice/notes.txt', contents: 'hi\n', user: 'alice' }));
    assert.equal((await sh('sudo stat -c %U:%G /home/alice/notes.txt')).stdout, 'alice:alice\n');
    ok(await call('write_file', { devbox_id: box, file_path: '/home/user/roots.txt', contents: 'back\n', user: 'user' }));
    assert.equal((await sh('stat -c %U:%G /home/user/roots.txt; cat /home/user/roots.txt')).stdout, 'user:user\nback\n');
  });

  it('write_file user: an unknown user or a bad name is invalid_argument, and the file stays', LONG, async () => {
    const e = errorOf(await call('write_file', { devbox_id: box, file_path: '/home/user/mine.txt', contents: 'changed\n', user: 'nosuchuser' }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /no user 'nosuchuser' in the devbox/);
    assert.equal((await sh('cat /home/user/mine.txt; ls -a /home/user | grep -c rlmcp || true')).stdout, 'a\n0\n');
    const bad = errorOf(await call('write_file', { devbox_id: box, file_path: '/home/user/mine.txt', contents: 'x', user: 'root; rm -rf /' }));
    assert.equal(bad.code, 'invalid_argument');
    assert.match(bad.message, /argument 'user' must be a user name/);
    assert.equal((await sh('cat /home/user/mine.txt')).stdout, 'a\n');
  });
});
