// End-to-end: the lifecycle, exec and files plugins through the built host,
// driven by the official MCP SDK client over stdio, against a real devboxd
// on a temporary state dir. Covers every tool, progress streaming, a
// cancelled command killed on the engine, timeouts, truncation, binary
// round trips, run_code reuse and clean-up, run_python/run_c and bad input.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { sourceDir, waitFor } from './lib/host.mjs';
import { engineRequest, startEngineAndHost } from './lib/engine.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-local.yaml');
const LONG = { timeout: 300000 };

const engineGet = (sock, p) => engineRequest(sock, 'GET', p);

function errorOf(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  const text = result.content.find((c) => c.type === 'text').text;
  return JSON.parse(text).error;
}

function ok(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, 'structuredContent is set');
  return result.structuredContent;
}

describe('plugins end to end (local engine)', () => {
  let stack;
  let engine;
  let client;
  let box; // a devbox shared by the tests that only need one

  const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, { timeout: 280000, ...opts });

  before(async () => {
    stack = await startEngineAndHost({ name: 'plugins', conf, plugins: ['exec'] });
    ({ engine, client } = stack);
  });

  after(() => stack?.stop());

  it('lists the tools with schemas and honest annotations', async () => {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const n of ['create_devbox', 'list_devboxes', 'get_devbox', 'update_devbox', 'suspend_devbox',
      'resume_devbox', 'shutdown_devbox', 'keep_devbox_alive', 'get_resource_usage', 'execute_command',
      'execute_command_async', 'get_execution', 'wait_for_execution', 'get_execution_logs', 'kill_execution',
      'send_execution_stdin', 'run_shell', 'run_code', 'run_python', 'run_c', 'write_file', 'read_file',
      'upload_file', 'download_file', 'list_files', 'remove_file']) {
      assert.ok(byName[n], `${n} is listed`);
      assert.equal(byName[n].annotations?.openWorldHint, true, `${n} openWorldHint`);
    }
    assert.equal(byName.get_devbox.annotations.readOnlyHint, true);
    assert.equal(byName.shutdown_devbox.annotations.destructiveHint, true);
    assert.ok(byName.execute_command.outputSchema.properties.stdout_truncated);
  });

  it('create_devbox waits until running; get/list/update/keep-alive/usage', LONG, async () => {
    box = ok(await call('create_devbox', { name: 'e2e', metadata: { suite: 'plugins' }, files: { '/home/user/hello.txt': 'hi\n' } }));
    assert.match(box.id, /^[A-Za-z0-9_.-]+$/);
    assert.equal(box.status, 'running');
    const got = ok(await call('get_devbox', { devbox_id: box.id }));
    assert.equal(got.id, box.id);
    assert.equal(got.metadata.suite, 'plugins');
    const list = ok(await call('list_devboxes', {}));
    assert.ok(list.devboxes.some((d) => d.id === box.id));
    const upd = ok(await call('update_devbox', { devbox_id: box.id, name: 'renamed' }));
    assert.equal(upd.name, 'renamed');
    const kept = ok(await call('keep_devbox_alive', { devbox_id: box.id }));
    assert.deepEqual(kept, { devbox_id: box.id, ok: true });
    const usage = ok(await call('get_resource_usage', { devbox_id: box.id }));
    assert.ok(usage.total_elapsed_seconds > 0);
    // The local engine reports the running sandbox's current figures.
    assert.ok(usage.current.memory_bytes > 0, JSON.stringify(usage));
    assert.ok(usage.current.cpu_cores_used >= 0, JSON.stringify(usage));
    assert.ok(usage.current.processes >= 1, JSON.stringify(usage));
    const read = ok(await call('read_file', { devbox_id: box.id, file_path: '/home/user/hello.txt' }));
    assert.equal(read.content, 'hi\n');
  });

  it('execute_command: output, non-zero exit, working_dir and env', LONG, async () => {
    const r = ok(await call('execute_command', { devbox_id: box.id, command: 'echo out; echo err >&2; exit 3' }));
    assert.equal(r.exit_code, 3);
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.devbox_id, box.id);
    assert.ok(r.execution_id);
    assert.equal(typeof r.duration_ms, 'number');
    const w = ok(await call('execute_command', { devbox_id: box.id, command: 'pwd; echo "$GREETING"', working_dir: '/tmp', env: { GREETING: "it's me" } }));
    assert.equal(w.stdout, "/tmp\nit's me\n");
    const s = ok(await call('run_shell', { devbox_id: box.id, command: 'cd /tmp && export X=1', shell_name: 'sh1' }));
    assert.equal(s.exit_code, 0);
    const s2 = ok(await call('run_shell', { devbox_id: box.id, command: 'echo $PWD $X', shell_name: 'sh1' }));
    assert.equal(s2.stdout, '/tmp 1\n');
  });

  it('a 5-second command streams its output as progress', LONG, async () => {
    const progress = [];
    const r = ok(await call('execute_command',
      { devbox_id: box.id, command: 'for i in 1 2 3 4 5; do echo tick $i; sleep 1; done' },
      { onprogress: (p) => progress.push(p) }));
    assert.equal(r.stdout, 'tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n');
    assert.ok(progress.length >= 3, `expected several progress notifications, got ${JSON.stringify(progress)}`);
    // The first one names the execution, so a client that loses the call can find it.
    assert.equal(progress[0].message, `execution ${r.execution_id} started on devbox ${box.id}`);
    assert.ok(progress.slice(1).every((p) => typeof p.message === 'string' && p.message.includes('tick')), JSON.stringify(progress));
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
    assert.ok(r.duration_ms >= 4000, `duration ${r.duration_ms}`);
  });

  it('truncation keeps head and tail; get_execution_logs has the rest', LONG, async () => {
    const r = ok(await call('execute_command', { devbox_id: box.id, command: "echo START; head -c 200000 /dev/zero | tr '\\0' a; echo; echo END" }));
    assert.equal(r.stdout_truncated, true);
    assert.ok(r.stdout.startsWith('START\naaa'), r.stdout.slice(0, 20));
    assert.ok(r.stdout.endsWith('aaa\nEND\n'), r.stdout.slice(-20));
    assert.match(r.stdout, new RegExp(`…\\[truncated \\d+ bytes; full output: get_execution_logs execution_id=${r.execution_id}\\]…`));
    assert.ok(r.stdout.length < 4096 + 200);
    const logs = ok(await call('get_execution_logs', { devbox_id: box.id, execution_id: r.execution_id, stream: 'stdout', offset: 0, max_bytes: 100 }));
    assert.equal(logs.stdout, 'START\n' + 'a'.repeat(94));
    assert.equal(logs.stdout_next_offset, 100);
    assert.equal(logs.stdout_has_more, true);
    const tail = ok(await call('get_execution_logs', { devbox_id: box.id, execution_id: r.execution_id, stream: 'stdout', offset: 200006 }));
    assert.equal(tail.stdout, '\nEND\n');
    assert.equal(tail.stdout_has_more, false);
  });

  it('a cancelled sleep 600 is killed on the engine', LONG, async () => {
    const marker = `rlmcp_cancel_${randomBytes(4).toString('hex')}`;
    const ac = new AbortController();
    const started = Date.now();
    const pending = call('execute_command', { devbox_id: box.id, command: `exec -a ${marker} sleep 600` }, { signal: ac.signal });
    // Let it start on the engine before cancelling.
    const probe = `cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -c '${marker.slice(0, -1)}[${marker.slice(-1)}]' || true`;
    await waitFor(async () => {
      const v = ok(await call('execute_command', { devbox_id: box.id, command: probe }));
      return Number(v.stdout.trim()) > 0;
    }, 60000, 'the sleep to run');
    ac.abort();
    await assert.rejects(pending);
    assert.ok(Date.now() - started < 120000);
    await waitFor(async () => {
      const v = ok(await call('execute_command', { devbox_id: box.id, command: probe }));
      return Number(v.stdout.trim()) === 0;
    }, 30000, 'the cancelled sleep to be killed');
  });

  it('timeout_seconds kills the command and says so', LONG, async () => {
    const e = errorOf(await call('execute_command', { devbox_id: box.id, command: 'sleep 600', timeout_seconds: 3 }));
    assert.equal(e.code, 'timeout');
    const m = e.message.match(/execution (\S+) on devbox (\S+) was killed/);
    assert.ok(m, e.message);
    const ex = await engineGet(engine.sock, `/v1/devboxes/${m[2]}/executions/${m[1]}`);
    await waitFor(async () => (await engineGet(engine.sock, `/v1/devboxes/${m[2]}/executions/${m[1]}`)).status === 'completed', 20000, 'the killed execution to complete');
    assert.ok(ex);
  });

  it('async execution: start, stdin, wait, get, logs, kill', LONG, async () => {
    const a = ok(await call('execute_command_async', { devbox_id: box.id, command: 'read line; echo "got $line"', attach_stdin: true }));
    assert.ok(a.execution_id);
    const s = ok(await call('send_execution_stdin', { devbox_id: box.id, execution_id: a.execution_id, text: 'hello\n' }));
    assert.equal(s.success, true);
    const w = ok(await call('wait_for_execution', { devbox_id: box.id, execution_id: a.execution_id, timeout_seconds: 60 }));
    assert.equal(w.status, 'completed');
    assert.equal(w.stdout, 'got hello\n');
    const g = ok(await call('get_execution', { devbox_id: box.id, execution_id: a.execution_id }));
    assert.equal(g.exit_code, 0);
    const l = ok(await call('get_execution_logs', { devbox_id: box.id, execution_id: a.execution_id }));
    assert.equal(l.stdout, 'got hello\n');
    const b = ok(await call('execute_command_async', { devbox_id: box.id, command: 'sleep 600' }));
    const still = ok(await call('wait_for_execution', { devbox_id: box.id, execution_id: b.execution_id, timeout_seconds: 1 }));
    assert.notEqual(still.status, 'completed');
    ok(await call('kill_execution', { devbox_id: box.id, execution_id: b.execution_id }));
    const done = ok(await call('wait_for_execution', { devbox_id: box.id, execution_id: b.execution_id, timeout_seconds: 30 }));
    assert.equal(done.status, 'completed');
  });

  it("a running command's output so far: get_execution and get_execution_logs", LONG, async () => {
    const a = ok(await call('execute_command_async', { devbox_id: box.id, command: 'echo started; echo warming >&2; sleep 300' }));
    const ids = { devbox_id: box.id, execution_id: a.execution_id };
    let g;
    await waitFor(async () => {
      g = ok(await call('get_execution', ids));
      return g.stdout === 'started\n' && g.stderr === 'warming\n';
    }, 60000, 'get_execution to show the output so far');
    assert.notEqual(g.status, 'completed');
    assert.equal(g.exit_code, null);
    const l = ok(await call('get_execution_logs', ids));
    assert.notEqual(l.status, 'completed');
    assert.equal(l.stdout, 'started\n');
    assert.equal(l.stderr, 'warming\n');
    assert.equal(l.stdout_next_offset, 8);
    assert.equal(l.stdout_has_more, true);
    const next = ok(await call('get_execution_logs', { ...ids, stream: 'stdout', offset: l.stdout_next_offset }));
    assert.equal(next.stdout, '');
    assert.equal(next.stdout_next_offset, 8);
    ok(await call('kill_execution', ids));
  });

  it('files: atomic write with mode, list, resolved paths, remove, missing files', LONG, async () => {
    const w = ok(await call('write_file', { devbox_id: box.id, file_path: 'work/run.sh', contents: 'echo ran\n', mode: '0755' }));
    assert.equal(w.resolved_path, '/home/user/work/run.sh');
    const x = ok(await call('execute_command', { devbox_id: box.id, command: './work/run.sh && stat -c %a work/run.sh && ls -A work' }));
    assert.equal(x.stdout, 'ran\n755\nrun.sh\n', 'executable, and no temporary file left beside it');
    // Replacing keeps the mode when none is given.
    ok(await call('write_file', { devbox_id: box.id, file_path: '/home/user/work/run.sh', contents: 'echo again\n' }));
    const r = ok(await call('read_file', { devbox_id: box.id, file_path: 'work/run.sh' }));
    assert.equal(r.content, 'echo again\n');
    assert.equal(r.resolved_path, '/home/user/work/run.sh');
    ok(await call('execute_command', { devbox_id: box.id, command: 'mkdir -p work/sub && head -c 10 /dev/zero > work/sub/z && ln -s run.sh work/ln && printf x > "work/odd\nname"' }));
    const l = ok(await call('list_files', { devbox_id: box.id, path: 'work' }));
    assert.equal(l.path, '/home/user/work');
    assert.equal(l.truncated, false);
    assert.deepEqual(l.entries.map((e) => [e.name, e.type]),
      [['ln', 'symlink'], ['odd\nname', 'file'], ['run.sh', 'file'], ['sub', 'directory']]);
    assert.equal(l.entries.find((e) => e.name === 'run.sh').mode, '0755');
    assert.equal(l.entries.find((e) => e.name === 'run.sh').size_bytes, 11);
    const e1 = errorOf(await call('read_file', { devbox_id: box.id, file_path: '/home/user/work/nope.txt' }));
    assert.equal(e1.code, 'not_found');
    assert.match(e1.remedy, /Check the path/);
    assert.doesNotMatch(e1.remedy, /devbox|list_devboxes/);
    const e2 = errorOf(await call('list_files', { devbox_id: box.id, path: '/nowhere' }));
    assert.equal(e2.code, 'not_found');
    const e3 = errorOf(await call('remove_file', { devbox_id: box.id, file_path: 'work/sub' }));
    assert.equal(e3.code, 'conflict');
    assert.match(e3.remedy, /recursive=true/);
    // Removing the symlink leaves its target.
    ok(await call('remove_file', { devbox_id: box.id, file_path: 'work/ln' }));
    const rm = ok(await call('remove_file', { devbox_id: box.id, file_path: 'work/sub', recursive: true }));
    assert.equal(rm.resolved_path, '/home/user/work/sub');
    const after = ok(await call('list_files', { devbox_id: box.id, path: '/home/user/work' }));
    assert.deepEqual(after.entries.map((e) => e.name), ['odd\nname', 'run.sh']);
    const e4 = errorOf(await call('remove_file', { devbox_id: box.id, file_path: 'work/sub' }));
    assert.equal(e4.code, 'not_found');
    const e5 = errorOf(await call('write_file', { devbox_id: box.id, file_path: 'work/y', contents: 'x', mode: '9999' }));
    assert.equal(e5.code, 'invalid_argument');
  });

  it('files: text, binary round trip, oversize', LONG, async () => {
    ok(await call('write_file', { devbox_id: box.id, file_path: '/home/user/a.txt', contents: 'héllo\n' }));
    const t = ok(await call('read_file', { devbox_id: box.id, file_path: '/home/user/a.txt' }));
    assert.deepEqual([t.encoding, t.content, t.size_bytes], ['utf-8', 'héllo\n', 7]);
    const bin = randomBytes(3000);
    bin[0] = 0; // surely binary
    const up = ok(await call('upload_file', { devbox_id: box.id, file_path: '/home/user/b.bin', content_base64: bin.toString('base64') }));
    assert.equal(up.size_bytes, 3000);
    const down = ok(await call('download_file', { devbox_id: box.id, file_path: '/home/user/b.bin' }));
    assert.equal(down.content_base64, bin.toString('base64'));
    const rd = ok(await call('read_file', { devbox_id: box.id, file_path: '/home/user/b.bin' }));
    assert.equal(rd.encoding, 'base64');
    assert.equal(rd.content, bin.toString('base64'));
    const sum = ok(await call('execute_command', { devbox_id: box.id, command: 'sha256sum /home/user/b.bin | cut -c1-64' }));
    const { createHash } = await import('node:crypto');
    assert.equal(sum.stdout.trim(), createHash('sha256').update(bin).digest('hex'));
    let e = errorOf(await call('write_file', { devbox_id: box.id, file_path: '/home/user/big', contents: 'x'.repeat(70000) }));
    assert.equal(e.code, 'too_large');
    e = errorOf(await call('upload_file', { devbox_id: box.id, file_path: '/home/user/big', content_base64: randomBytes(70000).toString('base64') }));
    assert.equal(e.code, 'too_large');
    ok(await call('execute_command', { devbox_id: box.id, command: 'head -c 70000 /dev/zero > /home/user/big' }));
    e = errorOf(await call('download_file', { devbox_id: box.id, file_path: '/home/user/big' }));
    assert.equal(e.code, 'too_large');
    e = errorOf(await call('read_file', { devbox_id: box.id, file_path: '/home/user/does-not-exist' }));
    assert.equal(e.code, 'not_found');
  });

  it('bad input: missing, extra, wrong-typed arguments and unknown ids', LONG, async () => {
    const cases = [
      ['execute_command', { devbox_id: box.id }, /command/],
      ['execute_command', { devbox_id: box.id, command: 'true', bogus: 1 }, /bogus/],
      ['execute_command', { devbox_id: box.id, command: 42 }, /command/],
      ['execute_command', { devbox_id: box.id, command: 'true', timeout_seconds: 'soon' }, /timeout_seconds/],
      ['create_devbox', { keep_alive_time_seconds: 999999 }, /keep_alive_time_seconds/],
      ['get_devbox', { devbox_id: '../etc' }, /devbox_id/],
    ];
    for (const [name, args, re] of cases) {
      const r = await call(name, args);
      assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}`);
      assert.match(r.content.map((c) => c.text).join(' '), re);
    }
    let e = errorOf(await call('get_devbox', { devbox_id: 'dbx_doesnotexist' }));
    assert.equal(e.code, 'not_found');
    assert.ok(e.remedy);
    e = errorOf(await call('execute_command', { devbox_id: 'dbx_doesnotexist', command: 'true' }));
    assert.equal(e.code, 'not_found');
    e = errorOf(await call('get_execution', { devbox_id: box.id, execution_id: 'exe_doesnotexist' }));
    assert.equal(e.code, 'not_found');
  });

  it('a devbox that fails to boot: the MCP error carries the cause', LONG, async () => {
    const e = errorOf(await call('create_devbox', { launch_commands: ['echo about to fail', 'exit 7'] }));
    assert.equal(e.code, 'devbox_not_running');
    assert.match(e.message, /failure_reason execution_failed: .*launch command 'exit 7' failed \(exit status 7\)/);
  });

  it('a suspended devbox: devbox_not_running, then resume', LONG, async () => {
    const s = ok(await call('suspend_devbox', { devbox_id: box.id }));
    assert.equal(s.status, 'suspended');
    const e = errorOf(await call('execute_command', { devbox_id: box.id, command: 'true' }));
    assert.equal(e.code, 'devbox_not_running');
    assert.match(e.remedy, /resume_devbox/);
    const r = ok(await call('resume_devbox', { devbox_id: box.id }));
    assert.equal(r.status, 'running');
    const x = ok(await call('execute_command', { devbox_id: box.id, command: 'cat /home/user/a.txt' }));
    assert.equal(x.stdout, 'héllo\n');
  });

  it('run_code reuses a code-testing sandbox and cleans up one it created on failure', LONG, async () => {
    const first = ok(await call('run_code', { files: { '/home/user/t.py': "print('passed')\n" }, command: 'python3 /home/user/t.py' }));
    assert.equal(first.stdout, 'passed\n');
    assert.equal(first.reused, false);
    const second = ok(await call('run_code', { files: { '/home/user/t.py': "print('again')\n" }, command: 'python3 /home/user/t.py; exit 1' }));
    assert.equal(second.reused, true);
    assert.equal(second.devbox_id, first.devbox_id);
    assert.equal(second.exit_code, 1);
    assert.equal(second.stdout, 'again\n');
    // The sandbox survives a non-zero exit; shut it down so the next run
    // must create one, then make that run fail.
    ok(await call('shutdown_devbox', { devbox_id: first.devbox_id }));
    // A budget that leaves room for the create on a loaded machine; the
    // kill may be confirmed or reported as unconfirmed, both name the box.
    const e = errorOf(await call('run_code', { command: 'sleep 600', timeout_seconds: 8 }));
    assert.equal(e.code, 'timeout');
    const m = /on devbox (\S+) (?:was killed|could NOT be confirmed stopped)/.exec(e.message);
    assert.ok(m, e.message);
    const created = m[1];
    assert.notEqual(created, first.devbox_id);
    await waitFor(async () => (await engineGet(engine.sock, `/v1/devboxes/${created}`)).status === 'shutdown', 60000, 'run_code to shut down the devbox it created');
  });

  it('run_python and run_c find or create their devbox and suspend it', LONG, async () => {
    // Devboxes of the tool's language made for another image are never
    // reused: one without the image tag (made before tags) and one for
    // another blueprint.
    const md = { language: 'python', managed_by: 'runloop-mcp.exec' };
    const untagged = await engineRequest(engine.sock, 'POST', '/v1/devboxes', { metadata: md });
    const other = await engineRequest(engine.sock, 'POST', '/v1/devboxes',
      { metadata: { ...md, image: 'runloop/universal-ubuntu-24.04-x86_64' } });
    const py = ok(await call('run_python', { code: 'print(6*7)' }));
    assert.notEqual(py.devbox_id, untagged.id, 'an untagged devbox is not reused');
    assert.notEqual(py.devbox_id, other.id, 'a devbox of another image is not reused');
    const made = await engineGet(engine.sock, `/v1/devboxes/${py.devbox_id}`);
    assert.equal(made.metadata.image, 'default');
    for (const b of [untagged, other]) await engineRequest(engine.sock, 'POST', `/v1/devboxes/${b.id}/shutdown`);
    assert.equal(py.stdout, '42\n');
    assert.equal(py.language, 'python');
    assert.equal(py.file_path, '/home/user/code.py');
    await waitFor(async () => ['suspending', 'suspended'].includes((await engineGet(engine.sock, `/v1/devboxes/${py.devbox_id}`)).status), 30000, 'the python devbox to suspend');
    const py2 = ok(await call('run_python', { code: 'import sys; print(sys.version_info[0]); sys.exit(2)' }));
    assert.equal(py2.devbox_id, py.devbox_id, 'the same devbox is resumed');
    assert.equal(py2.stdout, '3\n');
    assert.equal(py2.exit_code, 2);
    const c = ok(await call('run_c', { code: '#include <stdio.h>\nint main(void){puts("hi from c");return 0;}\n', file_path: '/home/user/m.c' }));
    assert.equal(c.stdout, 'hi from c\n');
    assert.notEqual(c.devbox_id, py.devbox_id);
    assert.equal((await engineGet(engine.sock, `/v1/devboxes/${c.devbox_id}`)).metadata.image,
      'runloop/universal-ubuntu-24.04-x86_64');
    const bad = ok(await call('run_c', { code: 'int main( {' }));
    assert.notEqual(bad.exit_code, 0);
    assert.match(bad.stderr, /error/);
  });

  it('shutdown_devbox ends the shared devbox', LONG, async () => {
    const s = ok(await call('shutdown_devbox', { devbox_id: box.id }));
    assert.equal(s.id, box.id);
    const e = errorOf(await call('execute_command', { devbox_id: box.id, command: 'true' }));
    assert.ok(['devbox_not_running', 'not_found'].includes(e.code), e.code);
    const hidden = ok(await call('list_devboxes', {}));
    assert.ok(!hidden.devboxes.some((d) => d.id === box.id), 'shut down devboxes are hidden');
    const shown = ok(await call('list_devboxes', { status: 'shutdown' }));
    assert.ok(shown.devboxes.some((d) => d.id === box.id));
  });
});
