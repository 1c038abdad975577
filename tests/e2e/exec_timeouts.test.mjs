// End-to-end: a command's time limit, its output as progress, and argv
// commands, through the built host and the official MCP SDK client over
// stdio against a real devboxd.
//
// - A command gets all of timeout_seconds (or timeout_ms): one that ends
//   0.5 s before its limit completes; one that overruns is killed no earlier
//   than the limit, and the error says when, with its output so far. Every
//   tool that runs a command with a limit: execute_command, run_shell,
//   run_code, run_python.
// - Progress carries all output from the first line: the concatenated
//   progress output equals the output, and the first line arrives while the
//   command still sleeps.
// - args is argv: an argument holding shell syntax arrives literally.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { sourceDir } from './lib/host.mjs';
import { startEngineAndHost } from './lib/engine.mjs';

const conf = path.join(sourceDir, 'tests', 'e2e', 'conf', 'plugins-local.yaml');
const LONG = { timeout: 600000 };

function ok(r) {
  assert.notEqual(r.isError, true, `tool error: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

function errorOf(r) {
  assert.equal(r.isError, true, `expected a tool error, got ${JSON.stringify(r)}`);
  return JSON.parse(r.content.find((c) => c.type === 'text').text).error;
}

// The partial result block of a timed-out command.
function partialOf(r) {
  const texts = r.content.filter((c) => c.type === 'text').map((c) => JSON.parse(c.text));
  return texts.find((t) => t.result)?.result;
}

// The output carried by progress: every message but the note naming the
// execution.
function progressOutput(progress) {
  return progress.filter((p) => !/^execution \S+ started on devbox /.test(p.message ?? ''))
    .map((p) => p.message ?? '').join('');
}

describe('exec: full timeouts, output from the first byte, argv', () => {
  let stack;
  let box;
  const call = (name, args, extra = {}) =>
    stack.client.callTool({ name, arguments: args }, undefined, { timeout: 300000, ...extra });

  before(async () => {
    stack = await startEngineAndHost({ name: 'exec-timeouts', conf, plugins: ['exec'] });
    box = ok(await call('create_devbox', {})).id;
  }, LONG);

  after(() => stack?.stop());

  // Each tool with its arguments for a shell command line.
  const tools = {
    execute_command: (cmd) => ({ devbox_id: box, command: cmd }),
    run_shell: (cmd) => ({ devbox_id: box, command: cmd }),
    run_code: (cmd) => ({ command: cmd }),
    run_python: (cmd) => ({ code: `import subprocess, sys\nsys.exit(subprocess.call(${JSON.stringify(cmd)}, shell=True))\n` }),
  };

  for (const [tool, argsOf] of Object.entries(tools)) {
    for (const limit of [2, 3]) {
      it(`${tool}: with ${limit} s, a command ending 0.5 s before completes`, LONG, async () => {
        // run_code and run_python find or start their sandbox first; warm it.
        if (tool.startsWith('run_')) ok(await call(tool, argsOf('true')));
        const t0 = Date.now();
        const r = ok(await call(tool, { ...argsOf(`sleep ${limit - 0.5}; echo done`), timeout_seconds: limit }));
        assert.equal(r.stdout, 'done\n');
        assert.equal(r.exit_code, 0);
        assert.ok(Date.now() - t0 >= (limit - 0.5) * 1000);
      });

      it(`${tool}: with ${limit} s, an overrunning command is killed no earlier than ${limit} s`, LONG, async () => {
        const t0 = Date.now();
        const raw = await call(tool, { ...argsOf(`echo before; sleep ${limit + 4}; echo after`), timeout_seconds: limit });
        const took = Date.now() - t0;
        const e = errorOf(raw);
        assert.equal(e.code, 'timeout');
        assert.match(e.message, new RegExp(`did not finish within its timeout of ${limit} s`));
        const m = e.message.match(/was killed at (\d+\.\d) s \(its status reads completed\)/);
        assert.ok(m, e.message);
        assert.ok(Number(m[1]) >= limit, `killed at ${m[1]} s, before its ${limit} s: ${e.message}`);
        assert.ok(took >= limit * 1000, `answered after ${took} ms`);
        // Killed, not left to run: "after" never printed.
        assert.ok(took < (limit + 4) * 1000, `answered after ${took} ms: it was not killed`);
        const partial = partialOf(raw);
        assert.ok(partial, JSON.stringify(raw.content));
        assert.equal(partial.ended_by, 'timeout');
        assert.equal(partial.stdout, 'before\n');
      });
    }
  }

  it('timeout_ms is the same limit in milliseconds; both at once are refused naming both', LONG, async () => {
    const r = ok(await call('execute_command', { devbox_id: box, command: 'sleep 1.5; echo done', timeout_ms: 2000 }));
    assert.equal(r.stdout, 'done\n');
    const t0 = Date.now();
    const e = errorOf(await call('execute_command', { devbox_id: box, command: 'sleep 10', timeout_ms: 2500 }));
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /did not finish within its timeout of 2500 ms/);
    const m = e.message.match(/was killed at (\d+\.\d) s/);
    assert.ok(m && Number(m[1]) >= 2.5, e.message);
    assert.ok(Date.now() - t0 >= 2500);
    const both = errorOf(await call('execute_command', { devbox_id: box, command: 'true', timeout_seconds: 3, timeout_ms: 3000 }));
    assert.equal(both.code, 'invalid_argument');
    assert.match(both.message, /timeout_seconds/);
    assert.match(both.message, /timeout_ms/);
  });

  // execute_command as an MCP task (the SDK's task stream: create, poll,
  // result): a timeout given to the task bounds its command the same way.
  async function taskRun(args) {
    await stack.client.listTools(); // the SDK learns which tools take tasks
    const msgs = [];
    const stream = stack.client.experimental.tasks.callToolStream({ name: 'execute_command', arguments: args },
      undefined, { task: { ttl: 600000 }, timeout: 280000 });
    for await (const m of stream) msgs.push(m);
    assert.equal(msgs[0].type, 'taskCreated', JSON.stringify(msgs));
    const last = msgs.at(-1);
    assert.equal(last.type, 'result', JSON.stringify(msgs));
    return { task: msgs[0].task, result: last.result };
  }

  it('execute_command as a task: a command ending before its timeout completes', LONG, async () => {
    const { result } = await taskRun({ devbox_id: box, command: 'sleep 1.5; echo done', timeout_seconds: 2 });
    const r = ok(result);
    assert.equal(r.stdout, 'done\n');
    assert.equal(r.ended_by, 'exit');
  });

  it('execute_command as a task: an overrunning command is killed no earlier than its timeout', LONG, async () => {
    const t0 = Date.now();
    const { task, result } = await taskRun({ devbox_id: box, command: 'echo before; sleep 8; echo after', timeout_seconds: 2 });
    const took = Date.now() - t0;
    const r = ok(result);
    assert.equal(r.ended_by, 'timeout', JSON.stringify(r));
    assert.equal(r.status, 'completed');
    assert.equal(r.stdout, 'before\n');
    assert.ok(took >= 2000, `answered after ${took} ms`);
    assert.ok(took < 8000, `answered after ${took} ms: it was not killed`);
    // The task completed (its command's own timeout ended it: not cancelled).
    assert.equal((await stack.client.experimental.tasks.getTask(task.taskId)).status, 'completed');
    // Killed on the devbox: no "after", nothing left running.
    const ps = ok(await call('execute_command', { devbox_id: box, command: 'pgrep -f "sleep [8]" || echo none' }));
    assert.equal(ps.stdout, 'none\n');
  });

  it('progress carries the output from its first line on, all of it', LONG, async () => {
    const progress = [];
    let firstAt = null;
    const t0 = Date.now();
    const r = ok(await call('execute_command',
      { devbox_id: box, command: 'echo first; sleep 6; echo second; echo third' },
      { onprogress: (p) => {
        progress.push(p);
        if (firstAt === null && (p.message ?? '').includes('first')) firstAt = Date.now() - t0;
      } }));
    const done = Date.now() - t0;
    assert.equal(r.stdout, 'first\nsecond\nthird\n');
    assert.equal(progressOutput(progress), r.stdout, JSON.stringify(progress));
    // The first line came in a notification of its own while the command
    // slept (after the start's in-request wait, optimistic_seconds: 2 s).
    assert.ok(firstAt !== null, JSON.stringify(progress));
    assert.ok(firstAt <= done - 2500, `first line at ${firstAt} ms, result at ${done} ms`);
    assert.ok(!progress.find((p) => (p.message ?? '').includes('first')).message.includes('second'));
  });

  it('a burst of output arrives whole in progress', LONG, async () => {
    // Lines a few ms apart once the stream is open: closer than the host's
    // 20 ms progress interval, so they are coalesced.
    const progress = [];
    const r = ok(await call('execute_command',
      { devbox_id: box, command: 'sleep 2.5; for i in $(seq 1 300); do echo line $i; sleep 0.003; done; sleep 1; echo end' },
      { onprogress: (p) => progress.push(p) }));
    assert.equal(progressOutput(progress), r.stdout);
    assert.ok(r.stdout.endsWith('line 300\nend\n'));
  });

  it('args run without a shell: an argument holding shell syntax arrives literally', LONG, async () => {
    const lit = '$HOME; echo x';
    let r = ok(await call('execute_command', { devbox_id: box, args: ['printf', '[%s]\\n', lit, "it's", ''] }));
    assert.equal(r.stdout, `[${lit}]\n[it's]\n[]\n`);
    r = ok(await call('run_shell', { devbox_id: box, args: ['printf', '%s', lit] }));
    assert.equal(r.stdout, lit);
    r = ok(await call('run_code', { args: ['printf', '%s', lit] }));
    assert.equal(r.stdout, lit);
    // With working_dir, env and a named shell around it.
    r = ok(await call('execute_command', { devbox_id: box, args: ['sh', '-c', 'pwd; echo "$V"'], working_dir: '/tmp', env: { V: lit } }));
    assert.equal(r.stdout, `/tmp\n${lit}\n`);
    const a = ok(await call('execute_command_async', { devbox_id: box, args: ['printf', '%s', lit] }));
    const w = ok(await call('wait_for_execution', { devbox_id: box, execution_id: a.execution_id, timeout_seconds: 60 }));
    assert.equal(w.stdout, lit);
    // Bad forms say what to give.
    let e = errorOf(await call('execute_command', { devbox_id: box, command: 'ls', args: ['ls'] }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(e.message, /give command .* or args .*not both/);
    e = errorOf(await call('execute_command', { devbox_id: box }));
    assert.match(e.message, /give command .* or args/);
    e = errorOf(await call('execute_command', { devbox_id: box, args: ['', 'x'] }));
    assert.match(e.message, /args\[0\] must be a non-empty string/);
  });
});
