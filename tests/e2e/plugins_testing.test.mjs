// End-to-end: the shipped conf/testing.yaml (the surface of the Python
// runloop-mcp's testing edition) against a real devboxd: its tool names and
// renamed parameters (sandbox_id), the 60-3600 s lifetime, the purpose tag
// shared with run_code, and that edition's workflow: create, upload, run,
// download, shut down.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hostBin, pluginDir, sourceDir, waitFor } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';

const conf = path.join(sourceDir, 'conf', 'testing.yaml');
const LONG = { timeout: 240000 };

describe("conf/testing.yaml (the testing edition's surface)", () => {
  let stack;
  let tmp;
  let client;

  before(async () => {
    // backend auto with no key and no base URL: the local engine on
    // RLMCP_STATE_DIR (the one started here; the host starts none).
    stack = await startEngineAndHost({
      name: 'testing-conf', conf, env: ({ state }) => ({ RLMCP_STATE_DIR: state }),
    });
    ({ tmp, client } = stack);
  });

  after(() => stack?.stop());

  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 230000 });
  const ok = (r) => {
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    return r.structuredContent;
  };

  it('exposes the testing edition\'s tool names with sandbox_id', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['build_blueprint', 'create_sandbox', 'create_snapshot', 'download_artifact',
      'execute_in_sandbox', 'get_sandbox', 'get_sandbox_usage', 'list_blueprint', 'list_sandbox', 'list_snapshot',
      'resume_sandbox', 'run_code', 'shutdown_sandbox', 'suspend_sandbox', 'upload_test_file']);
    assert.ok(!names.some((n) => n.startsWith('pty_') || n.includes('tunnel')), 'no PTY or tunnel tools');
    const snap = tools.find((t) => t.name === 'create_snapshot');
    assert.ok(snap.inputSchema.properties.sandbox_id);
    const exec = tools.find((t) => t.name === 'execute_in_sandbox');
    assert.ok(exec.inputSchema.properties.sandbox_id);
    assert.ok(!exec.inputSchema.properties.devbox_id);
    // A command line or an argv: the schema offers both, the tool wants one.
    assert.deepEqual(exec.inputSchema.required.sort(), ['sandbox_id']);
    assert.equal(exec.inputSchema.properties.command.type, 'string');
    assert.equal(exec.inputSchema.properties.args.type, 'array');
    const none = await client.callTool({ name: 'execute_in_sandbox', arguments: { sandbox_id: 'dbx_x' } });
    assert.equal(none.isError, true);
    assert.match(none.content[0].text, /missing the command: give command \(a bash command line/);
  });

  // Tools this deployment does not expose, by any name they are known by.
  const hiddenRe = /\b(create_devbox|list_devboxes|get_devbox|resume_devbox|shutdown_devbox|execute_command|execute_command_async|get_execution|get_execution_logs|wait_for_execution|write_file|read_file|upload_file|download_file|delete_snapshot|get_snapshot_status|get_blueprint|get_blueprint_logs|list_snapshots|list_blueprints|enable_tunnel|pty_connect)\b/;

  it('instructions and error remedies name only exposed tools', async () => {
    const instr = client.getInstructions();
    assert.match(instr, /shutdown_sandbox/);
    assert.doesNotMatch(instr, hiddenRe);
    const r = await call('get_sandbox', { sandbox_id: 'dbx_doesnotexist' });
    assert.equal(r.isError, true);
    const e = JSON.parse(r.content[0].text).error;
    assert.equal(e.code, 'not_found');
    // The plugin's remedy sends the agent to list_devboxes: here list_sandbox.
    assert.match(e.remedy, /list_sandbox/);
    assert.doesNotMatch(`${e.message} ${e.remedy}`, hiddenRe);
  });

  it("the testing edition's launch line: --host and --port serve HTTP", async () => {
    // Port 0: the kernel picks a free one and the host logs it.
    const child = spawn(hostBin, ['--config', conf, '--host', '127.0.0.1', '--port', '0'], {
      env: { PATH: process.env.PATH, HOME: tmp, RLMCP_PLUGIN_DIR: pluginDir, RLMCP_STATE_DIR: path.join(tmp, 'state') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.on('data', (d) => { log += d; });
    const exited = new Promise((r) => child.once('exit', r));
    let http;
    try {
      await waitFor(() => /\(port (\d+)\)/.test(log) || child.exitCode !== null, 30000, 'the HTTP host to listen');
      const port = Number(/\(port (\d+)\)/.exec(log)?.[1]);
      assert.ok(port > 0, log);
      http = new Client({ name: 'testing-conf-http', version: '1' });
      await http.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
      const { tools } = await http.listTools();
      assert.ok(tools.some((t) => t.name === 'execute_in_sandbox'));
    } finally {
      try { await http?.close(); } catch { /* gone */ }
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('lifetime is limited to 60-3600 s, and the input schema says so', async () => {
    const { tools } = await client.listTools();
    const k = tools.find((t) => t.name === 'create_sandbox').inputSchema.properties.keep_alive_time_seconds;
    assert.equal(k.minimum, 60);
    assert.equal(k.maximum, 3600);
    for (const [v, bound] of [[59, />= 60/], [3601, /<= 3600/]]) {
      const r = await call('create_sandbox', { keep_alive_time_seconds: v });
      assert.equal(r.isError, true);
      const e = JSON.parse(r.content[0].text).error;
      assert.equal(e.code, 'invalid_argument');
      assert.match(e.message, bound);
    }
  });

  it('run_code takes Runloop\'s image names, as create_sandbox does; an unknown name is not_found', LONG, async () => {
    const first = ok(await call('run_code', { command: 'echo ran; cat /etc/os-release | head -1', blueprint_name: 'runloop/starter-x86_64' }));
    assert.equal(first.exit_code, 0, first.stderr);
    assert.match(first.stdout, /^ran\n/);
    assert.equal(first.reused, false);
    assert.equal(first.blueprint_name, 'runloop/starter-x86_64');
    assert.equal(first.blueprint_id, null);
    // The sandbox made for that image name is reused for it.
    const again = ok(await call('run_code', { command: 'true', blueprint_name: 'runloop/starter-x86_64' }));
    assert.equal(again.reused, true);
    assert.equal(again.devbox_id, first.devbox_id);
    // An image name the engine does not map: not_found naming it, no sandbox left.
    const before = ok(await call('list_sandbox', {})).devboxes.length;
    const bad = await call('run_code', { command: 'true', blueprint_name: 'runloop/universal-ubuntu-24.04-arm64' });
    assert.equal(bad.isError, true);
    const be = JSON.parse(bad.content[0].text).error;
    assert.equal(be.code, 'not_found');
    assert.match(be.message, /universal-ubuntu-24\.04-arm64/);
    assert.match(be.message, /this engine runs runloop\/starter-x86_64/);
    assert.equal(ok(await call('list_sandbox', {})).devboxes.length, before);
    ok(await call('shutdown_sandbox', { sandbox_id: first.devbox_id }));
  });

  it("the seed's npm test example on Runloop's universal image: create_sandbox and run_code", LONG, async () => {
    const pkg = JSON.stringify({ name: 't', version: '1.0.0', scripts: { test: 'node -e "console.log(\'npm-test-ok\')"' } });
    const sb = ok(await call('create_sandbox', { blueprint_name: 'runloop/universal-ubuntu-24.04-x86_64', files: { '/home/user/package.json': pkg } }));
    const r = ok(await call('execute_in_sandbox', { sandbox_id: sb.id, command: 'cd /home/user && npm test' }));
    assert.equal(r.exit_code, 0, r.stderr);
    assert.match(r.stdout, /npm-test-ok/);
    const rc = ok(await call('run_code', { files: { '/home/user/package.json': pkg }, command: 'cd /home/user && npm test', blueprint_name: 'runloop/universal-ubuntu-24.04-x86_64' }));
    assert.equal(rc.exit_code, 0, rc.stderr);
    assert.match(rc.stdout, /npm-test-ok/);
    ok(await call('shutdown_sandbox', { sandbox_id: sb.id }));
    ok(await call('shutdown_sandbox', { sandbox_id: rc.devbox_id }));
  });

  it('the testing edition\'s workflow: create with files, run, upload, download, reuse by run_code, shut down', LONG, async () => {
    const sb = ok(await call('create_sandbox', { files: { '/home/user/package.txt': 'v1\n' } }));
    assert.equal(sb.status, 'running');
    assert.equal(sb.metadata.purpose, 'code-testing');
    const got = ok(await call('get_sandbox', { sandbox_id: sb.id }));
    assert.equal(got.id, sb.id);
    const r = ok(await call('execute_in_sandbox', { sandbox_id: sb.id, command: 'cat /home/user/package.txt' }));
    assert.equal(r.stdout, 'v1\n');
    // Output past the 32 KiB cap: get_execution_logs is hidden, so the
    // marker keeps head and tail and says how many bytes were dropped.
    const big = ok(await call('execute_in_sandbox', { sandbox_id: sb.id, command: 'echo HEAD; head -c 200000 /dev/zero | tr "\\0" x; echo; echo TAIL' }));
    assert.equal(big.stdout_truncated, true);
    assert.ok(big.stdout.startsWith('HEAD\n'), big.stdout.slice(0, 20));
    assert.ok(big.stdout.endsWith('TAIL\n'), big.stdout.slice(-20));
    const m = big.stdout.match(/\[truncated (\d+) bytes\]/);
    assert.ok(m, 'marker with the dropped byte count');
    assert.equal(Number(m[1]) + big.stdout.length - m[0].length - 4, 5 + 200001 + 5);
    assert.doesNotMatch(big.stdout, hiddenRe);
    assert.equal(big.stdout_bytes_dropped, Number(m[1]));
    assert.equal(big.ended_by, 'exit');
    const killed = ok(await call('execute_in_sandbox', { sandbox_id: sb.id, command: 'echo before; kill -9 $$' }));
    assert.equal(killed.exit_code, 137);
    assert.equal(killed.ended_by, 'killed');
    assert.equal(killed.stdout, 'before\n');
    ok(await call('upload_test_file', { sandbox_id: sb.id, file_path: '/home/user/in.bin', content_base64: Buffer.from([1, 2, 3, 0, 255]).toString('base64') }));
    ok(await call('execute_in_sandbox', { sandbox_id: sb.id, command: 'cp /home/user/in.bin /home/user/report.bin' }));
    const d = ok(await call('download_artifact', { sandbox_id: sb.id, file_path: '/home/user/report.bin' }));
    assert.deepEqual([...Buffer.from(d.content_base64, 'base64')], [1, 2, 3, 0, 255]);
    const usage = ok(await call('get_sandbox_usage', { sandbox_id: sb.id }));
    assert.equal(typeof usage, 'object');
    // A sandbox made by create_sandbox carries the purpose tag: run_code reuses it.
    const rc = ok(await call('run_code', { files: { '/home/user/t.sh': 'echo passed\n' }, command: 'bash /home/user/t.sh' }));
    assert.equal(rc.reused, true);
    assert.equal(rc.devbox_id, sb.id);
    assert.equal(rc.blueprint_id, null);
    // An unknown blueprint is an error: the default-image sandbox is not used.
    const bad = await call('run_code', { command: 'true', blueprint_name: 'no-such-blueprint' });
    assert.equal(bad.isError, true);
    const be = JSON.parse(bad.content[0].text).error;
    assert.equal(be.code, 'not_found');
    assert.match(be.message, /no-such-blueprint/);
    assert.match(be.remedy, /build_blueprint/);
    assert.doesNotMatch(be.remedy, hiddenRe);
    const listed = ok(await call('list_sandbox', {}));
    assert.ok(listed.devboxes.some((x) => x.id === sb.id));
    ok(await call('shutdown_sandbox', { sandbox_id: sb.id }));
    const after = ok(await call('list_sandbox', {}));
    assert.ok(!after.devboxes.some((x) => x.id === sb.id), 'shutdown sandboxes are excluded');
  });
});
