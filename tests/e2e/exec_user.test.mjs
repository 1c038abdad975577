// End-to-end: execute_command's per-call `user` through the built host and
// the official MCP SDK client over stdio, against a real devboxd under the
// runc runtime on the starter image (the defaults: root reachable through
// the default user's sudo, as on Runloop).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { sourceDir } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';

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

describe('execute_command user: root through sudo (runc runtime, starter image: the defaults)', () => {
  const s = {};

  before(async () => {
    // The engine's defaults: runc on the starter image.
    s.stack = await startEngineAndHost({ name: 'exec-user', conf, plugins: ['exec'] });
    s.call = (name, args) => s.stack.client.callTool({ name, arguments: args }, undefined, { timeout: 580000 });
    s.box = ok(await s.call('create_devbox', {})).id;
  }, LONG);
  after(() => s.stack?.stop());

  it('runs as the default user unless asked, and as root when asked', LONG, async () => {
    let r = ok(await s.call('execute_command', { devbox_id: s.box, command: 'id -un; id -u' }));
    assert.equal(r.stdout, 'user\n1000\n');
    r = ok(await s.call('execute_command', { devbox_id: s.box, command: 'id -un; id -u', user: 'user' }));
    assert.equal(r.stdout, 'user\n1000\n');
    r = ok(await s.call('execute_command', {
      devbox_id: s.box, user: 'root', working_dir: '/usr/local', env: { WHO: "it's root" },
      command: 'id -un; pwd; echo "$WHO"; mkdir -p /opt/from-root && touch /opt/from-root/f && echo wrote',
    }));
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, "root\n/usr/local\nit's root\nwrote\n");
    // What root wrote is root's; the default user sees it.
    r = ok(await s.call('execute_command', { devbox_id: s.box, command: 'stat -c %U /opt/from-root/f' }));
    assert.equal(r.stdout, 'root\n');
  });

  it('execute_command_async runs as root too; a named shell with root is refused', LONG, async () => {
    const started = ok(await s.call('execute_command_async', { devbox_id: s.box, user: 'root', command: 'id -u' }));
    const done = ok(await s.call('wait_for_execution', { devbox_id: s.box, execution_id: started.execution_id }));
    assert.equal(done.stdout, '0\n');
    const e = errorOf(await s.call('execute_command', {
      devbox_id: s.box, user: 'root', shell_name: 'sh1', command: 'id -u',
    }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /user 'root' runs the command through sudo in a fresh shell; drop shell_name/);
    const bad = await s.call('execute_command', { devbox_id: s.box, user: 'admin', command: 'id -u' });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /arguments.user: must be one of \\"user\\", \\"root\\"; got string \\"admin\\"/);
  });

  it('pip installs into a venv (offline: a wheel made in the devbox)', LONG, async () => {
    // A wheel is a zip with the module and its dist-info; pip needs no index.
    const make = [
      'import zipfile',
      "w = zipfile.ZipFile('/tmp/rlmcp_hi-1.0-py3-none-any.whl', 'w')",
      "w.writestr('rlmcp_hi.py', 'X = 6 * 7\\n')",
      "w.writestr('rlmcp_hi-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: rlmcp-hi\\nVersion: 1.0\\n')",
      "w.writestr('rlmcp_hi-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')",
      "w.writestr('rlmcp_hi-1.0.dist-info/RECORD', '')",
      'w.close()',
    ].join('\n');
    const r = ok(await s.call('execute_command', {
      devbox_id: s.box,
      command: `python3 -c "$MAKE" && python3 -m venv /home/user/venv && `
        + '/home/user/venv/bin/pip install -q --no-index /tmp/rlmcp_hi-1.0-py3-none-any.whl && '
        + '/home/user/venv/bin/python -c "import rlmcp_hi; print(rlmcp_hi.X)" && '
        + '/home/user/venv/bin/pip show rlmcp-hi | grep ^Version',
      env: { MAKE: make },
    }));
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, '42\nVersion: 1.0\n');
  });

  it('sudo apt-get install works when a Debian mirror is reachable', LONG, async (t) => {
    const up = ok(await s.call('execute_command', {
      devbox_id: s.box, timeout_seconds: 400,
      command: 'timeout 300 sudo apt-get update -qq >/tmp/apt-update.log 2>&1; echo $?; tail -3 /tmp/apt-update.log',
    }));
    if (!up.stdout.startsWith('0\n')) {
      t.skip(`no Debian mirror reachable from the devbox: apt-get update said ${JSON.stringify(up.stdout)}`);
      return;
    }
    const r = ok(await s.call('execute_command', {
      devbox_id: s.box, timeout_seconds: 400,
      command: "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hello >/dev/null && hello && dpkg-query -W -f '${Status}\\n' hello",
    }));
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, 'Hello, world!\ninstall ok installed\n');
  });
});
